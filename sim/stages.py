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


@stage("eval")
def eval_stage(ctx: JobContext) -> dict[str, Any]:
    """The pretrained policy (torch, and its ONNX export when present) on held-out seeds."""
    from sim.evaluate import EvalConfig, run_evaluation

    cfg, task = ctx.config.eval, ctx.config.demos.task
    targets = {"torch": ctx.checkpoint}
    onnx = ctx.checkpoint / "onnx"
    if cfg.onnx and onnx.exists():
        targets["onnx"] = onnx
    out: dict[str, Any] = {"task": task}
    t0 = time.perf_counter()
    for name, path in targets.items():
        s = run_evaluation(EvalConfig(task=task, policy=str(path), episodes=cfg.episodes, seed_start=1000,
                                      workers=cfg.workers, n_action_steps=cfg.n_action_steps,
                                      image_size=ctx.config.demos.image_size, videos=2,
                                      out_dir=str(ctx.out_dir / f"eval_{name}")))
        lo, hi = s["wilson95"]
        out[f"{name} success"] = f"{s['successes']}/{s['episodes']} [{lo:.0%}, {hi:.0%}]"
    out["videos"] = str(ctx.out_dir / "eval_torch" / "videos")
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out
