"""ONNX export parity: same noise -> same chunks as torch within 1e-4 (fp32) on ONNX Runtime CPU."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.vla.policy.conftest import small_config
from tests.vla.policy.synthetic_data import LineDataset
from vla.interfaces import Policy
from vla.policy.checkpoint import CheckpointError, save_checkpoint
from vla.policy.encoders import FiLM
from vla.policy.model import VLAModel
from vla.policy.policy import TorchPolicy, load_torch_policy

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")
from vla.policy.export import OnnxPolicy, export_onnx

CAMS = ("agentview", "wrist")
TOL = 1e-4


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, LineDataset]:
    data = LineDataset(n=8, cameras=CAMS, n_obs_steps=2, instructions=("follow the line", "other"), state_dim=9,
                       quat_at=3)
    # language_norm, language_film, the quaternions' rotation features and the spatial-softmax keypoints
    # travel into the ONNX graph (checked against torch below)
    model = VLAModel(small_config(CAMS, n_obs_steps=2, language_norm=True, language_film=True, state_dim=9,
                                  state_quats=(3,), vision_keypoints=4), data.stats())
    model.set_language_stats(list(data.instructions))
    for m in model.modules():  # as if trained: zero-initialised FiLM would check nothing
        if isinstance(m, FiLM):
            torch.nn.init.normal_(m.proj.weight, std=0.1)
    root = tmp_path_factory.mktemp("export")
    ckpt = save_checkpoint(root / "ckpt", model, data.stats())
    return ckpt, export_onnx(ckpt, root / "onnx"), data


@pytest.mark.slow
def test_onnx_matches_torch(exported: tuple[Path, Path, LineDataset]) -> None:
    ckpt, onnx_dir, data = exported
    torch_policy, onnx_policy = load_torch_policy(ckpt), OnnxPolicy(onnx_dir)
    assert isinstance(onnx_policy, Policy)
    rng = np.random.default_rng(0)
    for step in range(2):  # the second call has a full observation history
        obs = [data.observation(i + step) for i in range(3)]
        noise = rng.standard_normal((3, 16, 2)).astype(np.float32)
        a = torch_policy.sample_chunk(obs, noise=noise)
        b = onnx_policy.sample_chunk(obs, noise=noise)
        assert np.abs(a - b).max() < TOL
    prefix = rng.standard_normal((3, 4, 2)).astype(np.float32)
    target = np.full((3, 16, 2), 0.3, np.float32)
    a = torch_policy.sample_chunk(obs, prefix=prefix, guidance=lambda x, t: target - x, noise=noise)
    b = onnx_policy.sample_chunk(obs, prefix=prefix, guidance=lambda x, t: target - x, noise=noise)
    np.testing.assert_array_equal(b[:, :4], prefix)
    assert np.abs(a - b).max() < TOL
    # Batch size is dynamic, and seeded sampling works without given noise.
    assert onnx_policy.sample_chunk([data.observation(0)] * 5).shape == (5, 16, 2)
    # Without given noise both draw the same stream from the same seed: the same episodes.
    for p in (torch_policy, onnx_policy):
        p.reset(seed=11)
    for step in range(2):
        obs = [data.observation(i + step) for i in range(3)]
        assert np.abs(torch_policy.sample_chunk(obs) - onnx_policy.sample_chunk(obs)).max() < TOL


def test_onnx_noise_scale_matches_torch(exported: tuple[Path, Path, LineDataset]) -> None:
    ckpt, onnx_dir, data = exported
    obs = [data.observation(i) for i in range(3)]
    for scale in (0.0, 0.5):
        torch_policy = load_torch_policy(ckpt, seed=3, noise_scale=scale)
        onnx_policy = OnnxPolicy(onnx_dir, seed=3, noise_scale=scale)
        assert torch_policy.cfg.noise_scale == onnx_policy.cfg.noise_scale == scale
        assert np.abs(torch_policy.sample_chunk(obs) - onnx_policy.sample_chunk(obs)).max() < TOL
    assert OnnxPolicy(onnx_dir).cfg.noise_scale == 1.0  # the export's own (the checkpoint's default)


@pytest.mark.slow
def test_onnx_bad_input(exported: tuple[Path, Path, LineDataset], tmp_path: Path) -> None:
    _, onnx_dir, data = exported
    policy = OnnxPolicy(onnx_dir)
    obs = data.observation(0)
    with pytest.raises(KeyError, match="camera 'left' is not known"):
        policy.sample_chunk([{**obs, "images": {**obs["images"], "left": obs["images"]["wrist"]}}])
    with pytest.raises(ValueError, match="instruction is empty"):
        policy.sample_chunk([{**obs, "instruction": " "}])
    big = np.zeros((32, 32, 3), np.uint8)
    with pytest.raises(ValueError, match="this ONNX export takes 16x16"):
        policy.sample_chunk([{**obs, "images": {"agentview": big, "wrist": big}}])
    with pytest.raises(CheckpointError, match="ONNX export file missing"):
        OnnxPolicy(tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in onnx_dir.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    (broken / "step.onnx").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match=r"corrupt or unreadable.*step\.onnx"):
        OnnxPolicy(broken)


@pytest.mark.slow
def test_fp16_export_runs(tmp_path: Path) -> None:
    data = LineDataset(n=4, state_dim=9, quat_at=3)
    model = VLAModel(small_config(state_dim=9, state_quats=(3,)), data.stats())
    out = export_onnx(model, tmp_path / "fp16", fp16=True)
    noise = np.random.default_rng(0).standard_normal((2, 16, 2)).astype(np.float32)
    obs = [data.observation(i) for i in range(2)]
    obs[1] = {**obs[1], "state": np.zeros(9, np.float32)}  # a zero quaternion stays finite in float16
    a = TorchPolicy(model).sample_chunk(obs, noise=noise)
    b = OnnxPolicy(out).sample_chunk(obs, noise=noise)
    assert b.dtype == np.float32 and np.abs(a - b).max() < 0.05


OFFHOST = Path(__file__).parents[3] / "tools" / "offhost-traffic"
# ONNX Runtime's telemetry made its first DNS query about 9 s after the session started (measured)
LOOPBACK_WAIT_S = 15


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="tools/offhost-traffic needs strace")
def test_onnx_policy_stays_on_loopback(exported: tuple[Path, Path, LineDataset]) -> None:
    """A fresh process runs the ONNX policy with an instruction its export does not know (so the
    MiniLM encoder runs beside ONNX Runtime), then idles past the telemetry timer: nothing may leave
    127.0.0.1. Without `vla`'s ORT_DISABLE_TELEMETRY this sent DNS queries for a Microsoft host."""
    _, onnx, _ = exported
    script = (
        "import sys, time\n"
        "from tests.vla.policy.synthetic_data import LineDataset\n"
        "from vla.policy.export import OnnxPolicy\n"
        f"data = LineDataset(n=2, cameras={CAMS!r}, n_obs_steps=2, state_dim=9, quat_at=3)\n"
        "policy = OnnxPolicy(sys.argv[1])\n"
        "chunk = policy.sample_chunk([{**data.observation(0), 'instruction': 'trace a brand new curve'}])\n"
        "assert chunk.shape[0] == 1, chunk.shape\n"
        f"time.sleep({LOOPBACK_WAIT_S})\n")
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}  # as a user's shell has it
    res = subprocess.run([str(OFFHOST), sys.executable, "-c", script, str(onnx)], cwd=OFFHOST.parents[1],
                         env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]


def test_onnx_runtime_imported_before_vla_warns(exported: tuple[Path, Path, LineDataset]) -> None:
    """The telemetry switch works only before ONNX Runtime loads; a process that loaded it first is told."""
    _, onnx, _ = exported
    script = ("import sys, onnxruntime, warnings\n"
              "warnings.simplefilter('error')\n"
              "from vla.policy.export import OnnxPolicy\n"
              "OnnxPolicy(sys.argv[1])\n")
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    res = subprocess.run([sys.executable, "-c", script, str(onnx)], cwd=OFFHOST.parents[1], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "ORT_DISABLE_TELEMETRY=1" in res.stderr, res.stderr[-2000:]
    res = subprocess.run([sys.executable, "-c", script, str(onnx)], cwd=OFFHOST.parents[1],
                         env={**env, "ORT_DISABLE_TELEMETRY": "1"}, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _runtime(**changes: object) -> object:
    def edit(path: Path) -> None:
        import json

        meta = json.loads(path.read_text())
        for key, value in changes.items():
            if key.startswith("policy."):
                meta["policy"][key.split(".", 1)[1]] = value
            else:
                meta[key] = value
        path.write_text(json.dumps(meta))

    return edit


def _nan_weight(path: Path) -> None:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    init = next(i for i in model.graph.initializer if numpy_helper.to_array(i).size > 1)
    values = numpy_helper.to_array(init).copy()
    values.flat[0] = np.nan
    init.CopyFrom(numpy_helper.from_array(values, init.name))
    onnx.save(model, str(path))


DAMAGED_EXPORTS = [
    ("encoder.onnx", _truncate, r"ONNX file is corrupt or unreadable: .*encoder\.onnx"),
    ("step.onnx", lambda p: p.write_bytes(b"garbage"), r"ONNX file is corrupt or unreadable: .*step\.onnx"),
    ("step.onnx", Path.unlink, r"ONNX export file missing: .*step\.onnx"),
    ("runtime.json", Path.unlink, r"ONNX export file missing: .*runtime\.json"),
    ("runtime.json", lambda p: p.write_text("{not json"), r"invalid JSON\): .*runtime\.json"),
    ("runtime.json", _runtime(action_scale=[1.0, float("nan")]), r"runtime\.json: 'action_scale' has non-finite"),
    ("runtime.json", _runtime(action_center=[0.0]), r"runtime\.json: 'action_center' must be 2 numbers"),
    ("runtime.json", _runtime(**{"policy.noise_scale": float("nan")}),
     r"runtime\.json: invalid policy config .*noise_scale must be finite"),
    ("runtime.json", _runtime(**{"policy.chunk_size": 10**9}),
     r"runtime\.json: invalid policy config .*chunk_size must be an integer in \[1, 1024\], got 1000000000"),
    ("runtime.json", _runtime(image_inputs=["image_0"]), r"runtime\.json: 'image_inputs' must name one graph input"),
    ("runtime.json", _runtime(version=99), r"runtime\.json: format version 99"),
    ("runtime.json", _runtime(**{"policy.state_dim": 7, "policy.state_quats": []}),
     r"encoder\.onnx: input 'state' has last dimension 9, runtime\.json's policy config needs 7"),
    ("instructions.safetensors", _truncate, r"instructions\.safetensors"),
    ("step.onnx", _nan_weight, r"step\.onnx: weight '.*' has non-finite values"),
]


@pytest.mark.parametrize(("name", "damage", "match"), DAMAGED_EXPORTS)
def test_a_damaged_export_is_named_before_it_is_used(exported: tuple[Path, Path, LineDataset], tmp_path: Path,
                                                    name: str, damage, match: str) -> None:
    """validate_export (what `vla eval` runs in its parent) names the damaged file and what is wrong with
    it; an intact export passes and gives its policy config."""
    from vla.policy.export import validate_export

    _, onnx_dir, _ = exported
    assert validate_export(onnx_dir).state_dim == 9
    broken = Path(shutil.copytree(onnx_dir, tmp_path / "broken"))
    damage(broken / name)
    with pytest.raises(CheckpointError, match=match):
        validate_export(broken)


@pytest.mark.parametrize(("name", "damage", "match"), [DAMAGED_EXPORTS[0], DAMAGED_EXPORTS[5]])
def test_vla_eval_of_a_damaged_export_is_one_line_from_the_parent(exported: tuple[Path, Path, LineDataset],
                                                                  tmp_path: Path, name: str, damage,
                                                                  match: str) -> None:
    """Issue: `vla eval` on a truncated .onnx or a NaN action_scale printed a worker's 100-line traceback
    (the parent checked torch checkpoints only); now it is one line naming the file, and no worker runs."""
    _, onnx_dir, _ = exported
    broken = Path(shutil.copytree(onnx_dir, tmp_path / "broken"))
    damage(broken / name)
    res = subprocess.run([sys.executable, "-m", "vla.cli", "eval", str(broken), "task=pick_place", "episodes=1",
                          "workers=1", "videos=0", f"out_dir={tmp_path / 'eval'}"],
                         capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[3])
    errors = [line for line in res.stderr.splitlines() if not line.startswith("[robosuite")]  # import chatter
    assert res.returncode == 2 and len(errors) == 1 and errors[0].startswith("error: "), res.stderr[-3000:]
    import re

    assert re.search(match, errors[0]) and "worker" not in res.stderr, errors[0]


def test_vla_export_prints_no_third_party_warnings(exported: tuple[Path, Path, LineDataset], tmp_path: Path) -> None:
    """torch's exporter warns about torchvision ops, a deprecated pytree class and merged axes: none of it is
    for the user; `vla --verbose` lets it through."""
    ckpt = exported[0]
    env = {k: v for k, v in os.environ.items() if k != "VLA_VERBOSE"}
    res = subprocess.run([sys.executable, "-m", "vla.cli", "export", str(ckpt), "--out", str(tmp_path / "o")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr
    out = res.stdout + res.stderr
    assert out.strip().splitlines() == [f"wrote {tmp_path / 'o'}"], out
