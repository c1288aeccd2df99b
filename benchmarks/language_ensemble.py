"""`sort` (the language benchmark's same-scene task) executed with the temporal ensemble, against the job's 4 steps a
chunk, on the same seeds: does the test-time gain on pick_place (`ensemble.md`) carry over to the
language benchmark, and does it change how the instruction is used?

A fresh training of `language.md`'s recipe (1,000 noisy-expert demos, FiLM, centred instruction
embeddings, 15,000 steps at batch 64), then every instruction ablation both ways:

  python benchmarks/bench_language.py collect --family sort --sort-demos 1000 --noise 0.05 --out runs/bl_sort
  python benchmarks/bench_language.py train --family sort --steps 15000 --out runs/bl_sort
  python benchmarks/language_ensemble.py --out runs/bl_sort --episodes 100   # -> results/language_ensemble.md

`same_scene_*` in language.json stay the first training's (runs/bench_language); this run's figures go
under `sort_rerun_ensemble` (both executions and their paired differences).
"""

from __future__ import annotations

import argparse
import json

from bench_language import SORT_ABLATIONS, eval_sort
from harness import ROOT

from sim.evaluate import read_seed_outcomes
from vla.metrics import format_paired, paired_difference

RESULTS = ROOT / "benchmarks" / "results"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bl_sort")
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--rate", type=float, default=0.3)
    ap.add_argument("--every", type=int, default=2, help="a new chunk every N steps (the main job's 2)")
    ap.add_argument("--n-action-steps", type=int, default=4, help="the plain execution: actions run from each chunk")
    ap.add_argument("--report", action="store_true", help="only the page, from the evaluations already run")
    args = ap.parse_args()
    from vla.train.trainer import latest_checkpoint

    out = (ROOT / args.out).resolve()
    ck = latest_checkpoint(out / "sort" / "train")
    if ck is None:
        raise SystemExit(f"{out / 'sort' / 'train'}: no checkpoint (run bench_language.py train first)")
    plain_dir = out / "sort" / f"eval_{args.episodes}"
    te_dir = out / "sort" / f"eval_te{args.rate:g}_e{args.every}_{args.episodes}"
    if not args.report:
        eval_sort(args, ck, plain_dir, out / "logs", plain_dir.name)
        eval_sort(args, ck, te_dir, out / "logs", te_dir.name,
                  (f"temporal_ensemble={args.rate}", f"temporal_ensemble_every={args.every}"))
    res: dict = {"checkpoint": str(ck.relative_to(ROOT)), "episodes": args.episodes, "rate": args.rate,
                 "every": args.every}
    lines = ["# `sort` with the temporal ensemble", "",
             f"Commands: the docstring of `benchmarks/language_ensemble.py`. Checkpoint `{res['checkpoint']}` "
             f"(a second training of `language.md`'s recipe), {args.episodes} held-out seeds (1000+), every "
             f"instruction ablation executed {args.n_action_steps} steps a chunk and with the temporal ensemble "
             f"(rate {args.rate:g}, a chunk every {args.every} steps, each step the age-weighted mean of every "
             "live chunk's prediction: the main job's setting). Paired by seed, 95% t interval (seeds better / "
             "worse). A goal-blind policy is right 1 time in 6.", "",
             "| instruction | 4 steps a chunk | temporal ensemble | ensemble minus 4 steps |", "|---|---|---|---|"]
    for name in SORT_ABLATIONS:
        a, b = read_seed_outcomes(plain_dir / name), read_seed_outcomes(te_dir / name)
        if a is None or b is None:
            continue
        d = paired_difference(a, b)
        pa, pb = sum(a.values()) / len(a), sum(b.values()) / len(b)
        res[name] = {"plain": pa, "ensemble": pb, "ensemble_minus_plain": d}
        lines.append(f"| {name} | {pa:.2f} | {pb:.2f} | {format_paired(d)} |")
    for key in ("plain", "ensemble"):
        if "true" in res and "heldout" in res:
            res[f"paraphrase_gap_{key}"] = res["true"][key] - res["heldout"][key]
    if "paraphrase_gap_plain" in res:
        lines += ["", f"Paraphrase gap (true minus held-out phrasing): {res['paraphrase_gap_plain']:+.2f} at 4 steps "
                  f"a chunk, {res['paraphrase_gap_ensemble']:+.2f} with the ensemble."]
    lines += ["", "The first training of the recipe (`language.md`, 50 seeds 1000-1049, not kept here) scored 0.68 "
              "with the true instruction and 0.38 with the held-out phrasing at 4 steps a chunk; this one scores "
              f"{res.get('true', {}).get('plain', float('nan')):.2f} on 100 seeds. Two trainings of one recipe differ "
              "that much here, as the job's pick_place recipe did on the GPU (0.675 and 0.79). The issue's "
              "`same_scene_*` figures in language.json stay the first training's; this run is under "
              "`sort_rerun_ensemble`."]
    (RESULTS / "language_ensemble.md").write_text("\n".join(lines) + "\n")
    path = RESULTS / "language.json"
    table = json.loads(path.read_text()) if path.exists() else {}
    table["sort_rerun_ensemble"] = res
    path.write_text(json.dumps(table, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
