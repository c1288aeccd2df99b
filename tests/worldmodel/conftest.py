# MuJoCo picks its GL backend when first imported: select the headless one before any test module
# imports mujoco (the fixtures record real episodes in the simulator).
from pathlib import Path

import pytest

import sim.render  # noqa: F401
from tests.worldmodel.helpers import record, tiny_job


@pytest.fixture(scope="session")
def pick_place_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real store: 4 expert successes and 3 failed attempts (unskilled, noisy, short horizon)."""
    root = tmp_path_factory.mktemp("wm_store")
    path = root / "episodes.zarr"
    record(path, 4, 0, horizon=80)
    record(path, 3, 100, horizon=30, noise=0.5, skill=0.2)
    return path


@pytest.fixture(scope="session")
def trained_wm(pick_place_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from worldmodel.train import train_world_model

    out = tmp_path_factory.mktemp("wm_run")
    train_world_model([str(pick_place_store)], out, tiny_job("train.steps=6", "train.val_fraction=0.3"))
    return out
