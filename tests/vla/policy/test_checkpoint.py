import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.vla.policy.conftest import small_config
from tests.vla.policy.synthetic_data import LineDataset
from vla.policy.checkpoint import CheckpointError, load_model, save_checkpoint
from vla.policy.language import InstructionEncoder
from vla.policy.model import VLAModel
from vla.policy.policy import load_torch_policy


@pytest.fixture()
def saved(tmp_path: Path) -> tuple[Path, VLAModel, LineDataset]:
    data = LineDataset(n=8, cameras=("agentview",), instructions=("follow the line", "go back"))
    model = VLAModel(small_config(("agentview",)), data.stats())
    # Change the weights away from the initialisation so a load that silently re-initialises fails.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    model.language.encode(["follow the line", "go back"])
    ema = {k: v + 1.0 if v.is_floating_point() and "normalizer" not in k else v
           for k, v in model.state_dict().items()}
    path = save_checkpoint(tmp_path / "ckpt", model, data.stats(), ema_state=ema)
    return path, model, data


def test_round_trip_same_outputs_for_same_seed(saved: tuple[Path, VLAModel, LineDataset]) -> None:
    path, model, data = saved
    assert {p.name for p in path.iterdir()} == {"config.json", "model.safetensors", "ema.safetensors",
                                                "stats.json", "instructions.safetensors"}
    from vla.policy.policy import TorchPolicy

    obs = [data.observation(i) for i in range(4)]
    expected = TorchPolicy(model, seed=3).sample_chunk(obs, prefix=np.zeros((4, 2, 2), np.float32))
    loaded = load_torch_policy(path, use_ema=False, seed=3)
    np.testing.assert_array_equal(loaded.sample_chunk(obs, prefix=np.zeros((4, 2, 2), np.float32)), expected)
    # EMA weights are preferred by default and differ here.
    ema_policy = load_torch_policy(path, seed=3)
    assert not np.allclose(ema_policy.sample_chunk(obs), expected)
    _, stats = load_model(path)
    np.testing.assert_allclose(stats["action"].q99, data.stats()["action"].q99)


def test_known_instructions_need_no_language_model(saved: tuple[Path, VLAModel, LineDataset]) -> None:
    path, _, _ = saved
    encoder = InstructionEncoder(model_dir="/nonexistent")  # fails if the model were loaded
    model, _ = load_model(path, language=encoder)
    # The table holds what the process's shared encoder had cached when the model was saved: the
    # training instructions, plus any other test's in the same worker.
    assert {"follow the line", "go back"} <= set(encoder.cached())
    assert model.language_embedding(["go back"]).shape == (1, 384)


def test_missing_and_corrupt_files_are_named(saved: tuple[Path, VLAModel, LineDataset], tmp_path: Path) -> None:
    path, _, _ = saved
    with pytest.raises(CheckpointError, match="checkpoint folder not found"):
        load_torch_policy(tmp_path / "nope")
    (path / "ema.safetensors").unlink()
    (path / "model.safetensors").write_bytes(b"\x00" * 100)
    with pytest.raises(CheckpointError, match=r"corrupt.*model.safetensors"):
        load_torch_policy(path)
    (path / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"checkpoint file missing.*model.safetensors"):
        load_torch_policy(path)
    (path / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match=r"invalid JSON.*config.json"):
        load_torch_policy(path)
    (path / "config.json").unlink()
    with pytest.raises(CheckpointError, match=r"checkpoint file missing.*config.json"):
        load_torch_policy(path)


def test_mismatched_shapes_are_named(saved: tuple[Path, VLAModel, LineDataset]) -> None:
    path, _, _ = saved
    meta = json.loads((path / "config.json").read_text())
    meta.pop("sha256")  # a hand-edited config without its self-digest: checked against the weights
    meta["policy"]["action_dim"] = 5
    (path / "config.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"tensor '.*' has shape .* needs"):
        load_torch_policy(path, use_ema=False)
    meta["policy"]["action_dim"] = 2
    meta["policy"]["trunk_layers"] = 3
    (path / "config.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"tensor 'trunk.1.*missing"):
        load_torch_policy(path, use_ema=False)
    meta["policy"]["trunk_layers"] = "many"
    (path / "config.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="invalid policy config"):
        load_torch_policy(path)


def test_unknown_camera_after_loading(saved: tuple[Path, VLAModel, LineDataset]) -> None:
    path, _, data = saved
    policy = load_torch_policy(path)
    obs = data.observation(0)
    with pytest.raises(KeyError, match="camera 'left' is not known to this policy"):
        policy.sample_chunk([{**obs, "images": {"left": obs["images"]["agentview"]}}])


def test_partial_weights_initialise_only_their_tensors_and_name_what_does_not_fit(tmp_path: Path) -> None:
    """`train.init_weights`: a file of some tensors (a camera encoder pretrained elsewhere) overwrites
    those and no others; a tensor the model lacks or of another shape is named, and nothing loads."""
    from safetensors.torch import save_file

    from vla.policy.checkpoint import load_partial_weights

    torch.manual_seed(0)
    source = VLAModel(small_config(("agentview",)))
    torch.manual_seed(1)
    target = VLAModel(small_config(("agentview",)))
    before = {k: v.clone() for k, v in target.state_dict().items()}
    vision = {k: v for k, v in source.state_dict().items() if k.startswith("vision.")}
    save_file(vision, str(tmp_path / "v.safetensors"))
    assert load_partial_weights(target, tmp_path / "v.safetensors") == len(vision)
    for k, v in target.state_dict().items():
        assert torch.equal(v, vision[k] if k in vision else before[k]), k
    save_file({"vision.wrist.proj.weight": torch.zeros(2, 2)}, str(tmp_path / "bad.safetensors"))
    with pytest.raises(CheckpointError, match=r"tensor 'vision\.wrist\.proj\.weight' is not in the model"):
        load_partial_weights(target, tmp_path / "bad.safetensors")
    save_file({"vision.agentview.proj.weight": torch.zeros(2, 2)}, str(tmp_path / "shape.safetensors"))
    with pytest.raises(CheckpointError, match=r"'vision.agentview.proj.weight' has shape \(2, 2\), the model needs"):
        load_partial_weights(target, tmp_path / "shape.safetensors")
    with pytest.raises(FileNotFoundError, match="init_weights file not found"):
        load_partial_weights(target, tmp_path / "none.safetensors")
    for k, v in target.state_dict().items():  # the failed loads changed nothing
        assert torch.equal(v, vision[k] if k in vision else before[k]), k
