"""Does the world model tell chunks apart (issue 63)? The chunk-level figures of a world model on chunk-truth
sets (`vla wm chunk-truth`: K candidate chunks per state of a policy's own episodes, each executed and
continued in the simulator), from `vla wm eval WM --truth SET ... --out DIR`. Writes
benchmarks/results/worldmodel_chunks.json and .md.

    D=runs/s6   # runs/s6/wm63.sh: the commands, in order
    CK=runs/main63/train/checkpoints/step_00003000     # the main job's pretrained policy (0.81 on report)
    vla wm chunk-truth $CK seed_range=tune episodes=20 states_per_episode=3 noisy=5 perturbed=2 out=$D/truth_tune
    vla wm chunk-truth $CK seed_range=report episodes=20 states_per_episode=3 noisy=5 perturbed=2 out=$D/truth_report
    vla wm train runs/main63/demos.zarr runs/main63/refine/store.zarr --out $D/wm      # the default preset
    vla wm eval $D/wm --truth $D/truth_tune --truth $D/truth_report --out $D/wm_eval
    python benchmarks/bench_wm_chunks.py --eval $D/wm_eval/chunk_truth.json --label "state model, default preset"
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from results_io import RESULTS, write_result

TARGETS = {"chunk_spearman": 0.5, "chunk_auroc_best_vs_worst": 0.8}
KEYS = ("chunk_spearman", "chunk_auroc_best_vs_worst", "states", "states_that_order", "regret", "default_regret",
        "gain_over_default", "picked_value", "best_value")


def block(report: dict[str, Any]) -> dict[str, Any]:
    return {k: (round(report[k], 4) if isinstance(report[k], float) else report[k]) for k in KEYS if k in report}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval", type=Path, required=True, help="chunk_truth.json that `vla wm eval --truth` wrote")
    ap.add_argument("--label", default="state model, default preset", help="what the model is")
    args = ap.parse_args()
    reports = json.loads(args.eval.read_text())
    sets = {}
    for path, r in reports.items():
        meta = json.loads((Path(path) / "meta.json").read_text())
        sets[path] = {"task": r["task"], "seed_range": r["seed_range"], "policy": meta["config"]["policy"],
                      "candidates": 1 + meta["config"]["noisy"] + meta["config"]["perturbed"], **block(r)}
    report = [s for s in sets.values() if s["seed_range"] == "report"]
    figures: dict[str, Any] = {"model": args.label, "sets": sets}
    if report:
        r = report[0]
        figures |= {k: r[k] for k in TARGETS} | {f"{k}_target_met": bool(r[k] is not None and r[k] >= t)
                                                 for k, t in TARGETS.items()}
    write_result("worldmodel_chunks", figures, seed_range="report" if report else "tune",
                 key_figures=list(TARGETS) if report else None)
    lines = ["# Does the world model tell chunks apart? (issue 63)", "",
             f"Model: {args.label}. Commands: the docstring of `benchmarks/bench_wm_chunks.py`. Within-state "
             "Spearman between the model's score and the candidate's true value (states whose candidates do not "
             "all tie), AUROC of the best candidate against the worst, and the regret of executing the model's "
             "pick against the best candidate (and of the noise-free chunk, which runs without selection).", "",
             "| set | seeds | states (ordered) | candidates | Spearman | best-vs-worst AUROC | regret of the pick | "
             "regret of the noise-free chunk | pick minus noise-free |", "|---|---|---|---|---|---|---|---|---|"]
    def cell(row: dict[str, Any], k: str) -> str:
        return "n/a" if row.get(k) is None else f"{row[k]:.3f}"

    for path, s in sets.items():
        lines.append(f"| `{path}` | {s['seed_range']} | {s['states']} ({s['states_that_order']}) | "
                     f"{s['candidates']} | {cell(s, 'chunk_spearman')} | {cell(s, 'chunk_auroc_best_vs_worst')} | "
                     f"{cell(s, 'regret')} | {cell(s, 'default_regret')} | {cell(s, 'gain_over_default')} |")
    if report:
        lines += ["", "Targets on the report set: Spearman >= 0.5 ("
                  + ("met" if figures["chunk_spearman_target_met"] else "not met") + "), AUROC >= 0.8 ("
                  + ("met" if figures["chunk_auroc_best_vs_worst_target_met"] else "not met") + ")."]
    for path, s in sets.items():
        if s.get("gain_over_default") is not None:
            lines += ["", f"`{path}`: executing the model's pick instead of the noise-free chunk changes the true "
                      f"value by {s['gain_over_default']:+.3f} a state; picking the best candidate would gain "
                      f"{s['default_regret']:+.3f} (the room test-time selection has)."]
    (RESULTS / "worldmodel_chunks.md").write_text("\n".join(lines) + "\n")
    print((RESULTS / "worldmodel_chunks.md").read_text())


if __name__ == "__main__":
    main()
