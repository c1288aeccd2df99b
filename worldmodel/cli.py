"""`vla wm ...`: train, validate and use the world model (registered into the `vla` command)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

wm_app = typer.Typer(help="World model: train, evaluate, rank policies, imagine rollouts.", no_args_is_help=True)


def _clear_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A bad checkpoint is a one-line error (vla.cli prints ValueErrors), not a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from vla.policy.checkpoint import CheckpointError

        try:
            return fn(*args, **kwargs)
        except CheckpointError as e:
            raise ValueError(str(e)) from None

    return wrapper


def _job(preset: str, overrides: list[str] | None):
    from vla.config import ConfigError, load_config
    from worldmodel.config import WMJobConfig

    job = load_config(WMJobConfig, "worldmodel", preset, overrides or [])
    try:
        job.validate()
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return job


@wm_app.command("train")
@_clear_errors
def train_cmd(args: list[str] = typer.Argument(..., help="EpisodeStores (demos, rollouts, interventions...), then "
                                                       "key=value overrides, e.g. model.ensemble=3 train.steps=500"),
              out: Path = typer.Option(..., help="run folder (checkpoints/, tb/, train_summary.json)"),
              preset: str = typer.Option("default", help="preset of configs/worldmodel/ or a YAML path"),
              task: str = typer.Option("", help="keep only this task's episodes (a model covers one task)"),
              resume: bool = typer.Option(False, help="continue the run in --out exactly where it stopped")) -> None:
    """Train an action-conditioned latent world model on EpisodeStores."""
    from vla.config import ConfigError
    from worldmodel.checkpoint import latest_wm_checkpoint
    from worldmodel.train import train_world_model

    stores = [a for a in args if "=" not in a]
    job = _job(preset, [a for a in args if "=" in a])
    if not stores:
        raise ConfigError("no EpisodeStore given (vla wm train STORE... --out DIR)")
    if latest_wm_checkpoint(out) is not None and not resume:
        raise ConfigError(f"{out} already holds a world-model run: pass --resume to continue it, "
                          "or choose another --out")
    result = train_world_model(stores, out, job, task=task, resume=resume)
    typer.echo(json.dumps({"steps": result["steps"], "seconds": round(result["seconds"], 1),
                           "val": {k: round(v, 4) for k, v in result["val"].items()},
                           "checkpoint": str(latest_wm_checkpoint(out))}))


@wm_app.command("eval")
@_clear_errors
def eval_cmd(ckpt: Path = typer.Argument(..., help="world-model checkpoint or run folder"),
             stores: list[Path] = typer.Option([], "--store", help="held-out stores (default: the model's own "
                                                                  "validation episodes)"),
             out: Path = typer.Option(Path("runs/wm_eval"), help="folder for summary.json and trajectories.png"),
             truth: list[Path] = typer.Option([], "--truth", help="chunk-truth sets (vla wm chunk-truth): the "
                                                                  "model's ranking of the candidates at each state"),
             ) -> None:
    """k-step latent / probe error vs copy-last, success AUROC and ECE, action corruption, a PNG; with --truth
    the chunk-level figures (within-state Spearman, best-vs-worst AUROC, regret of the model's pick)."""
    from worldmodel.checkpoint import load_checkpoint
    from worldmodel.data import load_episodes
    from worldmodel.evaluate import evaluate

    model, job, meta, _, _ = load_checkpoint(ckpt)
    if truth:
        from worldmodel.chunk_truth import load_truth, score_truth, values
        from worldmodel.metrics import chunk_report, selection_ceilings, truth_reliability

        reports = {}
        for t in truth:
            arrays, tmeta = load_truth(t)
            reports[str(t)] = {**chunk_report(score_truth(model, arrays, tmeta), values(arrays),
                                              kinds=tmeta.get("candidate_kinds")),
                               "task": tmeta["config"]["task"], "seed_range": tmeta["config"]["seed_range"],
                               # the set's own agreement across its continuations: the ceiling of the figures above
                               "truth_reliability": truth_reliability(arrays["success"]),
                               # what choosing could gain over the noise-free chunk once continuation luck is out
                               "selection_ceiling": selection_ceilings(arrays["success"], tmeta.get("candidate_kinds"))}
        out.mkdir(parents=True, exist_ok=True)
        (out / "chunk_truth.json").write_text(json.dumps(reports, indent=1))
        typer.echo(json.dumps(reports))
        return
    if stores:
        data = load_episodes([str(s) for s in stores], job.model, task=meta.get("task", ""))
    else:
        from worldmodel.data import split_episodes, subset

        full = load_episodes(meta["stores"], job.model, task=meta.get("task", ""))
        _, val = split_episodes(len(full), job.train.val_fraction, job.train.split_seed)
        if len(val) == 0:
            raise ValueError(f"{ckpt}: trained without validation episodes; pass --store with held-out episodes")
        data = subset(full, val)
    res = evaluate(model, data, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(res, indent=1))
    typer.echo(json.dumps({"episode_auroc": res["episode_success"]["auroc"],
                           "chunk_auroc": res["chunk_success"]["auroc"],
                           "ece": res["chunk_success"]["ece"], "k_step": res["k_step"],
                           "corruption": res["corruption"], "summary": str(out / "summary.json")}))


@wm_app.command("chunk-truth")
@_clear_errors
def chunk_truth_cmd(policy: Path = typer.Argument(..., help="policy checkpoint folder"),
                    overrides: list[str] = typer.Argument(None, help="key=value of worldmodel.chunk_truth.TruthConfig, "
                                                                     "e.g. seed_range=report episodes=50 noisy=7"),
                    ) -> None:
    """Chunk-level ground truth from the simulator: at states of the policy's own episodes, K candidate chunks
    (its noise-free one, samples, perturbed copies), each executed and continued by the policy."""
    from vla.config import load_config
    from worldmodel.chunk_truth import TruthConfig, build

    cfg = load_config(TruthConfig, "chunk_truth", None, [*(overrides or []), f"policy={policy}"])
    out = build(cfg)
    meta = json.loads((out / "meta.json").read_text())
    typer.echo(json.dumps({k: meta[k] for k in ("states", "success_by_kind", "truth_reliability",
                                                "selection_ceiling")}, indent=1))
    typer.echo(f"chunk-truth set: {out}")


@wm_app.command("rank")
@_clear_errors
def rank_cmd(ckpts: list[Path] = typer.Argument(None, help="policy checkpoints to rank"),
             wm: Path = typer.Option(..., help="world-model checkpoint or run folder"),
             starts: Path = typer.Option(..., help="store whose first frames are the real start states"),
             candidates: Path = typer.Option(None, help="JSON name -> {ckpt, real_success, heldout} instead of CKPTS"),
             real: str = typer.Option("", help="comma-separated real success of CKPTS, in order (optional)"),
             n_starts: int = typer.Option(50, help="start states (the store's first episodes)"),
             samples: int = typer.Option(4, help="sampled chunk sequences per start state"),
             chunks: int = typer.Option(25, help="imagined chunks per episode"),
             val_store: Path = typer.Option(None, help="held-out demos for the BC-loss baseline"),
             out: Path = typer.Option(Path("runs/wm_rank/rank.json"), help="result JSON")) -> None:
    """Score checkpoints by imagined success from the same real start states; compare with real success."""
    import numpy as np

    from worldmodel.checkpoint import load_checkpoint
    from worldmodel.imagined_env import start_states
    from worldmodel.rank import rank

    model, _, meta, _, _ = load_checkpoint(wm)
    if candidates is not None:
        cands = json.loads(candidates.read_text())
    elif ckpts:
        reals = [float(x) for x in real.split(",")] if real else [None] * len(ckpts)
        if len(reals) != len(ckpts):
            raise ValueError(f"--real has {len(reals)} values for {len(ckpts)} checkpoints")
        cands = {str(c): {"ckpt": str(c), "real_success": r} for c, r in zip(ckpts, reals, strict=True)}
    else:
        raise ValueError("give policy checkpoints or --candidates FILE")
    st = start_states(starts, model, task=meta.get("task", ""))
    st = st.take(np.arange(min(n_starts, len(st))))
    res = rank(model, cands, st, samples=samples, n_chunks=chunks, val_store=val_store, fps=meta.get("fps", 20.0))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=lambda x: np.asarray(x).tolist()))
    for name, r in res["candidates"].items():
        typer.echo(f"{name}: imagined {r['imagined_success']:.2f}  real {r['real_success']}")
    if "metrics" in res:
        for proxy, m in res["metrics"].items():
            typer.echo(f"{proxy}: " + ", ".join(f"{k} {v['value']:.2f} [{v['lo']:.2f}, {v['hi']:.2f}]"
                                                for k, v in m.items()))
    typer.echo(f"wrote {out}")


@wm_app.command("imagine")
@_clear_errors
def imagine_cmd(policy: Path = typer.Argument(..., help="policy checkpoint (state mode)"),
                wm: Path = typer.Option(..., help="world-model checkpoint or run folder"),
                starts: Path = typer.Option(..., help="store with the real start states"),
                record: Path = typer.Option(..., help="state-only store to append the imagined episodes to"),
                keyframe: float = typer.Option(0.0, help="start at this fraction of each episode (0 = first frame)"),
                episodes: int = typer.Option(10, help="start states (the store's first episodes)"),
                chunks: int = typer.Option(25, help="imagined chunks per episode")) -> None:
    """Imagined rollouts of a policy from real states, written to a store with source=imagined."""
    import numpy as np

    from worldmodel.checkpoint import load_checkpoint
    from worldmodel.imagined_env import ImaginedEnv, rollout, start_states, write_imagined
    from worldmodel.rank import load_candidate

    model, job, meta, _, _ = load_checkpoint(wm)
    st = start_states(starts, model, episodes=np.arange(episodes), keyframe=keyframe, task=meta.get("task", ""))
    res = rollout(ImaginedEnv(model, max_chunks=chunks, fps=meta.get("fps", 20.0)), load_candidate(policy), st, chunks)
    n = write_imagined(record, st, res, meta.get("task", "unknown"), job.model.chunk, meta.get("fps", 20.0))
    typer.echo(json.dumps({"written": len(n), "imagined_success": float(res["success"].mean()), "store": str(record)}))


def register(app: typer.Typer) -> None:
    app.add_typer(wm_app, name="wm")
