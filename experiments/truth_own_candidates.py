"""A chunk-truth set with only the policy's own candidates (its noise-free chunk and samples; the perturbed copies
left out), the same states and outcomes: does a model trained on chunk outcomes learn the order of the policy's
samples better without the perturbed copies, which nearly always fail and so dominate the pairs
(benchmarks/results/worldmodel_notes.md, "The chunk figures against their controls")?

    python experiments/truth_own_candidates.py runs/s15/truth_collect_det runs/s15/truth_collect_own
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from worldmodel.chunk_truth import load_truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", type=Path, help="a chunk-truth set (vla wm chunk-truth)")
    ap.add_argument("out", type=Path, help="the new set's folder")
    args = ap.parse_args()
    arrays, meta = load_truth(args.source)
    keep = [i for i, k in enumerate(meta["candidate_kinds"]) if k != "perturbed"]
    for k in ("chunks", "success", "steps"):
        arrays[k] = arrays[k][:, keep]
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out / "truth.npz", **arrays)
    meta["config"]["perturbed"] = 0
    meta["candidates"] = len(keep)
    meta["candidate_kinds"] = [meta["candidate_kinds"][i] for i in keep]
    meta["sliced_from"] = str(args.source)
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1))
    print(f"{args.out}: {arrays['chunks'].shape[0]} states x {len(keep)} candidates")


if __name__ == "__main__":
    main()
