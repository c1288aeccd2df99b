"""Main-job stages contributed by sim/ (registered in vla.registry.STAGES)."""

from __future__ import annotations

import time
from typing import Any

from vla.job import JobContext, stage


@stage("sim_demos")
def sim_demos_stage(ctx: JobContext) -> dict[str, Any]:
    """Scripted-expert demos of `demos.task` from parallel workers into the job's EpisodeStore."""
    from sim.evaluate import EvalConfig, run_evaluation
    from vla.data.store import EpisodeStore

    cfg = ctx.config.demos
    t0 = time.perf_counter()
    summary = run_evaluation(EvalConfig(task=cfg.task, policy="expert", episodes=cfg.episodes, seed_start=0,
                                        workers=cfg.workers, image_size=cfg.image_size, videos=1, source="demo",
                                        record=str(ctx.store_path), out_dir=str(ctx.out_dir / "collect")))
    store = EpisodeStore.open(ctx.store_path)
    return {"task": cfg.task, "store": str(ctx.store_path), "episodes": store.n_episodes, "steps": store.n_steps,
            "expert success": f"{summary['success_rate']:.0%}",
            "MB on disk": round(store.nbytes_on_disk() / 1e6, 1), "seconds": round(time.perf_counter() - t0, 1)}
