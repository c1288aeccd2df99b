"""The refinement tests' shared inputs: real demos and a tiny policy (built once per session)."""

from pathlib import Path

import pytest

from vla.config import load_config
from vla.data.store import EpisodeStore


@pytest.fixture(scope="session")
def pretrained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two expert demos and a tiny state-only policy with their statistics (fresh weights: the
    loop's mechanics are under test, not the policy's skill)."""
    from sim.evaluate import EvalConfig, run_evaluation
    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.config import PolicyConfig
    from vla.policy.model import VLAModel

    root = tmp_path_factory.mktemp("refine")
    demos = root / "demos.zarr"
    run_evaluation(EvalConfig(task="pick_place", policy="expert", episodes=2, seed_range="collect", workers=1, videos=0,
                              obs_mode="state", cameras=[], record=str(demos), source="demo",
                              out_dir=str(root / "collect")), progress=False)
    store = EpisodeStore.open(demos)
    stats = store.stats(keys=["state", "action"])
    cfg = load_config(PolicyConfig, "policy", "tiny", ["d_model=32", "n_heads=2", "trunk_layers=1", "expert_layers=1"],
                      values={"cameras": [], "state_dim": store.schema.state_dim, "action_dim": 7})
    ckpt = save_checkpoint(root / "policy", VLAModel(cfg, stats), stats)
    return ckpt, demos
