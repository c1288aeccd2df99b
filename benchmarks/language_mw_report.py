"""The Meta-World MT10 page of the language benchmark (`bench_language.py report`):
results/language_metaworld.md and the `metaworld_*` keys of language.json, from the evaluations in
<out>/mw/eval* (eval = the recipe; eval_<cameras>_<tags> = its variants, paired with it by task and
seed; runs whose names differ only in a `seed<N>` tag are one recipe's training seeds)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import numpy as np

from vla.metrics import format_paired, paired_difference, t_interval

# a run folder's tag -> its name on the page and in the JSON keys; "plustop": a third camera, topview, recorded
# and seen beside the recipe's two (its own demos: `--out runs/bl_mw3 --mw-cameras corner2,behindGripper,topview`,
# its eval folder copied in as eval_plustop)
TAG_NAMES = {"kp": "keypoints", "plustop": "+ topview"}


def mw_tasks() -> list[str]:
    from sim.tasks.metaworld_tasks import MT10, task_name

    return [task_name(t) for t in MT10]


def run_parts(name: str) -> tuple[list[str], list[str]]:
    """An evaluation folder's name -> (its cameras, its named tags): eval_corner2_kp -> (["corner2"], ["keypoints"])."""
    from sim.tasks.metaworld_tasks import CAMERAS

    parts = name.removeprefix("eval").strip("_").split("_") if name != "eval" else []
    return [p for p in parts if p in CAMERAS], [TAG_NAMES.get(p, p) for p in parts if p not in CAMERAS]


def label(name: str) -> str:
    """eval -> "all cameras", eval_corner2 -> "corner2 only", eval_balanced -> "all cameras, balanced"."""
    cams, tags = run_parts(name)
    return ", ".join([" + ".join(cams) + " only" if cams else "all cameras", *tags])


def mw_report(args: argparse.Namespace, out: Path, rate: Any) -> tuple[list[str], dict[str, Any]]:
    """The Meta-World page (results/language_metaworld.md) and keys from out/mw/eval*."""
    evals = sorted(d for d in (out / "mw").glob("eval*") if d.is_dir())
    main = out / "mw" / "eval"
    if main not in evals:
        return [], {}
    lines = ["# Language benchmark: Meta-World MT10", "",
             "Commands: the docstring of `benchmarks/bench_language.py` (collect/train/eval/report with "
             f"`--family mw --out {args.out}`).", "",
             f"One multi-task tiny VLA (FiLM, centred instruction embeddings) by behaviour cloning of {args.mw_demos} "
             f"scripted demos per task, cameras {args.mw_cameras} at 84x84 (corner2 at its near pose, "
             "`sim.tasks.metaworld_tasks.NEAR_CORNER2`) + the 4-dim proprio; 30 held-out seeds per task (1000+), "
             "Meta-World's success criterion within its 500-step horizon.", ""]
    res: dict[str, Any] = {}
    per_run: dict[str, dict[str, float]] = {}
    outcomes: dict[str, dict[int, bool]] = {}  # per run: (task index, seed) -> success, to pair runs
    tasks = mw_tasks()
    for ev in evals:
        found = {d.parent.name: rate(d) for d in sorted(ev.glob("*/true"))}
        per_run[ev.name] = {t: s["success_rate"] for t, s in found.items() if s}
        outcomes[ev.name] = {tasks.index(t) * 1_000_000 + e["seed"]: bool(e["success"])
                             for t, s in found.items() if s and t in tasks for e in s["episodes_detail"]}
    mw = per_run["eval"]
    if not mw:
        return [], {}
    lo, hi = t_interval(np.array(list(outcomes["eval"].values()), float))
    res.update(metaworld_tasks=sorted(mw), metaworld_mean_success=sum(mw.values()) / len(mw),
               metaworld_mean_success_95=[lo, hi], metaworld_per_task=mw,
               metaworld_recipe={"demos_per_task": args.mw_demos, "cameras": args.mw_cameras})

    names = list(per_run)
    run_mean = {n: sum(v.values()) / max(len(v), 1) for n, v in per_run.items()}
    lines += ["| Meta-World task | " + " | ".join(label(n) for n in names) + " |", "|---" * (len(names) + 1) + "|"]
    for t in sorted(mw):
        lines.append(f"| {t} | " + " | ".join(f"{per_run[n].get(t, float('nan')):.2f}" for n in names) + " |")
    lines.append("| **mean** | " + " | ".join(f"**{run_mean[n]:.2f}** ({len(per_run[n])} tasks)" for n in names) + " |")
    lines += ["", f"All cameras: mean {res['metaworld_mean_success']:.3f}, 95% t interval over its "
              f"{len(outcomes['eval'])} episodes [{lo:.3f}, {hi:.3f}]."]
    variants = {}
    for name in names[1:]:
        if len(per_run[name]) == len(mw):
            variants[label(name)] = d = paired_difference(outcomes["eval"], outcomes[name])
            lines.append(f"- {label(name)} minus all cameras, paired by task and seed: {format_paired(d)}")
    if variants:
        res["metaworld_variants_minus_main"] = variants
    # training seeds of a recipe (`--mw-tag [<variant>_]seed<N> --overrides ... train.seed=<N>`): runs whose
    # names differ only in a seed<N> tag; eval = the recipe's seed 0, eval_kp = the keypoints' seed 0
    groups: dict[str, list[str]] = {}
    for n in names:
        if len(per_run[n]) == len(mw):
            groups.setdefault(re.sub(r"_seed\d+$", "", n), []).append(n)
    over_seeds: dict[str, dict[str, float]] = {}
    for base, runs in groups.items():
        if len(runs) < 2:
            continue
        means = {n: run_mean[n] for n in runs}
        mean = sum(means.values()) / len(means)
        seed_lo, seed_hi = t_interval(np.array(list(means.values())))
        cams, tags = run_parts(base)
        key = "metaworld_" + ("_".join(cams + tags) if base != "eval" else "recipe")
        if base == "eval":  # the old name for the recipe's seeds, kept for readers of that page
            res["metaworld_mean_success_training_seeds"] = means
        res[f"{key}_success_training_seeds"] = means
        res[f"{key}_mean_over_training_seeds"] = mean
        res[f"{key}_mean_over_training_seeds_95"] = [seed_lo, seed_hi]
        name = "the recipe" if base == "eval" else label(base)
        over_seeds[f"{name} ({len(runs)} seeds)"] = {t: sum(per_run[n][t] for n in runs) / len(runs) for t in mw}
        lines.append(f"- {name} over {len(means)} training seeds: "
                     + ", ".join(f"{label(n)} {m:.3f}" for n, m in means.items())
                     + f"; their mean {mean:.3f}, 95% t interval over training seeds [{seed_lo:.3f}, {seed_hi:.3f}]")
    if len(over_seeds) > 1:
        cols = list(over_seeds)
        lines += ["", "Per task, the mean over training seeds:", "", "| task | " + " | ".join(cols) + " |",
                  "|---" * (len(cols) + 1) + "|"]
        lines += [f"| {t} | " + " | ".join(f"{over_seeds[c][t]:.2f}" for c in cols) + " |" for t in sorted(mw)]
    reading = ("Reading (stops 29-30; the same demos and evaluation seeds throughout): the recipe is not stable "
               "across training runs. Three training seeds scored 0.85, 0.72 and 0.82 (push 0.87 / 0.17 / 0.83, "
               "pick-place 0.70 / 0.20 / 0.63): their mean is 0.80, the target, with a 95% interval over training "
               "seeds of [0.63, 0.97]: met on average, not by every run. Validation loss does not tell the runs "
               "apart: it falls monotonically in each, and the weakest run ends lowest (seed 1: 0.0118; seeds 0 and "
               "2: 0.0141, 0.0146), so choosing a checkpoint on it would keep the last one. The hand-side "
               "`behindGripper` view carries push, pick-place and peg (corner2 only: -0.17); drawing every task "
               "equally often (`balanced`) is within noise of the first run. Reach stays at 0.23-0.30 in every run "
               "of the recipe: its videos show the arm rising away from the goal, a red dot 1-2 pixels wide at the "
               "policy's 64x64 that the encoder's 2x2 average pooling keeps only as a quadrant. Spatial-softmax "
               "keypoints (`policy.vision_keypoints=32`, stop 30) lifted reach to 0.57 in one training seed (+0.33 "
               "[+0.15, +0.51] over the recipe's same seed, 10 seeds better / 0 worse) and not in the other (0.23, "
               "-0.07 [-0.24, +0.10]); over all tasks -0.003 and +0.033, paired with the recipe's run of the same "
               "training seed: no reliable gain, so the recipe stays without them. Stop 31: reach's failures miss "
               "the goal in 3D (`mw_reach_misses.py`, 12 held-out seeds of the recipe's first run: closest "
               "approach 6-15 cm, mostly in height, the hand at 0.24 m for a goal at 0.11 m, or low for a high one), "
               "so a third fixed view "
               "(`topview`, recorded and seen beside the two, `+ topview`: its own demos, collected after the "
               "first-frame fix below, training seed 0) was tried for the depth: reach 0.13, the mean 0.75, "
               "-0.100 [-0.143, -0.057] against the recipe's run of the same training seed and inside the "
               "recipe's own spread over seeds (0.72-0.85): no help, and reach is still unsolved. The same stop "
               "found that the first frame of every episode drew the previous episode's goal (Meta-World's reset "
               "moves the goal site without updating the positions the renderer reads; fixed in "
               "`sim.tasks.metaworld_tasks`, tested): re-evaluating the recipe's first run on reach with the fix "
               "gives the same 7 of 30 episodes, so the figures above stand. Stop 21's recipe (one corner2 camera "
               "at the MJCF's far pose, 50 demos per task): 0.65.")
    lines += ["", reading]
    wrong = {d.parent.name: rate(d) for d in sorted(main.glob("*/wrong"))}
    if any(wrong.values()):
        lines += ["", "Same-scene pairs with the other task's instruction (a policy that reads the instruction "
                  "drops to about 0 here):", "", "| task | true | other task's instruction |", "|---|---|---|"]
        lines += [f"| {t} | {mw.get(t, float('nan')):.2f} | {w['success_rate']:.2f} |" for t, w in wrong.items() if w]
    lines += ["", "Published MT10 results beside ours (the protocols differ): multi-task multi-headed SAC, online RL "
              "from the 39-dim state with millions of environment steps per task: 0.88 (Yu et al. 2019, arXiv "
              "1910.10897, one seed) and 0.61 when rerun over 10 seeds (Sodhani et al. 2021, CARE, arXiv "
              "2102.06177). Ours: behaviour cloning from pixels + proprio, Meta-World v3 (Farama 3.1.1) with "
              "positions drawn from each seed, on held-out seeds."]
    return lines, res
