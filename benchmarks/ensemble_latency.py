"""The temporal ensemble's rate under a real arm's one-tick command delay (issue 61), on the report range.

The job executes its policy with a temporal ensemble: a chunk every 2 steps, each step the mean of every live
chunk's prediction weighted exp(-rate x its age), rate 0.3 (chosen clean, ensemble_sweep.md). On the tune seeds
(robustness_training.md, rows x_te*: the default recipe's pretrained policies, 200 seeds) that rate is where a
one-tick action latency hurts: rate 1.0 (the newest chunk dominates) fell to 0.42 under it, 0.3 read 0.69 and
-0.01 (every live chunk about equal, ACT's own weighting, arXiv 2304.13705) 0.795 on the same training. Rate -0.01
was chosen there over three trainings; this reads it where nothing was chosen: the job's recipe refined
(runs/s12/rr/clean_sN, the refine stage as the job runs it), 200 report seeds, rate -0.01 against 0.3, clean and
under `action_latency:1` and `realistic`, paired by seed per training and over the trainings (mean of the per-training
differences with its t interval).

    runs/s12/q_report.sh    # vla eval CKPT episodes=200 seed_range=report temporal_ensemble=R \\
                            #   temporal_ensemble_every=2 n_action_steps=4 videos=0 perturb=P \\
                            #   out_dir=runs/s12/report/teR/sN/<none|action_latency|realistic> (q_report2.sh)
    python benchmarks/ensemble_latency.py --runs runs/s12/report --pretrained runs/s12/report_pre
    (runs/s12/q_dis.sh: training 0's pretrained policy on the same seeds under the latency, runs/s12/report_pre)

Writes benchmarks/results/ensemble_latency.json (`<condition>`: per training the two rates' success and the
paired difference; `over_trainings` {mean, lo, hi, trainings}) and ensemble_latency.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from results_io import RESULTS, write_result
from robustness_training import outcomes

from vla.metrics import format_paired, paired_difference, t_interval

CONDITIONS = {"none": "clean", "action_latency": "action_latency:1", "realistic": "realistic"}


def figures(runs: Path, rate: str, base: str) -> dict[str, Any]:
    out: dict[str, Any] = {"rate": float(rate), "base_rate": float(base)}
    for cond, label in CONDITIONS.items():
        per: dict[str, Any] = {}
        for seed_dir in sorted((runs / f"te{rate}").glob("s[0-9]*")):
            new, old = (outcomes(runs / f"te{r}" / seed_dir.name / cond / "summary.json") for r in (rate, base))
            if new is None or old is None:
                continue
            per[seed_dir.name[1:]] = {"success": sum(new.values()) / len(new), "episodes": len(new),
                                      "base_success": sum(old.values()) / len(old),
                                      "minus_base": paired_difference(old, new)}
        if not per:
            continue
        diffs = np.array([p["minus_base"]["mean"] for p in per.values()])
        lo, hi = t_interval(diffs)
        out[label] = {"per_training": per,
                      "over_trainings": {"mean": float(diffs.mean()), "lo": lo, "hi": hi, "trainings": len(per)}}
    return out


def table_rows(fig: dict[str, Any], what: str = "") -> list[str]:
    """The page's rows of one `figures` result: per condition each training, then the mean over them."""
    rows = []
    for label in CONDITIONS.values():
        block = fig.get(label)
        if not block:
            continue
        for s, p in block["per_training"].items():
            rows.append(f"| {label}{what} | {s} | {p['success']:.3f} | {p['base_success']:.3f} | "
                        f"{format_paired(p['minus_base'])} |")
        o = block["over_trainings"]
        if o["trainings"] > 1:  # one training has no spread to give an interval
            rows.append(f"| {label}{what} | over {o['trainings']} | | | "
                        f"{o['mean']:+.3f} [{o['lo']:+.3f}, {o['hi']:+.3f}] |")
    return rows


def write_page(fig: dict[str, Any]) -> None:
    lines = ["# The temporal ensemble's rate under a one-tick command delay (report seeds)", "",
             f"Rate {fig['rate']} against the job's {fig['base_rate']} (a chunk every 2 steps, each step the mean of "
             "the live chunks' predictions weighted exp(-rate x age)), the job's recipe refined, 200 `report` seeds "
             "paired per training (95% t interval, seeds better / worse). Command and why: the docstring of "
             "`benchmarks/ensemble_latency.py`; the choice was made on `tune` (robustness_training.md, x_te*).", "",
             f"| condition | training | rate {fig['rate']} | rate {fig['base_rate']} | difference |",
             "|---|---|---|---|---|"]
    lines += table_rows(fig) + table_rows(fig.get("pretrained") or {}, ", pretrained (before the refine stage)")
    (RESULTS / "ensemble_latency.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=Path, default=Path("runs/s12/report"))
    ap.add_argument("--rate", default="-0.01")
    ap.add_argument("--base", default="0.3")
    ap.add_argument("--pretrained", type=Path, default=None,
                    help="the same layout for the pretrained policies (before the refine stage), if measured")
    args = ap.parse_args()
    fig = figures(args.runs, args.rate, args.base)
    if not any(label in fig for label in CONDITIONS.values()):
        raise SystemExit(f"{args.runs}: no te{args.rate}/sN/<condition>/summary.json with its te{args.base} pair")
    if args.pretrained is not None:
        fig["pretrained"] = figures(args.pretrained, args.rate, args.base)
    write_result("ensemble_latency", fig, seed_range="report")
    write_page(fig)
    print((RESULTS / "ensemble_latency.md").read_text())


if __name__ == "__main__":
    main()
