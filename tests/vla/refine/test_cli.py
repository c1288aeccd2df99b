"""`vla refine` checks its demos against the checkpoint's policy before it evaluates, collects or
copies anything: a mismatch is one line naming the store, the key and both sizes, and the run
folder is left as it was."""

import subprocess
import sys
from pathlib import Path

import pytest

from vla.config import load_config
from vla.data.store import EpisodeStore
from vla.data.synthetic import default_schema, synthetic_episode
from vla.refine.config import RefineConfig
from vla.refine.loop import RefineRun


def make_store(path: Path, state_dim: int = 9, action_dim: int = 7, cameras: tuple[str, ...] = ()) -> Path:
    schema = default_schema(image_size=16, cameras=cameras, state_dim=state_dim, action_dim=action_dim)
    with EpisodeStore.create(path, schema) as store:
        for seed in range(2):
            store.append_episode(synthetic_episode(schema, seed, length=12))
    return path


def make_policy(folder: Path, demos: Path) -> Path:
    """A tiny policy (fresh weights) built on `demos`' keys and statistics, as training would build it."""
    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.config import PolicyConfig
    from vla.policy.model import VLAModel

    store = EpisodeStore.open(demos)
    cameras = list(store.schema.cameras)
    stats = store.stats(keys=["state", "action", *(f"images/{c}" for c in cameras)])
    cfg = load_config(PolicyConfig, "policy", "tiny", ["d_model=32", "n_heads=2", "trunk_layers=1", "expert_layers=1"],
                      values={"cameras": cameras, "state_dim": store.schema.state_dim,
                              "action_dim": store.schema.action_dim})
    return save_checkpoint(folder, VLAModel(cfg, stats), stats)


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("refine_inputs")
    return {"state": make_policy(root / "state_policy", make_store(root / "demos.zarr")),
            "camera": make_policy(root / "camera_policy", make_store(root / "cam_demos.zarr", cameras=("agentview",)))}


def refine_cli(method: str, ckpt: Path, demos: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vla.cli", "refine", method, "--ckpt", str(ckpt), "--demos",
                           str(demos), "--out", str(out), "--preset", "debug"],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("policy", "dims", "needles"), [
    ("state", {"action_dim": 4}, ["key 'action' has size 4", "action_dim 7"]),
    ("state", {"state_dim": 5}, ["key 'state' has size 5", "state_dim 9"]),
    ("camera", {}, ["no key 'images/agentview'", "cameras ['agentview']"]),
])
def test_demos_that_do_not_fit_the_policy_fail_before_any_work(tmp_path: Path, policies: dict[str, Path],
                                                                policy: str, dims: dict[str, int],
                                                                needles: list[str]) -> None:
    demos = make_store(tmp_path / "other_demos.zarr", **dims)
    out = tmp_path / "run"
    out.mkdir()  # a run folder that exists already must stay as it was
    res = refine_cli("hg-dagger", policies[policy], demos, out)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert f"demos {demos}:" in res.stderr and all(n in res.stderr for n in needles), res.stderr
    assert str(policies[policy]) in res.stderr, res.stderr
    # nothing evaluated (no iter_00/eval), nothing copied (no store.zarr), nothing written at all
    assert list(out.iterdir()) == []


def test_the_loop_entry_point_checks_too(tmp_path: Path, policies: dict[str, Path]) -> None:
    demos = make_store(tmp_path / "other_demos.zarr", action_dim=4)
    out = tmp_path / "run"
    cfg = load_config(RefineConfig, "refine", "debug", [],
                      values={"method": "sft", "ckpt": str(policies["state"]), "demos": str(demos),
                              "out_dir": str(out)})
    with pytest.raises(ValueError, match=r"demos .*other_demos\.zarr: key 'action' has size 4, .* action_dim 7"):
        RefineRun(cfg, progress=False).run()
    assert not out.exists()
