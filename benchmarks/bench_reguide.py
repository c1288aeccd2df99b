"""ReGuide benchmark (issue 14): phase-conditioned guidance at test time and ReGuide-FT / -FS in
the refinement loop, paired by seed against the matched-data ablation.

  python benchmarks/bench_reguide.py sweep --out runs/bench_reguide      # guidance scale, on other seeds
  python benchmarks/bench_reguide.py run --out runs/bench_reguide --seeds 0,1,2
  python benchmarks/bench_reguide.py report --out runs/bench_reguide

Inputs: the world-model benchmark's (`benchmarks/wm_candidates.py`): the weak base policy
`d15_s3000` (15 demos, 3000 steps; pick_place, state mode) and its 15 demos, and the pick_place
world model of `benchmarks/bench_worldmodel.py` as the latent dynamics.
- sweep: the guidance scale is chosen on evaluation seeds 120000+ (30 episodes each), never on the
  seeds the figures come from (100000+);
- per seed s (phase targets fitted with k-means seed s; rollouts collected from seeds
  400000 + 10000 s, the same for every method): PCG at test time only; ReGuide-FT and ReGuide-FS
  (2 iterations x `--episodes` guided rollouts); the matched-data ablation (the same rollouts
  without guidance, the successes absorbed alike: `reguide-ft method_args.guide=false`);
- drift diagnostics of the phase targets: AUROC of the phase distance between the successful and
  the failed (second half) rollouts of the world-model benchmark, and the final phase reached.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from wm_candidates import ROOT, evaluate, refine_run  # benchmarks/ is this script's folder

from vla.metrics import t_interval

BASE = "d15_s3000"
METHODS = {"ft": ("reguide-ft", {}), "fs": ("reguide-fs", {}), "matched": ("reguide-ft", {"guide": False}),
           # the demos never sampled below their share of the supervised steps (method_args.demo_share_mode)
           "ft_floor": ("reguide-ft", {"demo_share_mode": "floor"}),
           "fs_floor": ("reguide-fs", {"demo_share_mode": "floor"}),
           "matched_floor": ("reguide-ft", {"guide": False, "demo_share_mode": "floor"})}
SWEEP_SCALES = (0.01, 0.03, 0.1, 0.3, 1.0)


def paths(args: argparse.Namespace) -> tuple[Path, Path, str, Path]:
    inputs, out = Path(args.inputs).resolve(), Path(args.out).resolve()
    cands = json.loads((inputs / "candidates.json").read_text())
    return inputs, out, cands[BASE]["ckpt"], Path(args.wm).resolve()


def phases(out: Path, inputs: Path, wm: Path, seed: int) -> Path:
    from worldmodel.reguide import PhaseConfig, fit_phase_targets

    folder = out / "phases" / f"seed{seed}"
    if not (folder / "phases.json").exists():
        fit_phase_targets(inputs / "demos_15.zarr", wm, PhaseConfig(seed=seed), task="pick_place").save(folder)
    return folder


def spec(ckpt: str, folder: Path, scale: float) -> str:
    return f"reguide:ckpt={ckpt},phases={folder},scale={scale},late=0.3"


def sweep(args: argparse.Namespace) -> None:
    inputs, out, ckpt, wm = paths(args)
    folder = phases(out, inputs, wm, 0)
    res = {"base": evaluate(ckpt, out / "sweep" / "base", 30, 120_000)["success_rate"]}
    for s in SWEEP_SCALES:
        res[str(s)] = evaluate(spec(ckpt, folder, s), out / "sweep" / f"scale_{s}", 30, 120_000)["success_rate"]
        print(f"[{time.strftime('%H:%M:%S')}] scale {s}: {res[str(s)]:.2f} (base {res['base']:.2f})", flush=True)
    best = max(SWEEP_SCALES, key=lambda s: (res[str(s)], -s))
    (out / "sweep.json").write_text(json.dumps({"success": res, "chosen_scale": best}, indent=1))
    print(json.dumps({"chosen_scale": best, **res}))


def run(args: argparse.Namespace) -> None:
    inputs, out, ckpt, wm = paths(args)
    scale = args.scale if args.scale > 0 else json.loads((out / "sweep.json").read_text())["chosen_scale"]
    v0 = out / "v0_eval"
    evaluate(ckpt, v0, args.eval_episodes, 100_000)
    for seed in [int(s) for s in args.seeds.split(",")]:
        folder = phases(out, inputs, wm, seed)
        evaluate(spec(ckpt, folder, scale), out / "pcg" / f"seed{seed}", args.eval_episodes, 100_000)
        for name in args.methods.split(","):
            method, extra = METHODS[name]
            run_dir = out / "runs" / name / f"seed{seed}"
            rec = run_dir / "records.json"
            if rec.exists() and len(json.loads(rec.read_text())) == args.iterations + 1:
                continue
            (run_dir / "iter_00" / "eval").mkdir(parents=True, exist_ok=True)
            shutil.copy(v0 / "summary.json", run_dir / "iter_00" / "eval" / "summary.json")
            margs = {"wm": str(wm), "scale": scale, "phases": {"seed": seed}, **extra}
            if name.startswith("fs"):
                margs["fs_steps"] = args.fs_steps
            refine_run(method, ckpt, inputs / "demos_15.zarr", run_dir, out / "logs" / f"{name}_seed{seed}.log",
                       seed=seed, collect_seed_start=400_000 + 10_000 * seed, iterations=args.iterations,
                       episodes=args.episodes, eval_episodes=args.eval_episodes, train_steps=args.train_steps,
                       method_args=margs)
    (out / "base.json").write_text(json.dumps({"name": BASE, "ckpt": ckpt, "scale": scale}))


def diagnostics(out: Path, inputs: Path, wm: Path, seed: int) -> dict[str, Any]:
    """Do the phase targets tell failing rollouts from successful ones, and do phases advance?"""
    cache = out / "phases" / f"seed{seed}" / "diagnostics.json"
    if cache.exists():
        return json.loads(cache.read_text())
    from sklearn.metrics import roc_auc_score

    from vla.data.store import EpisodeStore
    from worldmodel.checkpoint import load_checkpoint
    from worldmodel.reguide import PhaseGuidance, PhaseTargets, replay_phases

    model = load_checkpoint(wm)[0]
    g = PhaseGuidance(model, PhaseTargets.load(phases(out, inputs, wm, seed)))
    table = EpisodeStore.open(inputs / "rollouts.zarr").table()
    ok = replay_phases(g, inputs / "rollouts.zarr", np.flatnonzero(table.success)[:20])
    bad = replay_phases(g, inputs / "rollouts.zarr", np.flatnonzero(~table.success)[:40], second_half=True)
    d = np.r_[ok["distance"], bad["distance"]]
    res = {"drift_auroc": float(roc_auc_score(np.r_[np.zeros(len(ok["distance"])), np.ones(len(bad["distance"]))], d)),
           "success_final_phase": np.bincount(ok["final_phase"], minlength=g.targets.n_phases).tolist(),
           "failure_final_phase": np.bincount(bad["final_phase"], minlength=g.targets.n_phases).tolist(),
           "thresholds": g.targets.thresholds.round(4).tolist()}
    cache.write_text(json.dumps(res, indent=1))
    return res


def report(args: argparse.Namespace) -> None:
    inputs, out, _, wm = paths(args)
    base_info = json.loads((out / "base.json").read_text()) if (out / "base.json").exists() else {}
    base = json.loads((out / "v0_eval" / "summary.json").read_text())["success_rate"]
    rows: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for rec in sorted((out / "runs").glob("*/seed*/records.json")):
        r = json.loads(rec.read_text())
        if len(r) == args.iterations + 1:
            rows.setdefault(rec.parts[-3], {})[int(rec.parts[-2][4:])] = r
    pcg = {int(p.parts[-2][4:]): json.loads(p.read_text())["success_rate"]
           for p in sorted((out / "pcg").glob("seed*/summary.json"))}
    final = {m: {s: r[-1]["success_rate"] for s, r in by.items()} for m, by in rows.items()}
    seeds = sorted(set(pcg).intersection(*(set(v) for v in final.values()))) if final else sorted(pcg)

    def mean(d: dict[int, float]) -> float | None:
        v = [d[s] for s in seeds if s in d]
        return float(np.mean(v)) if v else None

    res: dict[str, Any] = {"task": "pick_place", "obs_mode": "state", "base": BASE, "seeds": seeds,
                           "base_success": base, "pcg_success": mean(pcg), "ft_success": mean(final.get("ft", {})),
                           "fs_success": mean(final.get("fs", {})),
                           "matched_data_success": mean(final.get("matched", {})),
                           "guidance_scale": base_info.get("scale")}
    lines = ["# ReGuide (issue 14)", "",
             f"Base policy `{BASE}` (15 demos, 3000 steps; pick_place, state mode): {base:.2f} on 50 evaluation "
             f"seeds 100000+. Guidance scale {base_info.get('scale')} (chosen on seeds 120000+, `sweep.json`). "
             "Commands: the docstring of `benchmarks/bench_reguide.py`.", "",
             "| variant | seed | success per version | real episodes | guided step share (per iteration) |",
             "|---|---|---|---|---|"]
    for s in sorted(pcg):
        lines.append(f"| PCG at test time | {s} | {base:.2f} -> {pcg[s]:.2f} | 0 | |")
    for m, by in rows.items():
        for s, r in sorted(by.items()):
            shares = []
            for k in range(args.iterations):
                f = out / "runs" / m / f"seed{s}" / f"iter_{k:02d}" / "reguide.json"
                shares.append(f"{json.loads(f.read_text())['guided_step_share']:.2f}" if f.exists() else "-")
            curve = " -> ".join(f"{x['success_rate']:.2f}" for x in r)
            lines.append(f"| {m} | {s} | {curve} | "
                         f"{r[-1]['env_episodes']} | {', '.join(shares)} |")
    for m, ref in (("ft", "matched"), ("fs", "matched"), ("ft_floor", "matched_floor"), ("fs_floor", "matched_floor")):
        if m in final and ref in final:
            both = sorted(set(final[m]) & set(final[ref]))
            d = np.array([final[m][s] - final[ref][s] for s in both])
            lo, hi = t_interval(d)
            res[f"{m}_gain_vs_matched"] = float(d.mean()) if len(d) else None
            res[f"{m}_gain_vs_matched_interval"] = [lo, hi]
            lines.append(f"\n{m} - {ref}, paired by seed: {d.mean():+.3f} (95% t interval [{lo:+.3f}, {hi:+.3f}], "
                         f"seeds {both}).")
    better = max(("ft", "fs"), key=lambda m: res.get(f"{m}_gain_vs_matched") or -9)
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
    for f in sorted([*(out / "pcg_scale").glob("s*/summary.json"), *(out / "pcg").glob("seed0/summary.json")]):
        d = json.loads(f.read_text())
        scale = float(f.parent.name[1:]) if f.parent.parent.name == "pcg_scale" else base_info.get("scale")
        ep = {e["seed"]: e["success"] for e in d["episodes_detail"]}
        scales[str(scale)] = {"success": d["success_rate"],
                              "base_only": sum(base_eps[k] and not ep[k] for k in ep if k in base_eps),
                              "pcg_only": sum(ep[k] and not base_eps[k] for k in ep if k in base_eps)}
    if scales:
        res["pcg_scale_check_seed0"] = scales
        lines += ["", "PCG guidance scale on the evaluation seeds (phase targets of seed 0), with the episodes only "
                  "the base or only PCG solved: " + "; ".join(f"{k}: {v['success']:.2f} ({v['base_only']} base-only, "
                                                          f"{v['pcg_only']} PCG-only)" for k, v in scales.items())]
    diag = {s: diagnostics(out, inputs, wm, s) for s in sorted(pcg)}
    res["drift_auroc"] = [v["drift_auroc"] for v in diag.values()]
    lines += ["", "Phase targets (world-model latent; 20 successful and 40 failed rollouts of the world-model "
              "benchmark): AUROC of the phase distance, successful rollouts vs the second half of failed ones: "
              + ", ".join(f"{v['drift_auroc']:.3f}" for v in diag.values())
              + "; final phase reached by successes " + str(next(iter(diag.values()))["success_final_phase"])
              + ", by failures " + str(next(iter(diag.values()))["failure_final_phase"]) + " (seed 0)."]
    res["rac_reference"] = {"gain_vs_sft_points": 22, "interval_points": 12, "source": "benchmarks/results/refine.md"}
    lines += ["", "RaC for reference (benchmarks/results/refine.md, another base policy): +22 +- 12 points over SFT on "
              "pick_place with a person's 1,130 intervention steps; ReGuide uses none.", "",
              "What the figures mean, what limits them and what is not measured: `reguide_notes.md`."]
    plot(out, rows, base, pcg)
    (ROOT / "benchmarks/results/reguide.md").write_text("\n".join(lines) + "\n")
    (ROOT / "benchmarks/results/reguide.json").write_text(json.dumps({"pick_place": res}, indent=1))
    print("\n".join(lines))


def plot(out: Path, rows: dict[str, dict[int, list[dict[str, Any]]]], base: float, pcg: dict[int, float]) -> None:
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
    fig.savefig(ROOT / "benchmarks/results/reguide_pick_place.png", dpi=100)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phase", choices=["sweep", "run", "report"])
    ap.add_argument("--inputs", default="runs/bench_wm/inputs")
    ap.add_argument("--wm", default="runs/bench_wm/run/wm_pick_place_state")
    ap.add_argument("--out", default="runs/bench_reguide")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--methods", default="ft,matched,fs")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--episodes", type=int, default=30)
    ap.add_argument("--eval-episodes", type=int, default=50)
    ap.add_argument("--train-steps", type=int, default=500)
    ap.add_argument("--fs-steps", type=int, default=3000)
    ap.add_argument("--scale", type=float, default=0.0, help="guidance scale; 0 = the sweep's choice")
    args = ap.parse_args()
    {"sweep": sweep, "run": run, "report": report}[args.phase](args)


if __name__ == "__main__":
    main()
