"""Offline: can a conservative test-time selection beat the policy's noise-free chunk? On chunk-truth sets
(`vla wm chunk-truth`: candidate 0 is the noise-free chunk), pick the world model's best-scored candidate only
when its score beats candidate 0's by more than tau, else candidate 0; the gain over candidate 0 in true value
per tau. tau is read on the tune set; the report set is read once.

    python experiments/wm_margin_select.py runs/s6/wm runs/s7/wm_pointwise runs/s7/wm_rank \\
        --truth runs/s6/truth_tune runs/s6/truth_report

Writes experiments/results/wm_margin_select.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

TAUS = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3)


def gated_gain(scores: np.ndarray, values: np.ndarray, tau: float) -> dict[str, float | int]:
    """Mean true-value gain over candidate 0 of the margin-gated pick, states better / worse, and picks that
    were not candidate 0."""
    rows = np.arange(len(scores))
    top = scores.argmax(1)
    pick = np.where(scores[rows, top] - scores[:, 0] > tau, top, 0)
    g = values[rows, pick] - values[:, 0]
    return {"gain": round(float(g.mean()), 4), "better": int((g > 0).sum()), "worse": int((g < 0).sum()),
            "switched": int((pick != 0).sum())}


def main() -> None:
    from worldmodel.checkpoint import load_checkpoint
    from worldmodel.chunk_truth import load_truth, score_truth, values

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--truth", nargs="+", required=True)
    args = ap.parse_args()
    out: dict[str, dict[str, dict[str, dict[str, float | int]]]] = {}
    for wm in args.models:
        model = load_checkpoint(wm)[0]
        for folder in args.truth:
            arrays, meta = load_truth(folder)
            s, v = score_truth(model, arrays, meta), values(arrays)
            out.setdefault(wm, {})[folder] = {str(t): gated_gain(s, v, t) for t in TAUS}
            print(wm, folder, {t: r["gain"] for t, r in out[wm][folder].items()}, flush=True)
    path = Path(__file__).parent / "results" / "wm_margin_select.json"
    path.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
