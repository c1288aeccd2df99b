"""Main-job stage `perception`: the pose estimator the deploy stage's pose node runs (deploy.poses=estimator),
so the deployed state policy reads no simulator state (vla.perception; docs/deployment.md)."""

from __future__ import annotations

import time
from typing import Any

from vla.job import JobContext, stage
from vla.protocol import seed_range

# apart from the demos' (offset 0) and the vision stage's (500000) collect seeds
COLLECT_OFFSET = 600_000


@stage("perception")
def perception_stage(ctx: JobContext) -> dict[str, Any]:
    """Expert episodes with visual domain randomisation (obs_mode=state: the frames and their poses), the
    estimator trained on them, and its error on fresh episodes of the eval range."""
    from sim.evaluate import EvalConfig, run_evaluation
    from vla.config import load_config
    from vla.perception.config import PerceptionConfig
    from vla.perception.train import evaluate, train

    cfg, demos = ctx.config.perception, ctx.config.demos
    if demos.obs_mode != "state":
        raise ValueError("perception: the job's policy reads no object poses (demos.obs_mode=image)")
    t0 = time.perf_counter()
    out = ctx.out_dir / "perception"
    stores = {"train": out / "train.zarr", "eval": out / "eval.zarr"}
    common = dict(task=demos.task, policy="expert", workers=demos.workers, image_size=demos.image_size, videos=0,
                  source="demo", obs_mode="state")
    run_evaluation(EvalConfig(**common, episodes=cfg.episodes, seed_range="collect", seed_offset=COLLECT_OFFSET,
                              skill=cfg.skill, randomize=cfg.randomize, record=str(stores["train"]),
                              out_dir=str(out / "collect_train")), progress=False)
    run_evaluation(EvalConfig(**common, episodes=cfg.eval_episodes, seed_range=ctx.config.eval.seed_range,
                              seed_offset=COLLECT_OFFSET, record=str(stores["eval"]),
                              out_dir=str(out / "collect_eval")), progress=False)
    pcfg = load_config(PerceptionConfig, "perception", "default",
                       [f"out_dir={out / 'estimator'}", f"steps={cfg.steps}", *cfg.overrides])
    summary = train(stores["train"], pcfg)
    err = evaluate(out / "estimator", stores["eval"], progress=False)
    first = seed_range(ctx.config.eval.seed_range).start + COLLECT_OFFSET
    return {"estimator": str(out / "estimator"), "frames": summary["frames"], "steps": cfg.steps,
            "randomized": cfg.randomize,
            **{f"{o} error mm (median, p90)": f"{err[o]['position_mm_median']:.1f}, {err[o]['position_mm_p90']:.1f}"
               for o in err if isinstance(err[o], dict)},
            "measured on": f"{err['frames']} frames of {cfg.eval_episodes} expert episodes, "
                           f"{ctx.config.eval.seed_range} seeds from {first}",
            "seconds": round(time.perf_counter() - t0, 1)}
