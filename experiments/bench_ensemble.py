"""Temporal ensembling of action chunks at evaluation (`temporal_ensemble=RATE`, vla/policy/ensemble.py)
against executing 4 steps of each chunk (the main job's setting), paired by seed, on pick_place
checkpoints of the main job's pretraining recipe (400 demos, 7000 steps, noise scale 0).

  E="task=pick_place episodes=200 n_action_steps=4 videos=0 workers=2 seed_range=collect"
  C=runs/main28/train/checkpoints/step_00007000
  vla eval $C $E seed_offset=3000 out_dir=runs/te/main28_plain_3000         # fresh seeds: the rate was
  vla eval $C $E seed_offset=3000 temporal_ensemble=0.3 out_dir=runs/te/main28_te03_3000   # chosen on 1000+
  vla eval $C $E seed_offset=1000 temporal_ensemble=0.3 out_dir=runs/te/main28_te03
  for r in pp_base main27 d2k drop30b; do   # other trainings of the recipe (their plain runs: eval_torch)
    vla eval runs/$r/train/checkpoints/step_00007000 $E seed_offset=1000 temporal_ensemble=0.3 out_dir=runs/te/${r}_te03
  done
  # Meta-World MT10's recipe (language_metaworld.md), the four tasks below 0.97, per training seed
  for t in mw_reach mw_push mw_pick_place mw_peg_insert_side; do
    vla eval runs/bl_mw/mw/train/checkpoints/step_00010000 task=$t episodes=30 seed_range=collect \
        seed_offset=1000 n_action_steps=4 "cameras=[corner2,behindGripper]" image_size=84 workers=2 videos=0 \
        temporal_ensemble=0.3 \
        out_dir=runs/bl_mw/mw/eval_te03/$t/true     # train_seed1 -> eval_te03_seed1
  done
  # a new chunk every 2 or 4 steps, the ensemble's mean between (temporal_ensemble_every)
  for n in 2 4; do
    vla eval $C $E seed_offset=1000 temporal_ensemble=0.3 temporal_ensemble_every=$n out_dir=runs/te/main28_te03_e$n
  done
  for r in pp_base main27 d2k; do
    vla eval runs/$r/train/checkpoints/step_00007000 $E seed_offset=1000 temporal_ensemble=0.3 \
        temporal_ensemble_every=2 out_dir=runs/te/${r}_te03_e2
  done
  # the executor of the deploy path (mode ensemble): simulated time, the joint-space adapter,
  # chunks delivered 1, 2 or 4 ticks (50-200 ms) after their trigger, against sync and aligned
  python benchmarks/bench_selection.py --checkpoint $C --episodes 200 --ns 1 --mode ensemble \
      --delay-ticks D --tag _ens_dD --out experiments/results/ensemble_executor_dD.json   # D = 1, 2, 4
  python benchmarks/bench_selection.py --checkpoint $C --episodes 200 --ns 1 --blend 2 --delay-ticks 1 \
      --no-sync --tag _aligned_d1 --out experiments/results/ensemble_executor_d1.json
  python experiments/bench_ensemble.py        # -> results/ensemble.{md,json}

The rate and stride are chosen on the protocol's `tune` seeds by `ensemble_sweep.py` (ensemble_sweep.md);
the sweep first run in-process on the job's seeds 1000-1199 was typed into this script and is gone.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sim.evaluate import read_seed_outcomes
from vla.metrics import format_paired, paired_difference, t_interval

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments/results"
RUNS = ROOT / "runs"
PAIRS = {  # name -> (plain evaluation, temporal ensemble), each a folder with summary.json
    "main28, fresh seeds 3000-3199": ("te/main28_plain_3000", "te/main28_te03_3000"),
    "main28, the job's seeds 1000-1199": ("main28/eval_torch", "te/main28_te03"),
    "pp_base (an earlier session's rerun of the recipe)": ("pp_base/eval_torch", "te/pp_base_te03"),
    "main27 (before pretraining was seeded)": ("main27/eval_torch", "te/main27_te03"),
    "d2k (2000 demos)": ("d2k/eval_torch", "te/d2k_te03"),
    "drop30b (30% demos with drops)": ("drop30b/eval_torch", "te/drop30b_te03"),
}


# a new chunk every n steps (temporal_ensemble_every), main28 on the job's seeds
EVERY = {1: "te/main28_te03", 2: "te/main28_te03_e2", 4: "te/main28_te03_e4"}
EVERY2_TRAININGS = {"main28": ("main28/eval_torch", "te/main28_te03_e2"),
                    "pp_base": ("pp_base/eval_torch", "te/pp_base_te03_e2"),
                    "main27": ("main27/eval_torch", "te/main27_te03_e2"),
                    "d2k (2000 demos)": ("d2k/eval_torch", "te/d2k_te03_e2")}
EXECUTOR_DELAYS = (1, 2, 4)  # ticks: results/ensemble_executor_d{D}.json


def read_pair(plain: str, ens: str) -> tuple[dict[int, bool], dict[int, bool]] | None:
    """The per-seed outcomes of two evaluations under runs/ (None when either has not run)."""
    a, b = read_seed_outcomes(RUNS / plain), read_seed_outcomes(RUNS / ens)
    return None if a is None or b is None else (a, b)


def every_section(out: dict) -> list[str]:
    pa = read_seed_outcomes(RUNS / "main28/eval_torch")
    if pa is None:
        return []
    lines = ["", "A new chunk every n steps, the ensemble's mean of the chunks already predicted between "
             "(`temporal_ensemble_every=n`; main28, the job's seeds 1000-1199):", "",
             "| n | policy calls | success | minus 4 steps a chunk |", "|---|---|---|---|"]
    out["every"] = {}
    for n, folder in EVERY.items():
        pb = read_seed_outcomes(RUNS / folder)
        if pb is None:
            continue
        d = paired_difference(pa, pb)
        out["every"][str(n)] = {"success": float(np.mean(list(pb.values()))), "minus_plain": d}
        lines.append(f"| {n} | {4 / n:g}x the job's | {np.mean(list(pb.values())):.3f} | {format_paired(d)} |")
    rows, means = [], []
    for name, (plain, e2) in EVERY2_TRAININGS.items():
        pair = read_pair(plain, e2)
        if pair is None:
            continue
        pa2, pb2 = pair
        d = paired_difference(pa2, pb2)
        means.append(d["mean"])
        out["every"].setdefault("2_trainings", {})[name] = {"plain": float(np.mean(list(pa2.values()))),
                                                           "every2": float(np.mean(list(pb2.values()))),
                                                           "minus_plain": d}
        rows.append(f"| {name} | {np.mean(list(pa2.values())):.3f} | {np.mean(list(pb2.values())):.3f} | "
                    f"{format_paired(d)} |")
    if len(means) >= 2:
        m, (lo, hi) = float(np.mean(means)), t_interval(np.array(means))
        out["every"]["2_over_trainings"] = {"per_training": means, "mean": m, "lo": lo, "hi": hi}
        lines += ["", "A chunk every 2 steps (the job's setting) on trainings of the recipe, the job's seeds:",
                  "", "| checkpoint | 4 steps a chunk | ensemble, a chunk every 2 steps | difference |",
                  "|---|---|---|---|", *rows, "",
                  f"Over these {len(means)} trainings: mean {m:+.3f}, 95% t interval over trainings "
                  f"[{lo:+.3f}, {hi:+.3f}]."]
    return lines


def executor_section(out: dict) -> list[str]:
    """The deploy path's executor (real/executor.py, mode ensemble) in simulated time."""
    rows, out["executor"] = [], {}
    for d in EXECUTOR_DELAYS:
        f = RESULTS / f"ensemble_executor_d{d}.json"
        if not f.exists():
            continue
        r = json.loads(f.read_text())
        entry: dict = {"sync": r["sync"]["success"], "sync_jump": r["sync"]["jump"]}
        for key, label in ((f"n1_ens_d{d}", "ensemble"), (f"n1_aligned_d{d}", "aligned")):
            if key in r:
                entry[label] = {k: r[key][k] for k in ("success", "minus_sync", "jump")}
        if f"n1_ens_d{d}" in r and f"n1_aligned_d{d}" in r:
            pa, pb = (dict(enumerate(r[k]["per_seed_success"])) for k in (f"n1_aligned_d{d}", f"n1_ens_d{d}"))
            entry["ensemble_minus_aligned"] = paired_difference(pa, pb)
        out["executor"][str(d)] = entry
        for label in ("ensemble", "aligned"):
            if label in entry:
                e = entry[label]
                rows.append(f"| {d * 50} ms | {label} | {entry['sync']:.3f} | {e['success']:.3f} | "
                            f"{format_paired(e['minus_sync'])} | {entry['sync_jump']:.2f} / {e['jump']:.2f} |")
    if not rows:
        return []
    vs = [f"{int(d) * 50} ms: {format_paired(e['ensemble_minus_aligned'])}" for d, e in out["executor"].items()
          if "ensemble_minus_aligned" in e]
    tail = ["", "Ensemble minus aligned (2-tick ramp, the deploy default before), paired: " + "; ".join(vs) + "."]
    tail = tail if vs else []
    return ["", "In the deploy path's executor (`executor.mode=ensemble`, `real/chunk_queue.TickEnsemble`): main28 "
            "behind the joint-space adapter, the simulator's arm in simulated time, each chunk delivered D ticks "
            "after its trigger, a new request whenever the worker is free, 200 seeds 1000-1199, paired with `sync` "
            "(8 steps a chunk, the robot holding while it infers) at the same delay. Jump: the action change at a "
            "chunk switch over the median step (joint space). Command: the docstring.", "",
            "| delay | executor | sync | executor's success | minus sync | jump (sync / executor) |",
            "|---|---|---|---|---|---|", *rows, *tail]


MW_TASKS = ("mw_reach", "mw_push", "mw_pick_place", "mw_peg_insert_side")
MW_RUNS = {"seed 0": ("eval", "eval_te03"), "seed 1": ("eval_seed1", "eval_te03_seed1")}


def metaworld(out: dict) -> list[str]:
    """The ensemble on Meta-World's four hardest MT10 tasks, per training seed of the recipe, paired by
    task and seed with the recipe's own evaluations (runs/bl_mw/mw/<eval>/<task>/true)."""
    lines = ["", "## Meta-World MT10 (the language recipe, `language_metaworld.md`)", "",
             "The four tasks the recipe does not solve (the other six score 0.93-1.00 and were not re-run), "
             "30 held-out seeds each, 4 steps a chunk against the ensemble at rate 0.3.", "",
             "| training | " + " | ".join(MW_TASKS) + " | ensemble minus 4 steps, paired by task and seed |",
             "|---|" + "---|" * (len(MW_TASKS) + 1)]
    out["metaworld"] = {}
    for name, (plain, ens) in MW_RUNS.items():
        a: dict[tuple[str, int], bool] = {}
        b: dict[tuple[str, int], bool] = {}
        cells = []
        for t in MW_TASKS:
            pair = read_pair(f"bl_mw/mw/{plain}/{t}/true", f"bl_mw/mw/{ens}/{t}/true")
            if pair is None:
                break
            sa, sb = pair
            a.update({(t, k): v for k, v in sa.items()})
            b.update({(t, k): v for k, v in sb.items()})
            cells.append(f"{np.mean(list(sa.values())):.2f} -> {np.mean(list(sb.values())):.2f}")
        else:
            d = paired_difference(a, b)
            out["metaworld"][name] = {"tasks": list(MW_TASKS), "plain": float(np.mean(list(a.values()))),
                                      "ensemble": float(np.mean(list(b.values()))), "ensemble_minus_plain": d}
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {format_paired(d)} |")
    if out["metaworld"]:
        lines += ["", "Over the ten tasks, were the six solved ones to score as they did with 4 steps a chunk: "
                  + ", ".join(f"{k} {v['ensemble_minus_plain']['mean'] * len(MW_TASKS) / 10:+.3f}"
                              for k, v in out["metaworld"].items())
                  + " on the recipe's means (0.853 and 0.723 for seeds 0 and 1)."]
    return lines


def main() -> None:
    rows, out = [], {"rate": 0.3, "pairs": {}}
    pooled_a: dict[tuple[str, int], bool] = {}
    pooled_b: dict[tuple[str, int], bool] = {}
    for name, (plain, ens) in PAIRS.items():
        pair = read_pair(plain, ens)
        if pair is None:
            print(f"skipped {name}: runs/{plain} or runs/{ens} has no summary.json")
            continue
        pa, pb = pair
        if set(pa) != set(pb):
            raise ValueError(f"{name}: the two evaluations were not run on the same seeds")
        d = paired_difference(pa, pb)
        if "job's seeds" not in name:  # main28 once, on its fresh seeds
            pooled_a.update({(name, k): v for k, v in pa.items()})
            pooled_b.update({(name, k): v for k, v in pb.items()})
        out["pairs"][name] = {"plain": plain, "ensemble": ens, "plain_success": float(np.mean(list(pa.values()))),
                              "ensemble_success": float(np.mean(list(pb.values()))), "ensemble_minus_plain": d}
        rows.append(f"| {name} | {np.mean(list(pa.values())):.3f} | {np.mean(list(pb.values())):.3f} | "
                    f"{format_paired(d)} |")
    means = [p["ensemble_minus_plain"]["mean"] for k, p in out["pairs"].items() if "job's seeds" not in k]
    if len(means) >= 2:
        m, (lo, hi) = float(np.mean(means)), t_interval(np.array(means))
        out["over_trainings"] = {"per_training": means, "mean": m, "lo": lo, "hi": hi,
                                 "note": "one pair per training (main28 on its fresh seeds)"}
        out["pooled_episodes"] = paired_difference(pooled_a, pooled_b)
    lines = ["# Temporal ensembling of action chunks", "",
             "Command and protocol: the docstring of `experiments/bench_ensemble.py`. pick_place, 200 seeds per row,",
             "the policy queried at every step and the executed action the weighted mean of every live chunk's",
             "prediction for that step, weight exp(-0.3 x age) (`temporal_ensemble=0.3`), against executing 4",
             "steps of each chunk (`n_action_steps=4`, the job's setting before the ensemble). Paired by seed, "
             "95% t "
             "interval (seeds better / worse).", "",
             "| checkpoint | 4 steps a chunk | temporal ensemble 0.3 | ensemble minus 4 steps |", "|---|---|---|---|",
             *rows, ""]
    if "over_trainings" in out:
        o = out["over_trainings"]
        lines += [f"Over the {len(means)} trainings (one pair each, main28 on its fresh seeds): mean "
                  f"{o['mean']:+.3f}, 95% t interval over trainings [{o['lo']:+.3f}, {o['hi']:+.3f}]; pooled over "
                  f"their {out['pooled_episodes']['seeds']} (training, seed) pairs: "
                  f"{format_paired(out['pooled_episodes'])}. Four of the five trainings gain; the one whose demos "
                  "drop the cube and retry does not.", ""]
    lines += ["The rate and the stride are chosen on the tune seeds: `ensemble_sweep.md`."]
    lines += every_section(out)
    lines += executor_section(out)
    lines += metaworld(out)
    (RESULTS / "ensemble.json").write_text(json.dumps(out, indent=1))
    (RESULTS / "ensemble.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
