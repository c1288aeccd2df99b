"""RefineConfig.freeze_vision on a camera policy: the fine-tune leaves the camera encoders as they
were and trains the rest (a real round on native pick_place with its cameras)."""

from pathlib import Path

import pytest
import torch

from vla.config import load_config
from vla.policy.checkpoint import load_model
from vla.refine.config import RefineConfig
from vla.refine.loop import RefineRun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def camera_policy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from sim.evaluate import EvalConfig, run_evaluation
    from vla.data.store import EpisodeStore
    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.config import PolicyConfig
    from vla.policy.model import VLAModel

    root = tmp_path_factory.mktemp("freeze")
    demos = root / "demos.zarr"
    run_evaluation(EvalConfig(task="pick_place", policy="expert", episodes=2, seed_range="collect", workers=1, videos=0,
                              image_size=32, record=str(demos), source="demo", out_dir=str(root / "collect")),
                   progress=False)
    store = EpisodeStore.open(demos)
    cams = list(store.schema.cameras)
    stats = store.stats(keys=["state", "action", *[f"images/{c}" for c in cams]])
    cfg = load_config(PolicyConfig, "policy", "tiny", ["d_model=32", "n_heads=2", "trunk_layers=1", "expert_layers=1",
                                                       "vision_channels=[8,8]", "image_size=[32,32]"],
                      values={"cameras": cams, "state_dim": store.schema.state_dim, "action_dim": 7})
    torch.manual_seed(0)
    return save_checkpoint(root / "policy", VLAModel(cfg, stats), stats), demos


def _refined(tmp_path: Path, camera_policy: tuple[Path, Path], *overrides: str) -> dict[str, torch.Tensor]:
    ckpt, demos = camera_policy
    cfg = load_config(RefineConfig, "refine", "debug", ["obs_mode=image", "cameras=null", "image_size=32",
                                                        "train.lr=1e-2", *overrides],
                      values={"method": "hg_dagger", "ckpt": str(ckpt), "demos": str(demos), "horizon": 30,
                              "out_dir": str(tmp_path / "_".join(overrides or ("plain",))),
                              "episodes_per_iteration": 1, "eval_episodes": 1})
    run = RefineRun(cfg, progress=False)
    run.run()
    return load_model(run.policy_path(1))[0].state_dict()


def test_the_camera_encoders_stay_as_pretrained(tmp_path: Path, camera_policy: tuple[Path, Path]) -> None:
    before = load_model(camera_policy[0])[0].state_dict()
    frozen = _refined(tmp_path, camera_policy, "freeze_vision=true")
    trained = _refined(tmp_path, camera_policy)
    vision = [k for k in before if k.startswith("vision.") and before[k].is_floating_point()]
    rest = [k for k in before if k.startswith(("trunk.", "expert.", "action_out."))]
    assert vision and rest
    assert all(torch.equal(frozen[k], before[k]) for k in vision)
    assert not all(torch.equal(frozen[k], before[k]) for k in rest)  # the rest did train
    assert not all(torch.equal(trained[k], before[k]) for k in vision)  # and without the flag, so do the encoders
