"""Issue 62 item 2: does a policy that reads only the cameras (and the arm) learn from a person's corrections?

The policy here is the main job's state policy behind the job's pose estimator: every step the estimator reads
the two camera frames and the arm's state and gives the policy the object poses, in the rollouts the person
corrects, in the fine-tuning data (the stored states are the estimates the policy saw) and in every evaluation
(`poses=ESTIMATOR` of the refinement loop). No simulator state reaches it, as in the job's deployment. The
end-to-end image policy (`demos.obs_mode=image`) is not this one: it still does not learn from corrections
(benchmarks/results/main_job_notes.md).

For each training seed (a pretrained checkpoint of the job's recipe): the job's refine stage (`<job>/refine/
config.json`: HG-DAgger, rounds, rollouts with the scripted person, fine-tuning steps, EMA) on estimated poses,
and its equal-compute demos-only control (the same rounds and rollouts, every batch from the demos:
`method_args.group_shares={demo: 1.0}`), both measured before and after on the same 200 report seeds with the
same estimator (version 0's evaluation shared). `--method rac|habc|sft` runs that method instead of HG-DAgger
(the control is the same run for every method and is reused); with both habc and sft run, HABC - SFT, the two
refined policies paired per seed, is `camera_only_habc_minus_sft` (the comparison HABC's paper reports).

    vla run out_dir=runs/main64 demos.gain=1.5 demos.randomize=none    # the job's preset before 2026-12-05
    vla run out_dir=runs/s7/pre_s1 "stages=[sim_demos,stats,pretrain]" demos.gain=1.5 demos.randomize=none \\
        'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=1"]'      # and seeds 2, 3, 4
    python benchmarks/bench_camera_refine.py --job runs/main64 --out runs/s7/camref \\
        --pretrained runs/main64/train/checkpoints/step_00003000 \\
        runs/s7/pre_s1/train/checkpoints/step_00003000 runs/s7/pre_s2/train/checkpoints/step_00003000 \\
        runs/s7/pre_s3/train/checkpoints/step_00003000 runs/s7/pre_s4/train/checkpoints/step_00003000 [--method rac]

The re-measure on the job's recipe since 2026-12-05 (gain-0.4 demos, runs/s19/job2; runs/s26/decision.txt,
runs/s26/q_pre.sh, q_base.sh, q_cr.sh): the job's 2,000-step schedule with a checkpoint every 100 steps per training
seed, the base step chosen on 100 tune seeds with the job's estimator (nearest 0.75: step 1,400, 0.87):

    vla run out_dir=runs/s26/pre_sS "stages=[pretrain]" overwrite=false      # job.json, summary.json, stats.json and
        'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=S","train.ckpt_every=100",
                             "train.keep_checkpoints=0"]'                     # demos.zarr of runs/s19/job2; S = 0..4
    python benchmarks/bench_camera_refine.py --job runs/s19/job2 --out runs/s26/camref --name camera_refine_g04 \
        --method hg_dagger --pretrained runs/s26/pre_s{0,1,2}/train/checkpoints/step_00001400   # habc, rac, sft
    # the protocol of the gain-1.5 figures (two rounds of 500 steps), vision.json's issue-62 keys since 2026-12-07:
    python benchmarks/bench_camera_refine.py --job runs/s19/job2 --out runs/s26/camref_r2 --name camera_refine_g04_r2 \
        --refine-set iterations=2 train.steps=500 --method hg_dagger --pretrained ...   # the same checkpoints
    python benchmarks/bench_vision.py --job runs/s19/job2 --job-estimated runs/s19/rob_job/clean \
        --camera-refine camera_refine_g04_r2

A converged base on the same recipe (runs/s27/decision.txt, q_base.sh, q_cr.sh): the old figures' bases were the
last checkpoint of their schedule, step 1,400 above is not. So the job's full schedule on fewer demos, N chosen
on 100 tune seeds with the estimator (nearest 0.75: N = 15, 0.65; 10 demos 0.62, 20 demos 0.95), and the control
trains on those same 15 demos:

    vla run out_dir=runs/s27/d15 "stages=[sim_demos,stats]" demos.episodes=15 demos.gain=0.4 \
        "demos.randomize=pose_latency:2,camera_shift:10,camera_rot:1"        # the job's demos block, 15 episodes
    vla run out_dir=runs/s27/pre_d15_sS "stages=[pretrain]" \
        'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=S"]'   # d15's files; S = 0, 1, 2
    python benchmarks/bench_camera_refine.py --job runs/s19/job2 --out runs/s27/camref --name camera_refine_conv \
        --refine-set iterations=2 train.steps=500 demos=runs/s27/d15/demos.zarr --method hg_dagger \
        --pretrained runs/s27/pre_d15_s{0,1,2}/train/checkpoints/step_00002000           # then habc, rac, sft
    # trainings 3 and 4 (decided after reading 0-2), pooled with the record of 0-2 (camera_refine_conv5.json;
    # then habc and rac; on a rebuild of runs/s19/job2, its --note says how):
    python benchmarks/bench_camera_refine.py --job runs/s19/job2 --out runs/s27/camref --name camera_refine_conv5 \
        --pool camera_refine_conv --training-seeds 3 4 --refine-set iterations=2 train.steps=500 \
        demos=runs/s27/d15/demos.zarr --method hg_dagger \
        --pretrained runs/s27/pre_d15_s{3,4}/train/checkpoints/step_00002000

Writes benchmarks/results/camera_refine.json / .md (`--name`) (`<method>` blocks: per training the refined, control and
pretrained success and the paired differences; over the trainings the mean of refined - control with its t
interval, as the issue's `camera_only_refine_gain_vs_control`). Resumable.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from main_job_control import outcomes
from results_io import RESULTS, write_result

from vla.metrics import format_paired, paired_difference, t_interval

METHOD_KEY = {"hg_dagger": "camera_only_refine_gain_vs_control", "rac": "camera_only_rac_gain_vs_control",
              "habc": "camera_only_habc_gain_vs_control", "sft": "camera_only_sft_gain_vs_control"}
# HABC's paper (the seeds') reports HABC against SFT on the same interventions: the difference of the two
# refined policies, paired per seed, when both blocks exist
HABC_MINUS_SFT = "camera_only_habc_minus_sft"


def protocol(job: Path, changes: list[str]) -> dict[str, Any]:
    """The job's refine settings (`<job>/refine/config.json`) with `changes` (KEY=VALUE, VALUE as JSON where it
    parses, a dotted KEY into a nested block: `iterations=2 train.steps=500`); an unknown key is an error."""
    base: dict[str, Any] = json.loads((job / "refine" / "config.json").read_text())
    for change in changes:
        key, sep, text = change.partition("=")
        if not sep:
            raise SystemExit(f"--refine-set: '{change}' is not KEY=VALUE")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        *path, last = key.split(".")
        block = base
        for k in path:
            block = block.get(k) if isinstance(block, dict) else None
            if not isinstance(block, dict):
                raise SystemExit(f"--refine-set: '{key}' is not a block of {job}/refine/config.json")
        if last not in block:
            raise SystemExit(f"--refine-set: unknown key '{key}' in {job}/refine/config.json")
        block[last] = value
    return base


def run_pair(settings: dict[str, Any], ckpt: Path, seed: int, estimator: Path, out: Path, method: str,
             control: bool = True) -> tuple[Path, Path]:
    """The refinement on estimated poses and (unless not `control`) its demos-only control from `ckpt`, with the
    refine `settings` (`protocol`); (refine dir, control dir)."""
    from vla.config import load_config
    from vla.refine.config import RefineConfig
    from vla.refine.loop import RefineRun

    base = copy.deepcopy(settings)  # each run its own copy of the nested blocks
    base.update(ckpt=str(ckpt), seed=seed, poses=str(estimator), method=method, videos=0,
                eval_every=base["iterations"], method_args={})
    dirs = (out / method, out / f"{method}_control")
    runs: list[tuple[Path, dict[str, Any]]] = [(dirs[0], {})]
    if control:
        runs.append((dirs[1], {"method_args": {"group_shares": {"demo": 1.0}}}))
    for d, extra in runs:
        values = {**base, **extra, "out_dir": str(d)}
        done = d / f"iter_{base['iterations']:02d}" / "eval" / "summary.json"
        if done.exists():
            continue
        if extra:  # the demos-only control trains on the demos alone, so every method's is the same run: on
            # training 0 the hg_dagger, rac and habc controls' weights were equal bit for bit
            other = next((c for c in sorted(out.glob("*_control")) if c != d and
                          (c / done.relative_to(d)).exists()), None)
            if other is not None:
                shutil.copytree(other, d)
                continue
        shared = out / "version0"  # one evaluation of the pretrained checkpoint on estimated poses for all
        if (shared / "summary.json").exists() and not (d / "iter_00" / "eval").exists():
            shutil.copytree(shared, d / "iter_00" / "eval")
        run = RefineRun(load_config(RefineConfig, "refine", "default", [], values=values))
        run.run()
        if not (shared / "summary.json").exists():
            shutil.copytree(d / "iter_00" / "eval", shared)
    return dirs


def demo_episodes(store: Path) -> int:
    """How many demonstrations the base and the control were trained on (the refine protocol's demo store)."""
    from vla.data.schema import Source
    from vla.data.store import EpisodeStore

    return int((EpisodeStore.open(store).table().source == Source.DEMO).sum())


def compare(refine: Path, control: Path, rounds: int) -> dict[str, Any]:
    last = f"iter_{rounds:02d}"
    base = outcomes(refine / "iter_00" / "eval" / "summary.json")
    ref = outcomes(refine / last / "eval" / "summary.json")
    row = {"refine": str(refine), "pretrained": float(np.mean(list(base.values()))),
           "refined": float(np.mean(list(ref.values()))), "episodes": len(base),
           "refined_minus_pretrained": paired_difference(base, ref)}
    if (control / last / "eval" / "summary.json").exists():
        ctl = outcomes(control / last / "eval" / "summary.json")
        row.update(control=str(control), control_success=float(np.mean(list(ctl.values()))),
                   control_minus_pretrained=paired_difference(base, ctl),
                   refined_minus_control=paired_difference(ctl, ref))
    return row


def habc_minus_sft(data: dict[str, Any], rounds: int) -> dict[str, Any] | None:
    """HABC's refined policy against SFT's, paired per seed within each training; over the trainings both ran."""
    if "habc" not in data or "sft" not in data:
        return None
    sft = {r["training_seed"]: r for r in data["sft"]["trainings"]}
    per = []
    for r in data["habc"]["trainings"]:
        if r["training_seed"] in sft:
            last = f"iter_{rounds:02d}"
            a = outcomes(Path(sft[r["training_seed"]]["refine"]) / last / "eval" / "summary.json")
            b = outcomes(Path(r["refine"]) / last / "eval" / "summary.json")
            per.append({"training_seed": r["training_seed"], **paired_difference(a, b)})
    means = np.array([p["mean"] for p in per])
    lo, hi = t_interval(means) if len(means) > 1 else (float("nan"), float("nan"))
    return {"mean": float(means.mean()), "lo": lo, "hi": hi, "trainings": len(per), "per_training": per}


def over(rows: list[dict[str, Any]]) -> dict[str, Any]:
    gain = np.array([r["refined_minus_pretrained"]["mean"] for r in rows])
    glo, ghi = t_interval(gain) if len(gain) > 1 else (float("nan"), float("nan"))
    out = {"trainings": len(rows), "refined_minus_pretrained": {"mean": float(gain.mean()), "lo": glo, "hi": ghi},
           "refined_success": float(np.mean([r["refined"] for r in rows]))}
    if all("refined_minus_control" in r for r in rows):
        per = np.array([r["refined_minus_control"]["mean"] for r in rows])
        lo, hi = t_interval(per) if len(per) > 1 else (float("nan"), float("nan"))
        out.update(mean=float(per.mean()), lo=lo, hi=hi, per_training=per.tolist(),
                   control_success=float(np.mean([r["control_success"] for r in rows])))
    return out


def pooled(rows: list[dict[str, Any]], record: dict[str, Any] | None, method: str) -> list[dict[str, Any]]:
    """This run's trainings and, first, an earlier record's trainings of `method` whose training seed this run
    did not run (their rows as recorded, each marked with `pooled_from`): the over-trainings figures of a
    protocol extended by more trainings after the first ones were read."""
    if not record or method not in record:
        return rows
    mine = {r["training_seed"] for r in rows}
    earlier = [{**r, "pooled_from": record["_name"]} for r in record[method]["trainings"]
               if r["training_seed"] not in mine]
    return sorted(earlier + rows, key=lambda r: r["training_seed"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--job", type=Path, required=True, help="a finished main job (refine/config.json, perception/)")
    ap.add_argument("--pretrained", type=Path, nargs="+", required=True, help="one checkpoint per training seed")
    ap.add_argument("--estimator", type=Path, help="default: <job>/perception/estimator")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--method", default="hg_dagger", choices=sorted(METHOD_KEY))
    ap.add_argument("--name", default="camera_refine",
                    help="results file (benchmarks/results/NAME.json/.md): a second base's figures beside the first's")
    ap.add_argument("--refine-set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="changes to the job's refine protocol, e.g. iterations=2 train.steps=500")
    ap.add_argument("--training-seeds", type=int, nargs="+",
                    help="the training seed of each --pretrained checkpoint (its refine seed and its t<S> dir); "
                    "default 0, 1, ...")
    ap.add_argument("--pool", metavar="NAME",
                    help="an earlier record (benchmarks/results/NAME.json) of the same protocol whose other "
                    "trainings the over-trainings figures include, as recorded")
    ap.add_argument("--note", default="", help="what the page must say of this run (e.g. how its inputs were made)")
    ap.add_argument("--no-control", action="store_true",
                    help="the method alone (for sft, read against habc: HABC - SFT as the paper reports it)")
    args = ap.parse_args()
    estimator = args.estimator or args.job / "perception" / "estimator"
    settings = protocol(args.job, args.refine_set)
    rounds = settings["iterations"]
    seeds = args.training_seeds or list(range(len(args.pretrained)))
    if len(seeds) != len(args.pretrained) or len(set(seeds)) != len(seeds):
        raise SystemExit(f"--training-seeds: {seeds} must name one distinct seed per --pretrained checkpoint "
                         f"({len(args.pretrained)})")
    record = None
    if args.pool:
        path = RESULTS / f"{args.pool}.json"
        if not path.exists():
            raise SystemExit(f"--pool: no record {path}")
        record = {**json.loads(path.read_text()), "_name": args.pool}
    rows = []
    for seed, ckpt in zip(seeds, args.pretrained, strict=True):
        refine, control = run_pair(settings, ckpt, seed, estimator, args.out / f"t{seed}", args.method,
                                   not args.no_control)
        rows.append({"training_seed": seed, "checkpoint": str(ckpt), **compare(refine, control, rounds)})
    block = {"method": args.method, "estimator": str(estimator), "job": str(args.job), "rounds": rounds,
             "protocol_changes": args.refine_set, "demos": settings["demos"],
             "demo_episodes": demo_episodes(Path(settings["demos"])),
             "trainings": rows, "over_trainings": over(rows), **({"note": args.note} if args.note else {})}
    if record is not None and args.method in record:
        every = pooled(rows, record, args.method)
        block.update(pooled_with=args.pool, over_pooled_trainings=over(every))
    key = METHOD_KEY[args.method]
    o = block["over_trainings"]
    figures: dict[str, Any] = {args.method: block}
    if "mean" in o:
        figures[key] = {k: o[k] for k in ("mean", "lo", "hi", "trainings")}
    if "mean" in block.get("over_pooled_trainings", {}):
        o = block["over_pooled_trainings"]
        figures[key] = {**{k: o[k] for k in ("mean", "lo", "hi", "trainings")}, "pooled_with": args.pool,
                        "this_run_only": figures.get(key)}
    res = RESULTS / f"{args.name}.json"
    old = json.loads(res.read_text()) if res.exists() else {}
    hs = habc_minus_sft({**old, **figures}, rounds)
    if hs is not None:
        figures[HABC_MINUS_SFT] = hs
    write_result(args.name, figures, seed_range="report", key_figures=[k for k in (key, HABC_MINUS_SFT)
                                                                              if k in figures])
    data = json.loads(res.read_text())
    lines = ["# A policy that reads only the cameras, refined by a person's corrections (issue 62, item 2)", "",
             "The job's state policy behind the job's pose estimator (the cameras and the arm's state in, the "
             "object poses out, every step of the rollouts, the fine-tuning data and the evaluations): no "
             "simulator state reaches it. Each method against its equal-compute demos-only control, per training "
             "seed, 200 report seeds paired (95% t interval, seeds better / worse); over the trainings the mean of "
             "the per-training differences with its t interval. Command: the docstring of "
             "`benchmarks/bench_camera_refine.py`.", "",
             f"Job `{args.job}`, estimator `{estimator}`, pretrained checkpoints (training seeds "
             f"{', '.join(map(str, seeds))}): " + ", ".join(f"`{c}`" for c in args.pretrained)
             + ". Refine protocol: the job's"
             + (f", changed by `{' '.join(args.refine_set)}`." if args.refine_set else "."), ""]
    if args.note:
        lines += [args.note, ""]
    for m in sorted(k for k in data if k in METHOD_KEY):
        b = data[m]
        lines += [f"## {m}", "", "| training | pretrained | refined | control | refined - pretrained | "
                  "control - pretrained | refined - control |", "|---|---|---|---|---|---|---|"]
        for r in pooled(b["trainings"], record, m) if b.get("pooled_with") else b["trainings"]:
            ctl = f"{r['control_success']:.3f}" if "control_success" in r else "not run"
            seed = f"{r['training_seed']} (`{r['pooled_from']}`)" if "pooled_from" in r else r["training_seed"]
            lines.append(f"| {seed} | {r['pretrained']:.3f} | {r['refined']:.3f} | {ctl} | "
                         f"{format_paired(r['refined_minus_pretrained'])} | "
                         f"{format_paired(r.get('control_minus_pretrained'))} | "
                         f"{format_paired(r.get('refined_minus_control'))} |")
        o, g = b["over_trainings"], b["over_trainings"]["refined_minus_pretrained"]
        vs = (f"refined - control {o['mean']:+.3f} [{o['lo']:+.3f}, {o['hi']:+.3f}] (`{METHOD_KEY[m]}`); "
              if "mean" in o else "no control run; ")
        lines += ["", f"Over {o['trainings']} trainings: {vs}refined - pretrained {g['mean']:+.3f}"
                  f" [{g['lo']:+.3f}, {g['hi']:+.3f}]; refined {o['refined_success']:.3f}"
                  + (f", control {o['control_success']:.3f}." if "control_success" in o else "."), ""]
        if "mean" in b.get("over_pooled_trainings", {}):
            q = b["over_pooled_trainings"]
            lines += [f"With `{b['pooled_with']}`'s other trainings (rows marked, as recorded there), over "
                      f"{q['trainings']} trainings: refined - control {q['mean']:+.3f} [{q['lo']:+.3f}, "
                      f"{q['hi']:+.3f}] (`{METHOD_KEY[m]}`), per training "
                      + ", ".join(f"{v:+.3f}" for v in q["per_training"])
                      + f"; refined {q['refined_success']:.3f}, control {q['control_success']:.3f}.", ""]
    hs = data.get(HABC_MINUS_SFT)
    if hs:
        per = "; ".join(f"training {p['training_seed']}: {format_paired(p)}" for p in hs["per_training"])
        lines += ["## HABC - SFT", "", "The two refined policies on the same interventions, paired per seed (the "
                  f"comparison HABC's paper reports): {hs['mean']:+.3f} [{hs['lo']:+.3f}, {hs['hi']:+.3f}] over "
                  f"{hs['trainings']} trainings (`{HABC_MINUS_SFT}`); {per}.", ""]
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
