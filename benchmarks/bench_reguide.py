"""ReGuide benchmark: phase-conditioned guidance at test time and ReGuide-FT / -FS in
the refinement loop, paired by seed against the matched-data ablation.

  python benchmarks/bench_reguide.py sweep [--space state] [--dims 0:3]   # guidance scale, on other seeds
  python benchmarks/bench_reguide.py run --seeds 0,1,2 [--space state] [--dims 0:3]
  python benchmarks/bench_reguide.py report [--space state] [--dims 0:3]
  python benchmarks/bench_reguide.py prep --task can --demos 20  # then sweep/run/report --task can
  python benchmarks/bench_reguide.py prep --task square --demos 40  # likewise
  # Can's headline (the scale swept on tune, the figures on report):
  python benchmarks/bench_reguide.py prep --task can --demos 10 --inputs runs/bench_reguide_can58/inputs \
      --wm runs/bench_reguide_can58/wm
  python benchmarks/bench_reguide.py sweep|run|report --task can --space state --dims 0:3 \
      --inputs runs/bench_reguide_can58/inputs --wm runs/bench_reguide_can58/wm --out runs/bench_reguide_can58 \
      --methods ft_floor,matched_floor --headline --label d10

pick_place's inputs are the world-model benchmark's (`benchmarks/wm_candidates.py --runs d15`,
`bench_worldmodel.py state`): the weak base policy `d15_s3000` (15 demos, 3000 steps; state mode),
its 15 demos, and the pick_place world model as the latent dynamics. Another task's (`prep`): 100
expert demos and 30 failed expert attempts, a base policy on the first `--demos` of them (the
latest checkpoint in the paper's 10-40% range), 40 of its rollouts and a world model on all of them.
- `--space latent` (the paper's: distances in the world model's latent) or `state` (ours: on
  task-frame features of the predicted state, `STATE_FEATURES`); the guided runs of the state space
  are named `*_state`, the unguided ablation serves both. `--dims 0:3`: guidance changes only the
  arm's position actions (`*_pos`), not the rotation or the gripper.
- sweep: base and PCG at each `--scales` on `--sweep-episodes` (200) episodes of the `tune` range
  (`--sweep-range`), never the seeds the figures come from (`--eval-range report`). With 200 episodes a
  difference to the base is good to about +-0.10: any change of the actions makes the episodes
  diverge chaotically (a scale of 0.01 already resamples which episodes succeed), so pairing
  episodes by seed gains little and 30 episodes (+-0.25) can only find large effects;
- per seed s (phase targets fitted with k-means seed s; rollouts collected from seeds
  400000 + 10000 s, the same for every method): PCG at test time only; ReGuide-FT and ReGuide-FS
  (2 iterations x `--episodes` guided rollouts); the matched-data ablation (the same rollouts
  without guidance, the successes absorbed alike: `reguide-ft method_args.guide=false`; FS's is
  `matched_fs`, retrained from scratch alike, so that FS is compared at equal compute);
- drift diagnostics of the phase targets: AUROC of the phase distance between the successful and
  the failed (second half) rollouts in the world model's data (`inputs/rollouts.zarr`), and the
  final phase reached.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from harness import ROOT, STATE, evaluate, prep_base, refine_run, sh, vla
from results_io import write_result  # benchmarks/ is this script's folder

from vla.metrics import t_interval

BASE = "d15_s3000"  # pick_place's; another task's base is chosen by `prep` (inputs/candidates.json "base")
METHODS = {"ft": ("reguide-ft", {}), "fs": ("reguide-fs", {}), "matched": ("reguide-ft", {"guide": False}),
           # the demos never sampled below their share of the supervised steps (method_args.demo_share_mode)
           "ft_floor": ("reguide-ft", {"demo_share_mode": "floor"}),
           "fs_floor": ("reguide-fs", {"demo_share_mode": "floor"}),
           "matched_floor": ("reguide-ft", {"guide": False, "demo_share_mode": "floor"}),
           # FS's own matched ablation: retrained from scratch alike on the unguided successes (equal compute;
           # FT's ablation fine-tunes 500 steps, FS retrains `--fs-steps`)
           "matched_fs": ("reguide-fs", {"guide": False}),
           "matched_fs_floor": ("reguide-fs", {"guide": False, "demo_share_mode": "floor"})}
SWEEP_SCALES = (0.01, 0.03, 0.1, 0.3, 1.0)
# --space state: distances on task-frame features, the same in every layout of the objects.
# pick_place's state: eef 0:3, eef quat 3:7, fingers 7:9, cube 9:12, cube quat 12:16, cube - eef
# 16:19, zone 19:22 -> the gripper-to-cube offset, the zone-to-cube offset, the fingers.
# can's (robosuite object-state): eef 0:3, eef quat 3:7, fingers 7:9, can-to-eef pos 9:12 and quat
# 12:16, can 16:19, can quat 19:23 -> eef - can, the can (the bins do not move), the fingers.
# square's is laid out as can's with the nut for the can, and takes can's features: with the nut's
# quaternion 19:23 added, the phase distance no longer told the base's failed rollouts from its
# successful ones (drift AUROC 0.50 against 0.90 without it).
STATE_FEATURES = {"pick_place": "16:19,19:22-9:12,7:9", "can": "0:3-16:19,16:19,7:9",
                  "square": "0:3-16:19,16:19,7:9"}


def space_args(space: str, task: str = "pick_place") -> dict[str, str]:
    return {"space": "state", "state_features": STATE_FEATURES[task]} if space == "state" else {}


def suffix(space: str, dims: str = "") -> str:
    """Folders and method names of a variant: `_state` for the state space, `_pos` for guidance on the
    arm's position actions only (dims 0:3); the latent's on every dim keep their plain names."""
    extra = "" if not dims else "_pos" if dims == "0:3" else "_d" + dims.replace(":", "-")
    return ("" if space == "latent" else f"_{space}") + extra


def base_name(inputs: Path) -> str:
    return str(json.loads((inputs / "candidates.json").read_text()).get("base", BASE))


def paths(args: argparse.Namespace) -> tuple[Path, Path, str, Path]:
    inputs, out = Path(args.inputs).resolve(), Path(args.out).resolve()
    cands = json.loads((inputs / "candidates.json").read_text())
    return inputs, out, cands[base_name(inputs)]["ckpt"], Path(args.wm).resolve()


def demo_store(inputs: Path) -> Path:
    """The base policy's demos (the first N of the expert demos): the phase targets' data."""
    return inputs / f"demos_{base_name(inputs).split('_')[0][1:]}.zarr"


def phases(out: Path, inputs: Path, wm: Path, seed: int, space: str = "latent", task: str = "pick_place") -> Path:
    from worldmodel.reguide import PhaseConfig, fit_phase_targets

    folder = out / f"phases{suffix(space)}" / f"seed{seed}"
    want = space_args(space, task).get("state_features")
    if (folder / "phases.json").exists():
        had = json.loads((folder / "phases.json").read_text())["info"]["config"].get("state_features")
        if space == "state" and had != want:  # every evaluation cached under `out` was made with the old ones
            raise SystemExit(f"bench_reguide: {folder} was fitted on state_features {had!r}, not {want!r}: move "
                             f"{out} aside (its evaluations used them) or pass another --out")
    else:
        cfg = PhaseConfig(seed=seed, **space_args(space, task))
        fit_phase_targets(demo_store(inputs), wm, cfg, task=task).save(folder)
    return folder


def prep(args: argparse.Namespace) -> None:
    """Inputs for a task other than pick_place (whose come from the world-model benchmark), the same
    recipe: 100 expert demos (noise 0.1) and 30 failed expert attempts, a base policy trained on the
    first `--demos` of them, its checkpoints' real success on the evaluation seeds 100000+ (the base:
    the latest in the paper's 10-40% range), 40 base rollouts on seeds 5000+, and the world model on
    all of them (`--wm-steps`; can's ran 1000 steps of a 3000-step schedule, then was resumed to
    2000). Every step is skipped when its output exists."""
    inputs, wm = Path(args.inputs).resolve(), Path(args.wm).resolve()
    logs, task, n = inputs / "logs", args.task, args.demos
    w = ["workers=2", f"task={task}"]
    for name, eps, seed, extra in (("demos", 100, 0, ["noise=0.1"]),
                                   ("expert_failures", 30, 2000, ["noise=0.3", "skill=0.5"])):
        if not (inputs / f"{name}.done").exists():
            sh(vla("sim", "collect", inputs / f"{name}.zarr", f"episodes={eps}", "seed_range=collect",
                   f"seed_offset={seed}", *w, *extra,
                   f"out_dir={inputs / ('collect_' + name)}", *STATE), logs / f"collect_{name}.log")
            (inputs / f"{name}.done").touch()
    cands = prep_base(inputs, task, n, args.eval_episodes, (0.1, 0.4))
    base = cands["base"]
    ro = inputs / "rollouts"
    if not (ro / "summary.json").exists():
        sh(vla("eval", cands[base]["ckpt"], f"task={task}", "episodes=40", "seed_range=collect", "seed_offset=5000",
               "workers=2",
               f"record={inputs / 'rollouts.zarr'}", f"out_dir={ro}", *STATE), logs / "rollouts.log")
    if not (wm / "train_summary.json").exists():
        sh(vla("wm", "train", inputs / "demos.zarr", inputs / "expert_failures.zarr", inputs / "rollouts.zarr",
               "--out", wm, "--resume", "train.progress=false", f"train.steps={args.wm_steps}"), logs / "wm_train.log")
    print(f"base {base} ({cands[base]['real_success']:.2f}); world model {wm}")


def spec(ckpt: str, folder: Path, scale: float, dims: str = "") -> str:
    from worldmodel.reguide import guided_spec

    return guided_spec(ckpt, folder, scale, 0.3, dims)


def sweep(args: argparse.Namespace) -> None:
    inputs, out, ckpt, wm = paths(args)
    folder = phases(out, inputs, wm, 0, args.space, args.task)
    sx = suffix(args.space, args.dims)
    n, seed0, scales = args.sweep_episodes, args.sweep_offset, [float(x) for x in args.scales.split(",")]
    rng = args.sweep_range
    res = {"base": evaluate(ckpt, out / f"sweep_{rng}{seed0}_{n}" / "base", n, seed0, args.task,
                            seed_range=rng)["success_rate"]}
    for s in scales:
        res[str(s)] = evaluate(spec(ckpt, folder, s, args.dims), out / f"sweep{sx}_{rng}{seed0}_{n}" / f"scale_{s}", n,
                               seed0, args.task, seed_range=rng)["success_rate"]
        print(f"[{time.strftime('%H:%M:%S')}] scale {s}: {res[str(s)]:.3f} (base {res['base']:.3f})", flush=True)
    best = max(scales, key=lambda s: (res[str(s)], -s))
    (out / f"sweep{sx}.json").write_text(json.dumps(
        {"success": res, "chosen_scale": best, "seed_range": rng, "seed_offset": seed0, "episodes": n}, indent=1))
    print(json.dumps({"chosen_scale": best, **res}))


def run(args: argparse.Namespace) -> None:
    inputs, out, ckpt, wm = paths(args)
    sx = suffix(args.space, args.dims)
    scale = args.scale if args.scale > 0 else json.loads((out / f"sweep{sx}.json").read_text())["chosen_scale"]
    v0 = out / "v0_eval"
    check_eval_range(v0, args)
    evaluate(ckpt, v0, args.eval_episodes, args.eval_offset, args.task, seed_range=args.eval_range)
    for seed in [int(s) for s in args.seeds.split(",")]:
        folder = phases(out, inputs, wm, seed, args.space, args.task)
        evaluate(spec(ckpt, folder, scale, args.dims), out / f"pcg{sx}" / f"seed{seed}", args.eval_episodes,
                 args.eval_offset, args.task, seed_range=args.eval_range)
        for name in [m for m in args.methods.split(",") if m]:
            method, extra = METHODS[name]
            guided = not name.startswith("matched")  # the unguided ablation is the same in either space
            run_dir = out / "runs" / (name + (sx if guided else "")) / f"seed{seed}"
            rec = run_dir / "records.json"
            if rec.exists() and len(json.loads(rec.read_text())) == args.iterations + 1:
                continue
            (run_dir / "iter_00" / "eval").mkdir(parents=True, exist_ok=True)
            shutil.copy(v0 / "summary.json", run_dir / "iter_00" / "eval" / "summary.json")
            margs = {"wm": str(wm), "scale": scale, "phases": {"seed": seed, **space_args(args.space, args.task)},
                     **({"dims": args.dims} if args.dims else {}), **extra}
            if method == "reguide-fs":
                margs["fs_steps"] = args.fs_steps
            refine_run(method, ckpt, demo_store(inputs), run_dir,
                       out / "logs" / f"{run_dir.parent.name}_seed{seed}.log",
                       seed=seed, collect_seed_start=400_000 + 10_000 * seed, iterations=args.iterations,
                       episodes=args.episodes, eval_episodes=args.eval_episodes, train_steps=args.train_steps,
                       method_args=margs, task=args.task, eval_seed_range=args.eval_range,
                       eval_seed_offset=args.eval_offset)
    (out / f"base{sx}.json").write_text(json.dumps({"name": base_name(inputs), "ckpt": ckpt, "scale": scale}))


def check_eval_range(v0: Path, args: argparse.Namespace) -> None:
    """Every evaluation cached under `--out` is on one range: a run folder evaluated elsewhere stops."""
    f = v0 / "summary.json"
    if f.exists():
        d = json.loads(f.read_text())
        had = (d.get("seed_range", "collect"), d["seeds"][0] if d.get("seeds") else None)
        from vla.protocol import seeds

        want = (args.eval_range, seeds(args.eval_range, 1, args.eval_offset)[0])
        if had[0] != want[0] or (had[1] is not None and had[1] != want[1]):
            raise SystemExit(f"bench_reguide: {f} was evaluated on the {had[0]} range from seed {had[1]}, not "
                             f"{want[0]} from {want[1]}: pass another --out (its cached evaluations used them)")


def diagnostics(out: Path, inputs: Path, wm: Path, seed: int, space: str = "latent", task: str = "pick_place"
                ) -> dict[str, Any]:
    """Do the phase targets tell failing rollouts from successful ones, and do phases advance?"""
    cache = phases(out, inputs, wm, seed, space, task) / "diagnostics.json"
    if cache.exists():
        return json.loads(cache.read_text())
    from sklearn.metrics import roc_auc_score

    from vla.data.store import EpisodeStore
    from worldmodel.checkpoint import load_checkpoint
    from worldmodel.reguide import PhaseGuidance, PhaseTargets, replay_phases

    model = load_checkpoint(wm)[0]
    g = PhaseGuidance(model, PhaseTargets.load(phases(out, inputs, wm, seed, space, task)))
    table = EpisodeStore.open(inputs / "rollouts.zarr").table()
    ok = replay_phases(g, inputs / "rollouts.zarr", np.flatnonzero(table.success)[:20])
    bad = replay_phases(g, inputs / "rollouts.zarr", np.flatnonzero(~table.success)[:40], second_half=True)
    d = np.r_[ok["distance"], bad["distance"]]
    res = {"drift_auroc": float(roc_auc_score(np.r_[np.zeros(len(ok["distance"])), np.ones(len(bad["distance"]))], d)),
           "success_final_phase": np.bincount(ok["final_phase"], minlength=g.targets.n_phases).tolist(),
           "failure_final_phase": np.bincount(bad["final_phase"], minlength=g.targets.n_phases).tolist(),
           "thresholds": g.targets.thresholds.round(4).tolist(),
           "episodes": [len(ok["final_phase"]), len(bad["final_phase"])]}
    cache.write_text(json.dumps(res, indent=1))
    return res


VARIANTS = {suffix(space, dims): (space, dims) for space in ("latent", "state") for dims in ("", "0:3")}


def sweep_table(out: Path, inputs: Path, wm: Path, task: str) -> tuple[dict[str, Any], list[str]]:
    """Every variant's guidance-scale sweep found in `out`: {variant: sweep + drift AUROC}, table lines."""
    found: dict[str, Any] = {}
    lines = ["| distances on | guided action dims | episodes (seeds) | base | PCG per guidance scale |",
             "|---|---|---|---|---|"]
    for sx, (space, dims) in VARIANTS.items():
        f = out / f"sweep{sx}.json"
        if not f.exists():
            continue
        sw = json.loads(f.read_text())
        diag = diagnostics(out, inputs, wm, 0, space, task)
        found[sx.lstrip("_") or "latent"] = {**sw, "space": space, "dims": dims, "drift_auroc": diag["drift_auroc"]}
        lines.append(f"| {'task-frame state features' if space == 'state' else 'world-model latent'} | "
                     f"{dims or 'all'} | {sw.get('episodes', 30)} ({sweep_seeds(sw)}) | "
                     f"{sw['success']['base']:.3f} | "
                     + ", ".join(f"{k}: {v:.3f}" for k, v in sw["success"].items() if k != "base")
                     + f" (chosen {sw['chosen_scale']}; drift AUROC {diag['drift_auroc']:.2f}) |")
    return found, lines


def sweep_seeds(sw: dict[str, Any]) -> str:
    """Where a sweep's episodes came from: a protocol range, or (sweeps before the seed protocol) a first seed."""
    if "seed_range" in sw:
        return f"{sw['seed_range']} range from offset {sw['seed_offset']}"
    return f"{sw.get('seed_start', 120_000)}+, collect range"


def report_sweeps(args: argparse.Namespace) -> None:
    """A task with test-time figures only (no `run` yet): every variant's sweep, one page."""
    inputs, out, _, wm = paths(args)
    task, name = args.task, base_name(inputs)
    cands = json.loads((inputs / "candidates.json").read_text())
    path = ROOT / "benchmarks/results/reguide.json"
    table = json.loads(path.read_text()) if path.exists() else {}
    entry: dict[str, Any] = {"task": task, "obs_mode": "state", "base": name, "seeds": [],
                             "base_checkpoints_real_success": {k: v["real_success"] for k, v in cands.items()
                                                               if isinstance(v, dict)}}
    lines = [f"# ReGuide: {task}, test-time guidance only", "",
             f"Base policy `{name}` ({name.split('_')[0][1:]} demos, {name.split('_s')[-1]} steps; {task}, state "
             "mode); its checkpoints' real success on 50 episodes from seed 100000: "
             + ", ".join(f"{k} {v['real_success']:.2f}" for k, v in cands.items() if isinstance(v, dict))
             + f". Commands: `benchmarks/bench_reguide.py prep --task {task}`, then `sweep --task {task}` per "
             "variant (its docstring). ReGuide-FT/-FS and the matched ablation have not been run on this task.", ""]
    found, table_lines = sweep_table(out, inputs, wm, task)
    lines += table_lines
    for key, sw in found.items():
        best = sw["success"][str(sw["chosen_scale"])]
        res = {"space": sw["space"], "dims": sw["dims"], "base_success": sw["success"]["base"], "pcg_success": best,
               "guidance_scale": sw["chosen_scale"], "pcg_gain_vs_base": best - sw["success"]["base"], "sweep": sw,
               "drift_auroc": [sw["drift_auroc"]], "ft_success": None, "fs_success": None,
               "matched_data_success": None, "paired_gain_vs_matched_low": None}
        if key == "latent":
            entry.update(res)
        else:
            entry[f"variant_{key}"] = res
    if "base_success" not in entry:  # the paper's variant not swept: the base from any sweep
        first = next((v for k, v in entry.items() if k.startswith("variant_")), {})
        entry["base_success"] = first.get("base_success")
    lines += ["", "A difference to the base is good to about +-0.09 at 200 episodes (95%). What the figures mean: "
              "`reguide_notes.md`."]
    table[task] = entry
    path.write_text(json.dumps(table, indent=1))
    (ROOT / f"benchmarks/results/reguide_{task}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def round_info(folder: Path) -> dict[str, Any]:
    """A run's round figures (`added.json`'s info; runs made before methods were units: `reguide.json`)."""
    for name, key in (("added.json", "info"), ("reguide.json", None)):
        f = folder / name
        if f.exists():
            d = json.loads(f.read_text())
            return d[key] if key else d
    return {}


def report(args: argparse.Namespace) -> None:
    inputs, out, _, wm = paths(args)
    if not (out / "v0_eval" / "summary.json").exists():
        report_sweeps(args)
        return
    sx = suffix(args.space, args.dims)
    base_info = json.loads((out / f"base{sx}.json").read_text()) if (out / f"base{sx}.json").exists() else {}
    v0 = json.loads((out / "v0_eval" / "summary.json").read_text())
    base, eval_range = v0["success_rate"], v0.get("seed_range", "collect")
    first_seed = v0["seeds"][0] if v0.get("seeds") else 100_000
    rows: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for rec in sorted((out / "runs").glob("*/seed*/records.json")):
        r, name = json.loads(rec.read_text()), rec.parts[-3]
        # this variant's guided runs (under their plain names) and the unguided ablations
        plain = name if not sx else name.removesuffix(sx) if name.endswith(sx) else ""
        mine = (name in METHODS and name.startswith("matched")) or (
            plain in METHODS and not plain.startswith("matched"))
        if len(r) == args.iterations + 1 and mine:
            rows.setdefault(plain or name, {})[int(rec.parts[-2][4:])] = r
    pcg = {int(p.parts[-2][4:]): json.loads(p.read_text())["success_rate"]
           for p in sorted((out / f"pcg{sx}").glob("seed*/summary.json"))}
    final = {m: {s: r[-1]["success_rate"] for s, r in by.items()} for m, by in rows.items()}
    seeds = sorted(set(pcg).intersection(*(set(v) for v in final.values()))) if final else sorted(pcg)

    def first(m: str) -> dict[int, float]:
        """The method's runs, else its floor variant's (`demo_share_mode=floor`)."""
        return final.get(m) or final.get(f"{m}_floor", {})

    def mean(d: dict[int, float]) -> float | None:
        v = [d[s] for s in seeds if s in d]
        return float(np.mean(v)) if v else None

    name, task = base_name(inputs), args.task
    res: dict[str, Any] = {"task": task, "obs_mode": "state", "base": name, "space": args.space, "dims": args.dims,
                           "state_features": space_args(args.space, task).get("state_features"), "seeds": seeds,
                           "base_success": base, "pcg_success": mean(pcg), "ft_success": mean(first("ft")),
                           "fs_success": mean(first("fs")), "matched_data_success": mean(first("matched")),
                           "matched_fs_success": mean(first("matched_fs")), "guidance_scale": base_info.get("scale"),
                           "iterations": args.iterations, "rollouts_per_iteration": args.episodes,
                           "eval_episodes": args.eval_episodes, "eval_seed_range": eval_range}
    lines = [f"# ReGuide: {task}"
             + (f", distances on task-frame features ({STATE_FEATURES[task]})" if args.space == "state" else "")
             + (f", guidance on the action dims {args.dims} only" if args.dims else ""), "",
             f"Base policy `{name}` ({name.split('_')[0][1:]} demos, {name.split('_s')[-1]} steps; {task}, "
             "state mode): "
             f"{base:.2f} on {args.eval_episodes} evaluation "
             f"seeds from {first_seed} ({eval_range} range"
             + ("; nothing was chosen on them" if eval_range == "report" else "; not held out") + "). "
             f"Guidance scale {base_info.get('scale')} (chosen on other seeds: below). "
             f"Commands: the docstring of `benchmarks/bench_reguide.py` with `--task {task} --space {args.space}"
             + (f" --dims {args.dims}" if args.dims else "") + "`.", "",
             "| variant | seed | success per version | real episodes | guided step share (per iteration) |",
             "|---|---|---|---|---|"]
    for s in sorted(pcg):
        lines.append(f"| PCG at test time | {s} | {base:.2f} -> {pcg[s]:.2f} | 0 | |")
    for m, by in rows.items():
        for s, r in sorted(by.items()):
            shares = []
            for k in range(args.iterations):
                folder = out / "runs" / (m if m.startswith("matched") else m + sx) / f"seed{s}"
                share = round_info(folder / f"iter_{k:02d}").get("guided_step_share")
                shares.append("-" if share is None else f"{share:.2f}")
            curve = " -> ".join(f"{x['success_rate']:.2f}" for x in r)
            lines.append(f"| {m} | {s} | {curve} | "
                         f"{r[-1]['env_episodes']} | {', '.join(shares)} |")
    # each method's ablation, the first found; FS falls back on FT's (the oldest runs; less compute than FS)
    for m, refs in (("ft", ("matched",)), ("fs", ("matched_fs", "matched")), ("ft_floor", ("matched_floor",)),
                    ("fs_floor", ("matched_fs_floor", "matched_floor"))):
        ref = next((r for r in refs if r in final), "")
        if m in final and ref:
            res[f"{m}_matched_by"] = ref
            both = sorted(set(final[m]) & set(final[ref]))
            d = np.array([final[m][s] - final[ref][s] for s in both])
            lo, hi = t_interval(d)
            res[f"{m}_gain_vs_matched"] = float(d.mean()) if len(d) else None
            res[f"{m}_gain_vs_matched_interval"] = [lo, hi]
            lines.append(f"\n{m} - {ref}, paired by seed: {d.mean():+.3f} (95% t interval [{lo:+.3f}, {hi:+.3f}], "
                         f"seeds {both}).")
    better = max(("ft", "fs", "ft_floor", "fs_floor"), key=lambda m: res.get(f"{m}_gain_vs_matched") or -9)
    res["paired_gain_vs_matched_low"] = (res.get(f"{better}_gain_vs_matched_interval") or [None])[0]
    res["paired_gain_vs_matched_method"] = better
    if pcg:
        d = np.array([pcg[s] - base for s in sorted(pcg)])
        res["pcg_gain_vs_base"], res["pcg_gain_vs_base_interval"] = float(d.mean()), list(t_interval(d))
        lo, hi = t_interval(d)
        lines.append(f"\nPCG - base on the same seeds: {d.mean():+.3f} (95% t interval over the phase-target seeds "
                     f"[{lo:+.3f}, {hi:+.3f}]).")
    base_eps = {e["seed"]: e["success"] for e in
                json.loads((out / "v0_eval" / "summary.json").read_text())["episodes_detail"]}
    scales = {}
    for f in sorted([*(out / f"pcg_scale{sx}").glob("s*/summary.json"),
                     *(out / f"pcg{sx}").glob("seed0/summary.json")]):
        d = json.loads(f.read_text())
        scale = float(f.parent.name[1:]) if f.parent.parent.name == f"pcg_scale{sx}" else base_info.get("scale")
        ep = {e["seed"]: e["success"] for e in d["episodes_detail"]}
        scales[str(scale)] = {"success": d["success_rate"],
                              "base_only": sum(base_eps[k] and not ep[k] for k in ep if k in base_eps),
                              "pcg_only": sum(ep[k] and not base_eps[k] for k in ep if k in base_eps)}
    if scales:
        res["pcg_scale_check_seed0"] = scales
        lines += ["", "PCG guidance scale on the evaluation seeds (phase targets of seed 0), with the episodes only "
                  "the base or only PCG solved: " + "; ".join(f"{k}: {v['success']:.2f} ({v['base_only']} base-only, "
                                                          f"{v['pcg_only']} PCG-only)" for k, v in scales.items())]
    found, table_lines = sweep_table(out, inputs, wm, task)
    if found:
        res["sweeps"] = found
        lines += ["", "Guidance-scale sweeps of every variant (phase targets of seed 0; never the figures' seeds; the "
                  "episodes diverge chaotically under any change of the actions, so a difference to the base is "
                  "good to about +-0.09 at 200 episodes, 95%):", "", *table_lines]
    diag = {s: diagnostics(out, inputs, wm, s, args.space, task) for s in sorted(pcg)}
    res["drift_auroc"] = [v["drift_auroc"] for v in diag.values()]
    where = "task-frame features of the predicted state" if args.space == "state" else "world-model latent"
    n_ok, n_bad = next(iter(diag.values())).get("episodes", [20, 40])
    lines += ["", f"Phase targets ({where}; {n_ok} successful and {n_bad} failed rollouts of the world model's "
              "data, `inputs/rollouts.zarr`): AUROC of the phase distance, successful rollouts vs the second half of "
              "failed ones: "
              + ", ".join(f"{v['drift_auroc']:.3f}" for v in diag.values())
              + "; final phase reached by successes " + str(next(iter(diag.values()))["success_final_phase"])
              + ", by failures " + str(next(iter(diag.values()))["failure_final_phase"]) + " (seed 0)."]
    lines += ["", "What the figures mean, what limits them and what is not measured: `reguide_notes.md`."]
    page = sx + (f"_{args.label}" if args.label else "")  # names the page and the entry, not the runs' folders
    stem = "reguide" + ("" if task == "pick_place" else f"_{task}") + page
    plot(out, rows, base, pcg, ROOT / f"benchmarks/results/reguide_{task}{page}.png")
    (ROOT / f"benchmarks/results/{stem}.md").write_text("\n".join(lines) + "\n")
    path = ROOT / "benchmarks/results/reguide.json"
    table = json.loads(path.read_text()) if path.exists() else {}
    table[task] = place_entry(table.get(task, {}), res, page, args.headline)
    path.write_text(json.dumps(table, indent=1))
    # this variant's own file, stamped with the range its figures come from (reguide.json mixes tasks and
    # ranges; the headline reads the variant's file)
    write_result(stem, res, seed_range=eval_range,
                 key_figures=[k for k in ("ft_floor_gain_vs_matched", "ft_gain_vs_matched", "base_success",
                                          "pcg_success") if res.get(k) is not None][:3])
    print("\n".join(lines))


def place_entry(entry: dict[str, Any], res: dict[str, Any], page: str, headline: bool) -> dict[str, Any]:
    """A task's reguide.json entry with `res` placed: the paper's variant (latent distances, every action
    dim: `page` "") at the top level, another as `variant<page>` beside it. `headline`: this variant's
    figures are the task's (the one whose runs hold every figure the issue asks for) and go to the top
    level, naming it in `headline_variant`; what stood there before moves to `variant_latent`, where
    the paper's variant is reported from then on."""
    variants = {k: v for k, v in entry.items() if k.startswith("variant_")}
    top = {k: v for k, v in entry.items() if not k.startswith("variant_")}
    name = f"variant{page}" if page else "variant_latent"
    if headline and page:
        if top and "headline_variant" not in top:
            variants.setdefault("variant_latent", top)
        return {**res, "headline_variant": name, **{**variants, name: res}}
    if page or "headline_variant" in top:
        return {**top, **variants, name: res}
    return {**res, **variants}


def plot(out: Path, rows: dict[str, dict[int, list[dict[str, Any]]]], base: float, pcg: dict[int, float],
         png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for m, by in rows.items():
        curves = np.array([[x["success_rate"] for x in r] for r in by.values()])
        ax.errorbar(np.arange(curves.shape[1]), curves.mean(0), yerr=curves.std(0), marker="o", capsize=3,
                    label=f"{m} ({len(by)} seeds)")
    if pcg:
        ax.scatter([0] * len(pcg), list(pcg.values()), marker="x", color="k", label="PCG at test time (per seed)")
    ax.axhline(base, color="gray", ls="--", label="base")
    ax.set_xlabel("policy version (iteration)")
    ax.set_ylabel("real success (50 episodes)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phase", choices=["prep", "sweep", "run", "report"])
    ap.add_argument("--task", choices=sorted(STATE_FEATURES), default="pick_place")
    ap.add_argument("--inputs", default=None, help="default: runs/bench_wm/inputs (pick_place), "
                    "runs/bench_reguide_TASK/inputs (prep's)")
    ap.add_argument("--wm", default=None, help="default: runs/bench_wm/run/wm_pick_place_state (pick_place), "
                    "runs/bench_reguide_TASK/wm (prep's)")
    ap.add_argument("--out", default=None, help="default: runs/bench_reguide[_TASK]")
    ap.add_argument("--demos", type=int, default=20, help="prep: the base policy's expert demos")
    ap.add_argument("--wm-steps", type=int, default=2000, help="prep: the world model's training steps")
    ap.add_argument("--sweep-episodes", type=int, default=200)
    ap.add_argument("--sweep-range", default="tune", choices=("collect", "tune", "report"),
                    help="the protocol range of the sweep's episodes (the scale is a choice: tune); the sweeps "
                    "before the seed protocol ran on collect from 130000")
    ap.add_argument("--sweep-offset", type=int, default=0, help="the sweep's first seed within --sweep-range")
    ap.add_argument("--eval-range", default="report", choices=("collect", "tune", "report"),
                    help="the protocol range of the figures' evaluation seeds; before the seed protocol: collect "
                    "from 100000")
    ap.add_argument("--eval-offset", type=int, default=0, help="the first evaluation seed within --eval-range")
    ap.add_argument("--scales", default=",".join(map(str, SWEEP_SCALES)))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--methods", default="ft,matched,fs")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--episodes", type=int, default=30)
    ap.add_argument("--eval-episodes", type=int, default=50)
    ap.add_argument("--train-steps", type=int, default=500)
    ap.add_argument("--fs-steps", type=int, default=3000)
    ap.add_argument("--scale", type=float, default=0.0, help="guidance scale; 0 = the sweep's choice")
    ap.add_argument("--dims", default="", help="action dims guidance may change, a:b (0:3: the arm's position)")
    ap.add_argument("--space", choices=["latent", "state"], default="latent",
                    help="where phase distances are measured (PhaseConfig.space)")
    ap.add_argument("--headline", action="store_true", help="report: this variant's figures are the task's "
                    "top-level ones in reguide.json (the one with every figure the issue asks for)")
    ap.add_argument("--label", default="", help="report: a name for this run's page and reguide.json entry, kept "
                    "beside the task's others (e.g. d10: a base from 10 demos)")
    args = ap.parse_args()
    pp = args.task == "pick_place"
    root = "runs/bench_reguide" + ("" if pp else f"_{args.task}")
    args.inputs = args.inputs or ("runs/bench_wm/inputs" if pp else f"{root}/inputs")
    args.wm = args.wm or ("runs/bench_wm/run/wm_pick_place_state" if pp else f"{root}/wm")
    args.out = args.out or root
    if pp and args.phase == "prep":
        ap.error("prep: pick_place's inputs are the world-model benchmark's (benchmarks/wm_candidates.py, "
                 "bench_worldmodel.py state)")
    {"prep": prep, "sweep": sweep, "run": run, "report": report}[args.phase](args)


if __name__ == "__main__":
    main()
