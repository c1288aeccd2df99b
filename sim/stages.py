"""Main-job stages contributed by sim/ (registered in vla.registry.STAGES)."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vla.evaluation import ChunkSettings, Execution, settings
from vla.job import JobContext, stage
from vla.metrics import paired_difference

if TYPE_CHECKING:
    from vla.refine.loop import RefineRun


@stage("sim_demos")
def sim_demos_stage(ctx: JobContext) -> dict[str, Any]:
    """Scripted-expert demos of `demos.task` from parallel workers into the job's EpisodeStore."""
    from sim.evaluate import EvalConfig, run_evaluation
    from vla.data.store import EpisodeStore

    cfg = ctx.config.demos
    t0 = time.perf_counter()
    summary = run_evaluation(EvalConfig(task=cfg.task, policy="expert", episodes=cfg.episodes, seed_range="collect",
                                        workers=cfg.workers, image_size=cfg.image_size, videos=1, source="demo",
                                        noise=cfg.noise, label=cfg.label, expert_rot_speed=cfg.rot_speed,
                                        expert_gain=cfg.gain,
                                        expert_drop=cfg.drop, expert_turn_late=cfg.turn_late,
                                        expert_drift=cfg.drift, expert_rot_noise=cfg.rot_noise,
                                        obs_mode=cfg.obs_mode, perturb=cfg.perturb, randomize=cfg.randomize,
                                        record=str(ctx.store_path),
                                        out_dir=str(ctx.out_dir / "collect")))
    store = EpisodeStore.open(ctx.store_path)
    _attach_videos(ctx, "sim_demos", summary, "scripted expert")
    cams = ", ".join(store.schema.cameras) or "no cameras"
    seen = f"{cams}; a {store.schema.state_dim}-d state" + (" with the object poses" if cfg.obs_mode == "state" else "")
    return {"task": cfg.task, "observation": seen, "store": str(ctx.store_path),
            "episodes": store.n_episodes, "steps": store.n_steps,
            "expert noise": f"{cfg.noise} (label: {cfg.label})" if cfg.noise else 0,
            **({"expert drops": f"{cfg.drop:.0%} of the demos may drop the object once"} if cfg.drop else {}),
            **({"expert drifts": f"{cfg.drift:.0%} of the demos pushed sideways near the grasp"} if cfg.drift else {}),
            **({"expert rotation noise": f"{cfg.rot_noise} of full scale (label: clean)"} if cfg.rot_noise else {}),
            **({"expert turns": "over the object"} if cfg.turn_late else {}),
            **({"recorded through": cfg.perturb} if cfg.perturb != "none" else {}),
            **({"randomized": f"{cfg.randomize}: " + ", ".join(summary["randomize"]["randomized"])
                + (f" (left out: {', '.join(summary['randomize']['left_out'])})"
                   if summary["randomize"]["left_out"] else "")} if cfg.randomize != "none" else {}),
            "expert success": f"{summary['success_rate']:.0%}",
            "MB on disk": round(store.nbytes_on_disk() / 1e6, 1), "seconds": round(time.perf_counter() - t0, 1)}


@stage("vision_pretrain")
def vision_pretrain_stage(ctx: JobContext) -> dict[str, Any]:
    """The pretrain stage's camera encoders, first trained on the task's privileged object pose and goal
    (sim/vision_pretrain.py); `pretrain` then starts from them and co-trains on the same labelled frames
    (train.init_weights, train.perception_frames)."""
    from sim.vision_pretrain import run

    cfg, pre = ctx.config.vision, ctx.config.pretrain
    out = ctx.out_dir / "vision" / "vision.safetensors"
    cameras = None
    if ctx.store_path.exists():  # the encoders the policy will have: the store's cameras
        from vla.data.store import EpisodeStore

        cameras = list(EpisodeStore.open(ctx.store_path).schema.cameras)
    policy_overrides = [o.split(".", 1)[1] for o in pre.overrides if o.startswith("policy.")]
    report = run(ctx.config.demos.task, cfg.episodes, out, pre.policy, policy_overrides, cameras=cameras,
                 image_size=ctx.config.demos.image_size, every=cfg.every, steps=cfg.steps)
    r2 = report["val_r2"]
    return {"weights": str(out), "frames file": report["frames_file"], "frames": report["frames"], "steps": cfg.steps,
            "held-out R^2": ", ".join(f"{k} {v:.2f}" for k, v in r2.items() if k.startswith(("object_", "hand_"))),
            "seconds": round(report["collect_s"] + report["train_s"], 1)}


@stage("eval")
def eval_stage(ctx: JobContext) -> dict[str, Any]:
    """The pretrained policy on held-out seeds (`eval.seed_range` of vla.protocol: report unless the job is
    tuning) in `eval.runtime` (torch, or its ONNX export), and in the other runtime on the first
    `eval.onnx_episodes` of them when `eval.onnx` (the export's check: the same episodes, seed by seed)."""
    from sim.evaluate import EvalConfig, run_evaluation

    cfg, task = ctx.config.eval, ctx.config.demos.task
    other = "torch" if cfg.runtime == "onnx" else "onnx"
    runtimes = [cfg.runtime]
    if cfg.onnx and (cfg.runtime == "onnx" or (ctx.checkpoint / "onnx").exists()):
        runtimes.append(other)
    from vla.policy.checkpoint import load_config

    scale = load_config(ctx.checkpoint).noise_scale
    # how the chunks are sampled is part of the figure: 0 is the prior's mean, 1 the learnt distribution
    every = f", a chunk every {cfg.temporal_ensemble_every} steps" if cfg.temporal_ensemble_every > 1 else ""
    out: dict[str, Any] = {"task": task, "seeds": f"{cfg.seed_range} range", "noise_scale": scale,
                           "execution": f"temporal ensemble, rate {cfg.temporal_ensemble}{every}"
                           if cfg.temporal_ensemble is not None else f"{cfg.n_action_steps} steps of each chunk"}
    t0 = time.perf_counter()
    for runtime in runtimes:
        n = cfg.onnx_episodes if runtime != cfg.runtime and cfg.onnx_episodes > 0 else cfg.episodes
        s = run_evaluation(EvalConfig(**{**job_execution(ctx, ctx.checkpoint), "runtime": runtime}, episodes=n,
                                      seed_range=cfg.seed_range, videos=2,
                                      out_dir=str(ctx.out_dir / f"eval_{runtime}")))
        lo, hi = s["wilson95"]
        out[f"{runtime} success"] = f"{s['successes']}/{s['episodes']} [{lo:.0%}, {hi:.0%}]"
        if runtime == cfg.runtime:
            ctx.attach("eval", "plot", main_eval(ctx) / "summary.png", "pretrained policy, held-out seeds")
            _attach_videos(ctx, "eval", s, "pretrained")
    out["videos"] = str(main_eval(ctx) / "videos")
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def main_eval(ctx: JobContext) -> Path:
    """The eval stage's evaluation of the pretrained policy on all its seeds (in `eval.runtime`)."""
    return ctx.out_dir / f"eval_{ctx.config.eval.runtime}"


@stage("robustness")
def robustness_stage(ctx: JobContext) -> dict[str, Any]:
    """The job's policy under a real arm's sensor and actuator errors (sim/robustness.py): the eval stage's
    seeds and execution, `robustness.perturb` with every severity times each of `robustness.factors`; the
    curve goes into the report."""
    from sim.evaluate import EvalConfig
    from sim.robustness import clean_outcomes, run_sweep

    cfg, ev = ctx.config.robustness, ctx.config.eval
    who = "refined" if cfg.policy == "refined" else "pretrained"
    ckpt, done = job_policy(ctx, who)
    if ckpt is None:
        raise ValueError(f"robustness.policy=refined: the refine stage made no checkpoint "
                         f"({ctx.results.get('refine', {}).get('policy', 'no refine result')}); "
                         "set robustness.policy=pretrained")
    t0 = time.perf_counter()
    out_dir = ctx.out_dir / "robustness"
    config = EvalConfig(**job_execution(ctx, ckpt), episodes=cfg.episodes, seed_range=ev.seed_range, videos=2,
                        out_dir=str(out_dir), perturb=cfg.perturb, perturb_sweep=list(cfg.factors))
    # the x0 point is the refine (or eval) stage's evaluation of the same policy on the first of the same seeds
    source = f"the {'refine' if who == 'refined' else 'eval'} stage's evaluation"
    result = run_sweep(config, progress=True, clean=None if done is None else clean_outcomes(done, config))
    ctx.attach("robustness", "plot", out_dir / "robustness.png",
               f"{who} policy: success against the severity of '{cfg.perturb}' (x1 is the preset)")
    row: dict[str, Any] = {"policy": who, "perturb": cfg.perturb, "seeds": f"{ev.seed_range} range, {cfg.episodes}"}
    for p in result["points"]:
        lo, hi = p["wilson95"]
        row[f"x{p['factor']:g}"] = (f"{p['successes']}/{p['episodes']} [{lo:.0%}, {hi:.0%}]"
                                    + (f" ({source})" if "reused" in p else ""))
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def job_execution(ctx: JobContext, ckpt: Path) -> dict[str, Any]:
    """EvalConfig fields that run `ckpt` as the job runs its policies in simulation: the task, the eval
    stage's workers, chunk execution and runtime, the demos' image size and observation mode."""
    ev, demos = ctx.config.eval, ctx.config.demos
    return dict(task=demos.task, policy=str(ckpt), workers=ev.workers, n_action_steps=ev.n_action_steps,
                temporal_ensemble=ev.temporal_ensemble, temporal_ensemble_every=ev.temporal_ensemble_every,
                runtime=ev.runtime, image_size=demos.image_size, obs_mode=demos.obs_mode)


def job_policy(ctx: JobContext, which: str) -> tuple[Path | None, Path | None]:
    """(checkpoint, its evaluation summary on the eval seeds or None) of the job's `which` policy: refined (the
    refine stage's last checkpoint, evaluated last in its loop; checkpoint None when the stage made none) or
    pretrained (the eval stage's)."""
    if which == "refined":
        refined = ctx.results.get("refine", {})
        if "checkpoint" not in refined:
            return None, None
        evals = sorted((ctx.out_dir / "refine").glob("iter_*/eval/summary.json"))
        return Path(refined["checkpoint"]), evals[-1] if evals else None
    done = main_eval(ctx) / "summary.json"
    return ctx.checkpoint, done if done.exists() else None


def _attach_videos(ctx: JobContext, stage_name: str, summary: dict[str, Any], who: str) -> None:
    """An evaluation's videos in the report, each captioned with its seed and outcome."""
    for e in summary["episodes_detail"]:
        if e["video"]:
            ctx.attach(stage_name, "video", e["video"],
                       f"{who}, seed {e['seed']}: {'success' if e['success'] else 'failure'} in {e['length']} steps")


@stage("refine")
def refine_stage(ctx: JobContext) -> dict[str, Any]:
    """A short refinement of the pretrained policy (`refine.method`, the scripted intervener standing
    in for the person) on the demo task; reports success before and after."""
    cfg = ctx.config.refine
    return _refine_round(ctx, "refine", cfg.method, cfg.iterations, cfg.episodes_per_iteration, cfg.eval_episodes,
                         cfg.train_steps, cfg.workers, cfg.overrides, eval_every=cfg.eval_every)[0]


@stage("imagine")
def imagine_stage(ctx: JobContext) -> dict[str, Any]:
    """One round of imagination refinement of the pretrained policy (worldmodel/imagination_refine.py, found
    through the refinement registry): a few real rollouts without a person, a small world model
    trained on the job's demos and those rollouts, K chunks per real start state scored through the
    model, the better ones weighted into fine-tuning; real success before and after on the eval
    stage's seeds."""
    cfg = ctx.config.imagine
    args = {"wm_steps": cfg.wm_steps, "refit_steps": 0, "starts": cfg.starts, "samples": cfg.samples,
            "keyframes": cfg.keyframes, "chunks": 1, "train_chunks": 1, "wm_overrides": cfg.wm_overrides}
    out, run = _refine_round(ctx, "imagine", "imagination", 1, cfg.episodes_per_iteration, cfg.eval_episodes,
                             cfg.train_steps, cfg.workers, cfg.overrides, method_args=args)
    info = run.added(0).info
    wm = json.loads(next((ctx.out_dir / "imagine" / "wm" / "checkpoints").glob("step_*/config.json")).read_text())
    return {**out, "world model": f"{info['wm']['steps']} steps on {wm['meta']['episodes']} episodes, "
                                  f"{info['wm']['seconds']:.0f} s",
            "imagined": f"{info['starts']} real starts x {cfg.samples} chunks, {info['supervised_rollouts']} "
                        "supervised", "imagined_success": round(info["imagined_success"], 3),
            # why those: a chunk is fine-tuned on when its imagined score beats the policy's own chunk from the same
            # start (baseline=deployed, the default) or its start's other chunks (group); an imagined success the
            # ensemble disagrees on counts as a failure first
            "supervised": f"{info['supervised_rollouts']} of {info['rollouts']} chunks: those scored above "
                          + ("the chunk the policy deploys from their start" if info.get("baseline") == "deployed"
                             else "the other chunks of their start")
                          + f"; {info['guard_rejected']} imagined successes the world model's "
                          "ensemble disagreed on counted as failures"
                          + (f"; {info['starts_under_min_std']} of {info['starts']} starts gave none: their chunks' "
                             "scores spread less than min_std (median spread "
                             f"{info['score_std_within_start_median']:.4f})"
                             if "starts_under_min_std" in info else ""),
            "seconds": out.pop("seconds")}


def _refine_round(ctx: JobContext, stage_name: str, method: str, iterations: int, episodes: int, eval_episodes: int,
                  train_steps: int, workers: int, overrides: list[str], method_args: dict[str, Any] | None = None,
                  eval_every: int = 1) -> tuple[dict[str, Any], RefineRun]:
    """`method` in the refinement loop from the pretrained checkpoint, in `out_dir/<stage_name>`,
    evaluated on the eval stage's seeds (whose result is version 0 when its settings match); success
    before and after, and the gain seed by seed."""
    from sim.evaluate import seed_outcomes
    from vla.config import load_config
    from vla.refine.config import RefineConfig
    from vla.refine.loop import RefineRun

    task = ctx.config.demos.task
    values = {"method": method, "task": task, "ckpt": str(ctx.checkpoint), "demos": str(ctx.store_path),
              "eval_seed_range": ctx.config.eval.seed_range,  # the eval stage's seeds
              "out_dir": str(ctx.out_dir / stage_name), "iterations": iterations, "eval_every": eval_every,
              "episodes_per_iteration": episodes, "eval_episodes": eval_episodes,
              "workers": workers, "image_size": ctx.config.demos.image_size,
              "obs_mode": ctx.config.demos.obs_mode,
              "n_action_steps": ctx.config.eval.n_action_steps,
              "temporal_ensemble": ctx.config.eval.temporal_ensemble,
              "temporal_ensemble_every": ctx.config.eval.temporal_ensemble_every,
              "runtime": ctx.config.eval.runtime, "videos": 2,
              "train": {"steps": train_steps, "ckpt_every": train_steps}}
    if method_args is not None:
        values["method_args"] = method_args
    if ctx.config.demos.gain is not None:  # the scripted person corrects as the demos' expert drove
        values["intervener_args"] = {"expert_gain": ctx.config.demos.gain}
    t0 = time.perf_counter()
    run = RefineRun(load_config(RefineConfig, "refine", "default", overrides, values=values))
    # The eval stage already measured this checkpoint on the same seeds: that is version 0.
    evaluated = main_eval(ctx) / "summary.json"
    if "eval" in ctx.results and evaluated.exists():
        done = json.loads(evaluated.read_text())
        # how the chunks run, the task and the observations: what makes the two evaluations the same
        keys = (*settings(run.cfg, ChunkSettings), "task", "obs_mode")
        default = {f.name: f.default for f in fields(Execution)}  # a summary written before a key existed
        same = done["seeds"] == run.cfg.eval_seeds() and all(
            done["config"].get(k, default[k]) == getattr(run.cfg, k) for k in keys)
        target = run.out / "iter_00" / "eval" / "summary.json"
        if same and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(evaluated, target)
    rows = run.run()
    before, after = rows[0], rows[-1]
    first, last = run.evaluate(0), run.evaluate(after["version"])
    gain = paired_difference(seed_outcomes(first), seed_outcomes(last))
    final = run.version_policy(after["version"])
    ctx.attach(stage_name, "plot", run.out / "curves.png", f"{method}: success and data per iteration")
    _attach_videos(ctx, stage_name, last, f"after {method}")

    def rate(r: dict[str, Any]) -> str:
        lo, hi = r["wilson95"]
        return f"{r['successes']}/{r['episodes']} [{lo:.0%}, {hi:.0%}]"

    return {"method": method, "task": task, "seeds": f"{run.cfg.eval_seed_range} range",
            "success before": rate(before), "success after": rate(after),
            # after - before, seed by seed on the same seeds, with its 95% t interval over the seeds
            "gain": f"{gain['mean']:+.2f} [{gain['lo']:+.2f}, {gain['hi']:+.2f}] "
                    f"({gain['better']} seeds better, {gain['worse']} worse, of {gain['seeds']})",
            "gain_mean": round(gain["mean"], 4), "gain_lo": round(gain["lo"], 4), "gain_hi": round(gain["hi"], 4),
            "env episodes": after["env_episodes"], "intervention steps": after["intervention_steps"],
            # a checkpoint, or what a method's versions are (dsrl: the base steered by an actor, a policy spec
            # that `vla eval` runs but ROS deployment cannot)
            "policy": final, **({"checkpoint": final} if Path(final).is_dir() else {}),
            "records": str(run.out / "records.json"), "seconds": round(time.perf_counter() - t0, 1)}, run
