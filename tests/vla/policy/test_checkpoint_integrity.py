"""Damaged checkpoint files are errors naming the file; no fallback between weight files."""

import json
from pathlib import Path

import pytest
import torch

from tests.vla.policy.conftest import reseal, small_config
from tests.vla.policy.synthetic_data import LineDataset
from vla.policy.checkpoint import CheckpointError, load_model, save_checkpoint, stats_from_json, validate_checkpoint
from vla.policy.model import VLAModel


@pytest.fixture()
def ckpt(tmp_path: Path) -> Path:
    data = LineDataset(n=8, cameras=("agentview",), instructions=("follow the line",))
    model = VLAModel(small_config(("agentview",)), data.stats())
    model.language.encode(["follow the line"])
    ema = {k: v.clone() for k, v in model.state_dict().items()}
    return save_checkpoint(tmp_path / "ckpt", model, data.stats(), ema_state=ema)


def truncate(path: Path, keep: float = 0.5) -> None:
    path.write_bytes(path.read_bytes()[: int(path.stat().st_size * keep)])


def flip(path: Path, at: float = 0.9) -> None:
    data = bytearray(path.read_bytes())
    data[int(len(data) * at)] ^= 0x10
    path.write_bytes(bytes(data))


def test_manifest_records_every_file(ckpt: Path) -> None:
    meta = json.loads((ckpt / "config.json").read_text())
    assert set(meta["files"]) == {"model.safetensors", "ema.safetensors", "stats.json", "instructions.safetensors"}
    assert validate_checkpoint(ckpt).action_dim == 2


@pytest.mark.parametrize("use_ema", [True, False])
@pytest.mark.parametrize(("name", "damage"), [
    ("model.safetensors", truncate), ("ema.safetensors", truncate), ("model.safetensors", flip),
    ("ema.safetensors", flip), ("stats.json", flip), ("instructions.safetensors", flip),
    ("ema.safetensors", Path.unlink), ("stats.json", Path.unlink), ("instructions.safetensors", Path.unlink),
])
def test_damage_to_any_file_is_named_whichever_weights_load(ckpt: Path, name: str, damage, use_ema: bool) -> None:
    # Before: a truncated model.safetensors loaded the EMA weights without a word, a flipped byte in
    # tensor data loaded wrong weights, a deleted stats.json loaded an unnormalised policy.
    damage(ckpt / name)
    with pytest.raises(CheckpointError, match=name.replace(".", r"\.")):
        load_model(ckpt, use_ema=use_ema)


def test_altered_config_is_named(ckpt: Path) -> None:
    meta = json.loads((ckpt / "config.json").read_text())
    meta["policy"]["num_inference_steps" if "num_inference_steps" in meta["policy"] else "dropout"] = 7
    (ckpt / "config.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"config\.json does not match its own sha256"):
        load_model(ckpt)


def test_old_checkpoint_without_manifest_still_checks_the_unused_weights(ckpt: Path) -> None:
    meta = json.loads((ckpt / "config.json").read_text())
    del meta["files"], meta["sha256"]
    (ckpt / "config.json").write_text(json.dumps(meta))
    model, _ = load_model(ckpt)  # loads as before
    assert isinstance(model, torch.nn.Module)
    truncate(ckpt / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"corrupt or not safetensors: .*model\.safetensors"):
        load_model(ckpt, use_ema=True)


@pytest.mark.parametrize(("use_ema", "file", "tensor"), [
    (False, "model.safetensors", "normalizer.action_scale"), (True, "ema.safetensors", "lang_proj.weight"),
])
def test_non_finite_weights_are_named_at_load(tmp_path: Path, use_ema: bool, file: str, tensor: str) -> None:
    """An intact file (its sha256 matches) holding a NaN weight or a NaN action scale loaded, and every
    chunk in a worker was NaN; now the load names the file and the tensor."""
    data = LineDataset(n=8, cameras=("agentview",))
    model = VLAModel(small_config(("agentview",)), data.stats())
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state[tensor].view(-1)[1] = float("nan")
    if use_ema:
        ckpt = save_checkpoint(tmp_path / "ckpt", model, data.stats(), ema_state=state)
    else:
        model.load_state_dict(state)
        ckpt = save_checkpoint(tmp_path / "ckpt", model, data.stats())
    with pytest.raises(CheckpointError, match=rf"{file.replace('.', '[.]')}: tensor '{tensor.replace('.', '[.]')}' "
                                              r"has non-finite values"):
        validate_checkpoint(ckpt, use_ema=use_ema)


def test_non_finite_statistics_are_refused_at_save_and_named_at_load(ckpt: Path, tmp_path: Path) -> None:
    """A NaN in stats.json (with a manifest that matches it) loaded, and a refinement copied it into every
    checkpoint it wrote; now loading names the file and the statistic, and saving refuses to write it."""
    stats = json.loads((ckpt / "stats.json").read_text())
    stats["action"]["q99"][1] = float("nan")
    (ckpt / "stats.json").write_text(json.dumps(stats))
    reseal(ckpt)
    with pytest.raises(CheckpointError, match=r"stats\.json: statistic 'action\.q99' has non-finite values"):
        load_model(ckpt)
    model = VLAModel(small_config(("agentview",)), LineDataset(n=8, cameras=("agentview",)).stats())
    with pytest.raises(ValueError, match=r"refusing to write checkpoint .*new: statistic 'action\.q99' has non-finite"):
        save_checkpoint(tmp_path / "new", model, stats_from_json(stats))
    assert not (tmp_path / "new").exists() and not list(tmp_path.glob(".new*"))
