"""Real stores and tiny models for the world-model tests (native pick_place in the simulator)."""

from __future__ import annotations

from pathlib import Path

from vla.config import load_config
from worldmodel.config import WMJobConfig


def record(path: Path, episodes: int, seed_start: int, horizon: int, cameras: list[str] | None = None,
           noise: float = 0.0, skill: float = 1.0, image_size: int = 32) -> Path:
    from sim.evaluate import EvalConfig, run_evaluation

    run_evaluation(EvalConfig(task="pick_place", policy="expert", episodes=episodes, seed_range="collect",
                              seed_offset=seed_start, workers=1,
                              videos=0, obs_mode="state", cameras=cameras if cameras is not None else [],
                              image_size=image_size, horizon=horizon, noise=noise, skill=skill, record=str(path),
                              source="demo", out_dir=str(path.parent / f"{path.stem}_eval")), progress=False)
    return path


def tiny_job(*overrides: str) -> WMJobConfig:
    return load_config(WMJobConfig, "worldmodel", "debug", ["model.probe_dims=[9,10,11]", *overrides])
