"""Damaged checkpoint files are errors naming the file; no fallback between weight files (issue 18.6)."""

import json
from pathlib import Path

import pytest
import torch

from tests.vla.policy.conftest import small_config
from tests.vla.policy.synthetic_data import LineDataset
from vla.policy.checkpoint import CheckpointError, load_model, save_checkpoint, validate_checkpoint
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
