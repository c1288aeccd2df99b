"""Main-job stage `perception`: the pose estimator the deploy stage's pose node runs (deploy.poses=estimator),
so the deployed state policy reads no simulator state (vla.perception; docs/deployment.md)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from vla.job import JobContext, stage
from vla.protocol import seed_range

# apart from the demos' (offset 0) and the vision stage's (500000) collect seeds
COLLECT_OFFSET = 600_000
# the deployed policy's rollouts for the estimator (perception.policy_rollouts), apart from the expert's
POLICY_OFFSET = 650_000


@stage("perception")
def perception_stage(ctx: JobContext) -> dict[str, Any]:
    """Expert episodes with visual domain randomisation (obs_mode=state: the frames and their poses), with
    `perception.policy_rollouts` of the deployed policy's beside them, the estimator trained on them, and its
    error on fresh episodes of the eval range."""
    from sim.evaluate import EvalConfig, run_evaluation
    from sim.stages import job_execution
    from vla.config import load_config
    from vla.perception.config import PerceptionConfig
    from vla.perception.train import evaluate, train

    cfg, demos = ctx.config.perception, ctx.config.demos
    if demos.obs_mode != "state":
        raise ValueError("perception: the job's policy reads no object poses (demos.obs_mode=image)")
    t0 = time.perf_counter()
    out = ctx.out_dir / "perception"
    stores = {"train": out / "train.zarr", "eval": out / "eval.zarr"}
    for store in stores.values():  # a re-run (overwrite=false) collects them again: appending would double them
        shutil.rmtree(store, ignore_errors=True)
    common = dict(task=demos.task, policy="expert", workers=demos.workers, image_size=demos.image_size, videos=0,
                  source="demo", obs_mode="state")
    run_evaluation(EvalConfig(**common, episodes=cfg.episodes, seed_range="collect", seed_offset=COLLECT_OFFSET,
                              skill=cfg.skill, randomize=cfg.randomize, record=str(stores["train"]),
                              out_dir=str(out / "collect_train")), progress=False)
    rollouts: dict[str, Any] = {}
    if cfg.policy_rollouts:
        ckpt, who, _ = deployed_policy(ctx)
        s = run_evaluation(EvalConfig(**job_execution(ctx, ckpt), episodes=cfg.policy_rollouts, seed_range="collect",
                                      seed_offset=POLICY_OFFSET, randomize=cfg.randomize, videos=0,
                                      record=str(stores["train"]), out_dir=str(out / "collect_policy")),
                           progress=False)
        rollouts = {"policy rollouts": f"{cfg.policy_rollouts} of the {who} policy ({s['success_rate']:.2f} success)"}
    run_evaluation(EvalConfig(**common, episodes=cfg.eval_episodes, seed_range=ctx.config.eval.seed_range,
                              seed_offset=COLLECT_OFFSET, record=str(stores["eval"]),
                              out_dir=str(out / "collect_eval")), progress=False)
    pcfg = load_config(PerceptionConfig, "perception", "default",
                       [f"out_dir={out / 'estimator'}", f"steps={cfg.steps}", *cfg.overrides])
    summary = train(stores["train"], pcfg)
    err = evaluate(out / "estimator", stores["eval"], progress=False)
    first = seed_range(ctx.config.eval.seed_range).start + COLLECT_OFFSET
    row = {"estimator": str(out / "estimator"), "frames": summary["frames"], "steps": cfg.steps,
           "randomized": cfg.randomize, **rollouts,
           **{f"{o} error mm (median, p90)": f"{err[o]['position_mm_median']:.1f}, {err[o]['position_mm_p90']:.1f}"
              for o in err if isinstance(err[o], dict)},
           "measured on": f"{err['frames']} frames of {cfg.eval_episodes} expert episodes, "
                          f"{ctx.config.eval.seed_range} seeds from {first}"}
    if cfg.policy_episodes:
        row.update(policy_on_estimates(ctx, out / "estimator", out / "policy_estimated"))
    return {**row, "seconds": round(time.perf_counter() - t0, 1)}


def deployed_policy(ctx: JobContext) -> tuple[Path, str, Path | None]:
    """(checkpoint, which, its ground-truth evaluation summary on the eval seeds or None) of the policy the
    deploy stage runs."""
    from sim.stages import job_policy

    who = "refined" if ctx.config.deploy.policy == "refined" else "pretrained"
    ckpt, truth = job_policy(ctx, who)
    if ckpt is None:
        raise ValueError("perception: deploy.policy=refined but the refine stage made no checkpoint; "
                         "set perception.policy_episodes=0 and policy_rollouts=0, or run refine first")
    return ckpt, who, truth


def policy_on_estimates(ctx: JobContext, estimator: Path, out: Path) -> dict[str, Any]:
    """The deployed policy with the estimator's poses on the first `perception.policy_episodes` eval seeds,
    against the simulator's poses on the same seeds (the eval or refine stage's run when it has them)."""
    from sim.evaluate import EvalConfig, run_evaluation, seed_outcomes
    from sim.stages import job_execution
    from vla.metrics import paired_difference

    cfg, ev = ctx.config.perception, ctx.config.eval
    ckpt, who, truth = deployed_policy(ctx)
    common = dict(job_execution(ctx, ckpt), episodes=cfg.policy_episodes, seed_range=ev.seed_range)
    est = run_evaluation(EvalConfig(**common, videos=2, out_dir=str(out), poses=str(estimator),
                                    poses_smoothing=cfg.smoothing), progress=False)
    truth_outcomes = seed_outcomes(json.loads(truth.read_text())) if truth is not None else {}
    est_outcomes = seed_outcomes(est)
    if not set(est_outcomes) <= set(truth_outcomes):  # not measured on these seeds yet
        again = EvalConfig(**common, videos=0, out_dir=str(out.parent / "policy_truth"))
        truth_outcomes = seed_outcomes(run_evaluation(again, progress=False))
    gt = {s: truth_outcomes[s] for s in est_outcomes}
    d = paired_difference(gt, est_outcomes)
    n, s_est, s_gt = len(est_outcomes), sum(est_outcomes.values()), sum(gt.values())
    ctx.attach("perception", "plot", out / "summary.png", f"{who} policy on the estimator's poses")
    # were the failures the badly estimated episodes? (each episode's median error, sim.estimated_poses)
    errors = {f"{o} error mm in the policy's episodes (successes, failures)":
              f"{e['success_median']}, {e['failure_median']}"
              for o, e in est.get("estimated_poses", {}).get("error_mm", {}).items()}
    return {**errors, "policy": who, "success, estimated poses": f"{s_est}/{n}",
            "success, simulator's poses": f"{s_gt}/{n}",
            "estimated minus simulator's": f"{d['mean']:+.2f} [{d['lo']:+.2f}, {d['hi']:+.2f}] "
                                           f"({d['better']} seeds better, {d['worse']} worse)",
            "estimated_success": round(s_est / n, 4), "ground_truth_success": round(s_gt / n, 4),
            "ratio": round(s_est / s_gt, 3) if s_gt else None}
