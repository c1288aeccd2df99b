"""The temporal ensemble's settings chosen where choices are made: the protocol's `tune` seeds.

    python benchmarks/ensemble_sweep.py --job runs/main58

The job's eval stage runs its pretrained checkpoint with the ensemble (rate 0.3, a chunk every 2 steps).
Those settings were first read off the job's old evaluation seeds 1000-1199 in-process, and the page kept
that sweep as typed numbers. This re-runs the choice with the evaluator on 200 seeds of `tune`, the same
checkpoint and observation settings as the job's eval stage:
- the rate at a chunk every 2 steps (recent predictions weighted exp(-rate * age); ACT's is -0.01);
- the stride at the chosen rate's neighbourhood (0.3): a chunk every 1, 2 or 4 steps;
- no ensemble, executing n steps of each chunk.
Each against plain 4-step execution, paired by seed. What a setting scores here is a choice, not a
figure: `ensemble_report.py` measures the job's setting on `report`. Written by results_io.write_result
to benchmarks/results/ensemble_sweep.json (range `tune`). Resumable: an evaluation with a summary is
not run again.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from harness import job_eval
from results_io import write_result

from sim.evaluate import seed_outcomes
from vla.metrics import format_paired, paired_difference

ROOT = Path(__file__).resolve().parents[1]

RATES = (-0.01, 0.1, 0.3, 0.5, 1.0)
EVERY = (1, 2, 4)
STEPS = (1, 2, 4, 8)


def settings(rates: tuple[float, ...], every: tuple[int, ...], steps: tuple[int, ...]) -> dict[str, dict[str, Any]]:
    """Each evaluation's name and its overrides of the job's eval config (rate 0.3 every 2 is one entry)."""
    out = {f"steps{n}": {"temporal_ensemble": None, "temporal_ensemble_every": 1, "n_action_steps": n} for n in steps}
    out.update({f"rate{r:g}_every2": {"temporal_ensemble": r, "temporal_ensemble_every": 2} for r in rates})
    out.update({f"rate0.3_every{e}": {"temporal_ensemble": 0.3, "temporal_ensemble_every": e} for e in every})
    return out


def evaluate(job: Path, name: str, overrides: dict[str, Any], episodes: int, out: Path) -> dict[str, Any]:
    from sim.evaluate import EvalConfig, run_evaluation

    dest = out / name
    if (dest / "summary.json").exists():
        return json.loads((dest / "summary.json").read_text())
    config = dict(json.loads((job_eval(job) / "summary.json").read_text())["config"])
    config.update(seed_range="tune", seed_offset=0, seeds=None, episodes=episodes, videos=0, out_dir=str(dest),
                  record="", **overrides)
    return run_evaluation(EvalConfig(**config))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--job", required=True, help="a finished job: its eval stage's checkpoint and settings")
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--rates", default=",".join(map(str, RATES)))
    ap.add_argument("--every", default=",".join(map(str, EVERY)))
    ap.add_argument("--steps", default=",".join(map(str, STEPS)))
    args = ap.parse_args()
    job = (ROOT / args.job).resolve()
    if not (job_eval(job) / "summary.json").exists():
        raise SystemExit(f"--job {args.job}: no eval stage summary ({job_eval(job) / 'summary.json'})")
    todo = settings(tuple(float(x) for x in args.rates.split(",")), tuple(int(x) for x in args.every.split(",")),
                    tuple(int(x) for x in args.steps.split(",")))
    out = job / "ensemble_sweep"
    summaries = {}
    for name, overrides in todo.items():
        summaries[name] = evaluate(job, name, overrides, args.episodes, out)
        print(f"{name}: {summaries[name]['success_rate']:.3f}", flush=True)
    if "steps4" not in summaries:  # the reference every setting is paired against
        summaries["steps4"] = evaluate(job, "steps4", settings((), (), (4,))["steps4"], args.episodes, out)
        todo["steps4"] = settings((), (), (4,))["steps4"]
    plain = seed_outcomes(summaries["steps4"])
    figures: dict[str, Any] = {"job": args.job, "episodes": args.episodes, "settings": {}}
    lines = ["# Temporal ensemble settings on the tune seeds", "",
             f"`python benchmarks/ensemble_sweep.py --job {args.job}`: the job's pretrained checkpoint and eval "
             f"settings, {args.episodes} seeds of the `tune` range, each setting against executing 4 steps of each "
             "chunk (no ensemble), paired by seed. A choice is read off here; the figure is `ensemble_report.md`.",
             "", "| setting | success | minus 4 steps a chunk (better / worse) |", "|---|---|---|"]
    for name, s in summaries.items():
        d = paired_difference(plain, seed_outcomes(s))
        figures["settings"][name] = {"overrides": todo[name], "success": s["success_rate"], "minus_steps4": d}
        lines.append(f"| {name} | {s['success_rate']:.3f} | {format_paired(d)} |")
    ens = {k: v for k, v in figures["settings"].items() if k.startswith("rate")}
    best = max(ens, key=lambda k: (ens[k]["success"], k == "rate0.3_every2"))
    figures["best_on_tune"] = best
    figures["job_setting_success"] = ens.get("rate0.3_every2", {}).get("success")
    figures["best_success"] = ens[best]["success"]
    lines += ["", f"Best ensemble setting on these seeds: `{best}` ({ens[best]['success']:.3f}); the job's "
              f"(rate 0.3, a chunk every 2 steps): {figures['job_setting_success']}."]
    write_result("ensemble_sweep", figures, seed_range="tune",
                 key_figures=["best_on_tune", "best_success", "job_setting_success"])
    (ROOT / "benchmarks/results/ensemble_sweep.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
