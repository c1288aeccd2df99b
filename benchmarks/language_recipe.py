"""`sort` (the language benchmark's same-scene task) trained and executed with the main job's recipe: does what lifted
the job's pick_place policy lift the language benchmark to its 85%?

The main job's camera policy gained from three settings none of the language runs used
(`vla/configs/job/default.yaml`): lr 1e-3 instead of 3e-4 (main_job_notes.md), every chunk from
the flow prior's mean at inference (`noise_scale=0`, +0.21 on pick_place: noise_scale.md) and the
temporal ensemble at rate 0.3 with a chunk every 2 steps (+0.07 on pick_place, +0.18 on sort:
ensemble.md, language_ensemble.md). Here: the alias + FiLM recipe of `language.md` (1,000
noisy-expert demos, agentview + wrist at 84x84 and the proprio, instruction aliases, FiLM, centred
instruction embeddings, 20,000 steps at batch 64) at lr 1e-3, then every instruction ablation
executed two ways on the same held-out seeds: `plain` (4 steps a chunk at the checkpoint's noise,
as every earlier language figure) and `job` (the job's execution):

  python benchmarks/bench_language.py collect --family sort --sort-demos 1000 --noise 0.05
  python benchmarks/language_recipe.py train --steps 20000
  python benchmarks/language_recipe.py eval --episodes 100
  python benchmarks/language_recipe.py train --steps 20000 --train-seed 1   # a second training
  python benchmarks/language_recipe.py eval --episodes 100 --train-seed 1
  python benchmarks/language_recipe.py report --device-run runs/device_sort2

Training runs one thread per process unless OMP_NUM_THREADS is set (`harness.ENV`): alone on this
2-core machine, `OMP_NUM_THREADS=2 python benchmarks/language_recipe.py train ...` takes ~95 min for the
20,000 steps instead of ~160.

`--variant NAME` (report): a variant of the recipe trained and evaluated under another `--out`, paired on
the evaluation seeds with the recipe's own run of the same training seed and step
(`language_recipe_<NAME>.md`, language.json's `sort_job_recipe_<NAME>`). `turn_late`: demos whose expert
turns the hand only over the cube (`sim.experts.native`), against sort's grasps that keep the starting yaw:

  python benchmarks/bench_language.py collect --family sort --sort-demos 1000 --noise 0.05 \
      --out runs/bench_language_late --expert expert_turn_late=true expert_rot_speed=0.3
  for s in 3 0 1 2; do   # ~100 min a training alone here (its 15,000-step checkpoint is the one evaluated)
    OMP_NUM_THREADS=2 python benchmarks/language_recipe.py train --train-seed $s --out runs/bench_language_late
    python benchmarks/language_recipe.py eval --train-seed $s --eval-steps 15000 --settings job,grounded \
        --out runs/bench_language_late
  done
  python benchmarks/language_recipe.py report --variant turn_late --eval-steps 15000 --out runs/bench_language_late \
      --headline

More trainings of a variant (`--train-seed 0`, `1`, ...; the recipe's 20,000-step schedule, evaluated at 15,000)
are averaged like the recipe's; `report --variant NAME --headline` makes that mean the issue's headline once it
has as many training seeds as the recipe's (four).

`--device-run`: the same recipe trained on a lent H200 (`tools/device/job_sort.py` with
`JOB_LR=1e-3 JOB_BATCH=128`, 4,000 steps; its evaluations unpacked into RUN/eval/<name>), shown
beside. The job's execution at the last step, averaged over the training seeds run, becomes the
issue's `same_scene_*` keys of language.json (the recipe the benchmark recommends); the earlier
recipe's stay under `same_scene_lr3e4`.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
from bench_language import SAME_SCENE_KEYS, SORT_ABLATIONS, eval_sort, sort_aliases
from harness import ROOT, sh, vla

from sim.evaluate import read_seed_outcomes
from vla.metrics import format_paired, paired_difference, t_interval, wilson_interval

RESULTS = ROOT / "benchmarks" / "results"
# how an evaluation executes the policy (tools/device/job_sort.py names them the same)
SETTINGS = {"plain": (), "ns0": ("noise_scale=0",),
            "job": ("noise_scale=0", "temporal_ensemble=0.3", "temporal_ensemble_every=2")}
# the job's execution with unseen instructions grounded on the training phrasings (the aliases file; its
# instruction_vocab= is added at run time): only the held-out phrasing can differ from `job`
SETTINGS["grounded"] = SETTINGS["job"]
RECIPE = ("policy.language_norm=true", "policy.language_film=true", "train.lr=1e-3")
# language.json's sort_job_recipe keys: an evaluation, a paired difference of two executions, the grounded gap
ROW = re.compile(r"seed(\d+)_step(\d+)_(" + "|".join(SETTINGS) + ")")
PAIR = re.compile(r"seed(\d+)_step(\d+)_(?!grounded_heldout_minus)(\w+?)_minus_(\w+)_(true|heldout)")
GAP = re.compile(r"seed(\d+)_step(\d+)_grounded_heldout_minus_job_true")
DEVICE_PAIR = re.compile(r"device_(\w+)_minus_(\w+)")


def tag(seed: int) -> str:
    """A run's folder suffix: none for training seed 0 (the first run), _s<seed> for the others."""
    return f"_s{seed}" if seed else ""


def train(args: argparse.Namespace, out: Path) -> None:
    sh(vla("train", out / "demos.zarr", "--out", out / f"train_recipe{tag(args.train_seed)}", "--resume",
           f"train.steps={args.steps}", f"train.batch_size={args.batch_size}", "train.ckpt_every=5000",
           "train.val_every=2500", "train.progress=false", f"train.seed={args.train_seed}", *RECIPE,
           f"data.instruction_aliases={sort_aliases(out)}"),
       out.parent / "logs" / f"train_recipe{tag(args.train_seed)}_sort.log")


def evaluate(args: argparse.Namespace, out: Path) -> None:
    for step in [int(x) for x in args.eval_steps.split(",")]:
        ck = out / f"train_recipe{tag(args.train_seed)}" / "checkpoints" / f"step_{step:08d}"
        if not ck.exists():
            print(f"skipped: {ck} does not exist yet", flush=True)
            continue
        for setting in args.settings.split(","):
            evals = out / f"eval_recipe{tag(args.train_seed)}_{step}_{setting}_{args.episodes}"
            # plain and ns0 are references for the job's execution: their wrong and neutral instructions
            # (failures, so the longest episodes) are known from every earlier run to score ~0
            names = {"job": tuple(SORT_ABLATIONS), "plain": ("true", "heldout"),
                     "grounded": ("heldout",)}.get(setting, ("true",))
            vocab = (f"instruction_vocab={sort_aliases(out)}",) if setting == "grounded" else ()
            eval_sort(args, ck, evals, out.parent / "logs", evals.name, (*SETTINGS[setting], *vocab), names)


Outcomes = dict[str, dict[int, bool]]  # per instruction setting: success by evaluation seed


def rates(folder: Path) -> tuple[Outcomes, dict[str, float]]:
    o = {k: v for k in SORT_ABLATIONS if (v := read_seed_outcomes(folder / k)) is not None}
    return o, {k: sum(v.values()) / len(v) for k, v in o.items()}


def measure(args: argparse.Namespace, out: Path, res: dict[str, Any]) -> dict[tuple[int, int, str], Outcomes]:
    """Every training seed's evaluations found under `out` into `res` (rates, Wilson intervals, paired
    differences); seeds whose runs are not here keep what `res` already holds. Returns the per-episode
    outcomes it read, by (training seed, step, setting)."""
    seeds = [0, *sorted(int(d.name.rsplit("_s", 1)[1]) for d in out.glob("train_recipe_s[0-9]*"))]
    read: dict[tuple[int, int, str], Outcomes] = {}
    for seed in seeds:
        for step in [int(x) for x in args.eval_steps.split(",")]:
            per = {s: rates(out / f"eval_recipe{tag(seed)}_{step}_{s}_{args.episodes}") for s in SETTINGS}
            read.update({(seed, step, s): o for s, (o, _) in per.items()})
            for s, (o, r) in per.items():
                if "true" not in r:
                    continue
                lo, hi = wilson_interval(sum(o["true"].values()), len(o["true"]))
                gap = r["true"] - r["heldout"] if "heldout" in r else None
                entry = {**r, "wilson95_true": [lo, hi], "paraphrase_gap": gap}
                if s == "job" and "heldout" in per["grounded"][1]:
                    entry["heldout_grounded"] = per["grounded"][1]["heldout"]
                    entry["paraphrase_gap_grounded"] = r["true"] - entry["heldout_grounded"]
                res[f"seed{seed}_step{step}_{s}"] = entry
            pairs = [(a, b, k) for a, b in (("plain", "job"), ("plain", "ns0"), ("ns0", "job"))
                     for k in ("true", "heldout")]
            for a, b, k in [*pairs, ("job", "grounded", "heldout")]:
                if k in per[a][0] and k in per[b][0]:
                    res[f"seed{seed}_step{step}_{b}_minus_{a}_{k}"] = paired_difference(per[a][0][k], per[b][0][k])
            if "heldout" in per["grounded"][0] and "true" in per["job"][0]:
                # the paraphrase gap left with grounding, paired by seed: held-out grounded minus true
                res[f"seed{seed}_step{step}_grounded_heldout_minus_job_true"] = paired_difference(
                    per["job"][0]["true"], per["grounded"][0]["heldout"])
    return read


HEADLINE_KEYS = ("true", "wrong", "neutral", "heldout", "paraphrase_gap", "paraphrase_gap_grounded")


def over_trainings(res: dict[str, Any], step: int, setting: str = "job") -> dict[str, Any] | None:
    """One execution at one checkpoint step averaged over the training seeds in `res` (measure()'s rows):
    each figure over the seeds that have it (a seed's evaluations may still be running), the gaps each
    seed's own (true minus held-out on the same evaluation seeds) averaged, and a 95% t interval of the true
    instruction's rate over training seeds; None when no seed has the true instruction at that step."""
    finals = {int(m[1]): v for k, v in res.items()
              if (m := ROW.fullmatch(k)) and m[3] == setting and int(m[2]) == step}
    have = {k: sorted(s for s, f in finals.items() if f.get(k) is not None) for k in HEADLINE_KEYS}
    if not have["true"]:
        return None
    final: dict[str, Any] = {k: float(np.mean([finals[s][k] for s in have[k]])) for k in HEADLINE_KEYS if have[k]}
    trues = [finals[s]["true"] for s in have["true"]]
    final["true_95_over_training_seeds"] = list(t_interval(trues)) if len(trues) > 1 else None
    return {**final, "step": step, "training_seeds": sorted(finals),
            "seeds_per_figure": {k: v for k, v in have.items() if v},
            "per_seed_true": {str(s): finals[s]["true"] for s in have["true"]}}


def target_line(final: dict[str, Any]) -> str:
    """over_trainings()'s figures against the language benchmark's targets, as one sentence."""
    have = final["seeds_per_figure"]

    def target(k: str, name: str, ok: bool, fmt: str = ".3f") -> str:
        if k not in final:
            return f"{name}: not measured"
        seeds = "" if have[k] == have["true"] else f" (training seeds {have[k]})"
        return f"{name}: {final[k]:{fmt}}{seeds} ({'met' if ok else 'not met'})"

    spread = final["true_95_over_training_seeds"]
    over = f"over training seeds [{spread[0]:.3f}, {spread[1]:.3f}]; " if spread else "one training, no interval; "
    per_seed = ", ".join(f"{v:.2f}" for v in final["per_seed_true"].values())
    return (f"mean over training seeds {have['true']} ({per_seed}): true instruction >= 0.85: **{final['true']:.3f}** "
            f"({over}{'met' if final['true'] >= 0.85 else 'not met'}); "
            + "; ".join([target("wrong", "wrong instruction <= chance + 5 points (0.22)",
                                final.get("wrong", 1.0) <= 0.22),
                         target("paraphrase_gap", "paraphrase gap <= 0.05", final.get("paraphrase_gap", 1.0) <= 0.05,
                                "+.3f"),
                         target("paraphrase_gap_grounded", "with grounding",
                                final.get("paraphrase_gap_grounded", 1.0) <= 0.05, "+.3f")]) + ".")


def set_headline(table: dict[str, Any], final: dict[str, Any], source: str) -> None:
    """language.json's headline keys from over_trainings()'s figures."""
    table.update({f"same_scene_{k}": final[k] for k in ("true", "wrong", "neutral") if k in final})
    table.update({k: final[k] for k in ("paraphrase_gap", "paraphrase_gap_grounded") if k in final})
    table["same_scene_source"] = source


def report(args: argparse.Namespace, out: Path) -> None:
    path = RESULTS / "language.json"
    table = json.loads(path.read_text()) if path.exists() else {}
    res: dict[str, Any] = dict(table.get("sort_job_recipe", {}))  # runs no longer here keep their figures
    res.update(recipe=[*RECIPE, "data.instruction_aliases=<sort's augmentation phrasings>"], steps=args.steps,
               episodes=args.episodes)
    measure(args, out, res)
    if args.device_run:
        device_measure(Path(args.device_run), res)
    lines = ["# `sort` with the main job's recipe", "",
             "Commands and what the recipe is: the docstring of `benchmarks/language_recipe.py`. Evaluated on "
             f"{args.episodes} held-out seeds (1000+); `plain`: 4 steps a chunk at the checkpoint's noise (every "
             "earlier language figure); `job`: every chunk from the prior's mean, the temporal ensemble (0.3, a "
             "chunk every 2 steps); `ns0`: chunks from the prior's mean without the ensemble. A goal-blind policy is "
             "right 1 time in 6. `grounded`: the job's execution with the held-out phrasing grounded on the "
             "training phrasings (`instruction_vocab=`, `vla.policy.grounding`; training phrasings and the wrong "
             "and neutral instructions pass unchanged, so only the held-out column differs).", "",
             "| training seed | checkpoint | execution | true | Wilson 95% | wrong | neutral | held-out phrasing "
             "| paraphrase gap | held-out, grounded | gap, grounded |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = sorted((int(m[1]), int(m[2]), m[3]) for k in res if (m := ROW.fullmatch(k)))
    for seed, step, s in sorted(rows, key=lambda x: (x[0], x[1], list(SETTINGS).index(x[2]))):
        r = res[f"seed{seed}_step{step}_{s}"]
        lo, hi = r["wilson95_true"]
        cells = ["-" if r.get(k) is None else f"{r[k]:+.2f}" if "gap" in k else f"{r[k]:.2f}"
                 for k in ("wrong", "neutral", "heldout", "paraphrase_gap", "heldout_grounded",
                           "paraphrase_gap_grounded")]
        lines.append(f"| {seed} | step {step} | {s} | {r['true']:.2f} | [{lo:.2f}, {hi:.2f}] | " + " | ".join(cells)
                     + " |")
    paired = [f"- training seed {m[1]}, step {m[2]}, {m[5]} instruction, {m[3]} minus {m[4]}: {format_paired(v)}"
              for k, v in res.items() if (m := PAIR.fullmatch(k))]
    gaps = [f"- training seed {m[1]}, step {m[2]}: {format_paired(v)}" for k, v in res.items()
            if (m := GAP.fullmatch(k))]
    if paired:
        lines += ["", "The execution's effect on the same checkpoint, paired by seed (95% t interval; seeds "
                  "better / worse):", "", *paired]
    if gaps:
        lines += ["", "With grounding, the held-out phrasing minus the true instruction (the paraphrase gap, paired "
                  "by seed):", "", *gaps, "", "How often grounding picks the right meaning, abstains or picks a wrong "
                  "one on phrasings left out of other vocabularies (Meta-World's, LIBERO-Goal's): grounding.md. "
                  "Seed 2's grounded run used the nearest-phrasing rule that preceded the whitened one; both ground "
                  "each of sort's 12 held-out phrasings on the same training phrasing, so its inputs are the "
                  "same."]
    lines += device_lines(res)
    # the headline: the job's execution of the finished recipe, averaged over the training seeds run
    final = over_trainings(res, args.steps)
    if final is not None:
        res["mean_over_training_seeds"] = final
        lines += ["", f"Targets, the job's execution at step {args.steps}, " + target_line(final)]
    (RESULTS / "language_recipe.md").write_text("\n".join(lines) + "\n")
    table["sort_job_recipe"] = res
    if final is not None and not table.get("same_scene_variant"):
        if "same_scene_lr3e4" not in table:
            table["same_scene_lr3e4"] = {k: table.get(k) for k in SAME_SCENE_KEYS}
        set_headline(table, final, f"language_recipe.md: the job's recipe, step {args.steps}, job execution, "
                     f"{args.episodes} seeds, mean over the training seeds that have each figure "
                     "(sort_job_recipe.mean_over_training_seeds.seeds_per_figure)")
    elif final is not None:
        print(f"the headline keys stay those of the variant {table['same_scene_variant']!r} (report --variant "
              "--headline set them)", flush=True)
    path.write_text(json.dumps(table, indent=1))
    print("\n".join(lines))


def report_variant(args: argparse.Namespace, out: Path) -> None:
    """A variant of the recipe (`--variant NAME`: other demos or settings, its runs under `--out`) beside the
    recipe's own runs of the same training seed and step, paired on the evaluation seeds: into
    language.json's `sort_job_recipe_<NAME>` and `language_recipe_<NAME>.md`, with the variant's mean over
    its training seeds at each --eval-steps and its difference from the recipe's headline training seed by
    training seed. `--headline` makes the variant's mean at its last --eval-steps the issue's `same_scene_*`
    keys (the recipe's kept under `same_scene_recipe`), refused while it has fewer training seeds than the
    recipe's headline."""
    path = RESULTS / "language.json"
    table = json.loads(path.read_text()) if path.exists() else {}
    key = f"sort_job_recipe_{args.variant}"
    res: dict[str, Any] = dict(table.get(key, {}))
    res.update(out=str(out.relative_to(ROOT) if out.is_relative_to(ROOT) else out),
               note=args.note or res.get("note", ""))
    outcomes = measure(args, out, res)
    base = (ROOT / "runs" / "bench_language" / "sort").resolve()
    recipe = table.get("sort_job_recipe", {})
    lines = [f"# `sort`, the job's recipe with {args.variant}", "", res["note"], "",
             f"Runs: `{res['out']}`; the recipe's own (`language_recipe.md`): `runs/bench_language/sort`. The job's "
             f"execution, {args.episodes} held-out seeds (1000+); a goal-blind policy is right 1 time in 6.", "",
             "| training seed | checkpoint | true | Wilson 95% | wrong | neutral | held-out | held-out, grounded "
             "| recipe's own, true | variant minus recipe, true (paired) | ... held-out |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for seed, step in sorted((int(m[1]), int(m[2])) for k in res if (m := ROW.fullmatch(k)) and m[3] == "job"):
        r = res[f"seed{seed}_step{step}_job"]
        mine = outcomes.get((seed, step, "job"), {})
        lo, hi = r["wilson95_true"]
        head = f"| {seed} | step {step} | {r['true']:.2f} | [{lo:.2f}, {hi:.2f}] | " + " | ".join(
            "-" if r.get(c) is None else f"{r[c]:.2f}" for c in ("wrong", "neutral", "heldout", "heldout_grounded"))
        # against the recipe's own checkpoints of this training seed: this step, and any --recipe-steps
        shown = False
        for own_step in sorted({step, *(int(x) for x in args.recipe_steps.split(",") if x)}):
            theirs, their_rates = rates(base / f"eval_recipe{tag(seed)}_{own_step}_job_{args.episodes}")
            name = f"seed{seed}_step{step}_minus_recipe_step{own_step}"
            diffs = {}
            for inst in ("true", "heldout"):
                if inst in mine and inst in theirs:
                    res[f"{name}_{inst}"] = paired_difference(theirs[inst], mine[inst])
                if f"{name}_{inst}" in res:
                    diffs[inst] = res[f"{name}_{inst}"]
            if "true" in their_rates:
                res[f"seed{seed}_recipe_step{own_step}_true"] = their_rates["true"]
            # a run whose episodes are gone from runs/ still has its rate in language.json (unpaired)
            own = res.get(f"seed{seed}_recipe_step{own_step}_true",
                          recipe.get(f"seed{seed}_step{own_step}_job", {}).get("true"))
            if own is None and not diffs:
                continue
            shown = True
            lines.append(head + f" | step {own_step}: {'-' if own is None else f'{own:.2f}'} | "
                         + " | ".join(format_paired(diffs[i]) if i in diffs else "-" for i in ("true", "heldout"))
                         + " |")
        if not shown:
            lines.append(head + " | - | - | - |")
    final = None
    for step in [int(x) for x in args.eval_steps.split(",")]:
        final = over_trainings(res, step)
        if final is None:
            continue
        res[f"mean_step{step}"] = final
        lines += ["", f"The variant at step {step}, " + target_line(final)]
        # against the recipe's headline (its step --steps), training seed by training seed: the recipe's
        # per-episode outcomes of some seeds are gone, so this pairs trainings, not evaluation seeds
        both = [s for s in final["seeds_per_figure"]["true"] if f"seed{s}_step{args.steps}_job" in recipe]
        if both:
            diffs = [res[f"seed{s}_step{step}_job"]["true"] - recipe[f"seed{s}_step{args.steps}_job"]["true"]
                     for s in both]
            spread = list(t_interval(diffs)) if len(diffs) > 1 else None
            res[f"mean_step{step}_minus_recipe_step{args.steps}_true"] = {
                "mean": float(np.mean(diffs)), "t95": spread, "training_seeds": both}
            lines.append(f"- minus the recipe at step {args.steps}, the same training seeds {both}, paired by "
                         f"training seed: {np.mean(diffs):+.3f}"
                         + (f" [{spread[0]:+.3f}, {spread[1]:+.3f}]" if spread else " (one training: no interval)")
                         + " (" + ", ".join(f"{d:+.2f}" for d in diffs) + ")")
    lines += failure_lines(args.failures)
    if args.headline:
        # the recommended recipe changes only on as many trainings as the one it replaces
        need = len(recipe.get("mean_over_training_seeds", {}).get("training_seeds", []))
        if final is None or len(final["seeds_per_figure"]["true"]) < need:
            got = 0 if final is None else len(final["seeds_per_figure"]["true"])
            raise SystemExit(f"--headline: the variant {args.variant!r} has {got} training seed(s) at step "
                             f"{args.eval_steps.split(',')[-1]}, the recipe's headline {need}")
        if "same_scene_recipe" not in table:
            table["same_scene_recipe"] = {k: table.get(k) for k in
                                          (*SAME_SCENE_KEYS, "paraphrase_gap_grounded")}
        set_headline(table, final, f"language_recipe_{args.variant}.md: the job's recipe on {args.variant} "
                     f"demos, step {final['step']}, job execution, {args.episodes} seeds, mean over the training "
                     f"seeds that have each figure (sort_job_recipe_{args.variant}.mean_step{final['step']}); the "
                     "recipe's own: same_scene_recipe")
        table["same_scene_variant"] = args.variant
        lines += ["", f"language.json's headline (`same_scene_*`) is this variant's at step {final['step']}."]
    (RESULTS / f"language_recipe_{args.variant}.md").write_text("\n".join(lines) + "\n")
    table[key] = res
    path.write_text(json.dumps(table, indent=1))
    print("\n".join(lines))


def failure_lines(files: str) -> list[str]:
    """How the checkpoints fail and whether they turn the hand to the cube (experiments/failure_modes.py's
    JSON files, comma-separated), as a table."""
    rows = []
    for f in (x for x in files.split(",") if x):
        if not (ROOT / f).is_file():
            raise SystemExit(f"--failures: {f} does not exist (experiments/failure_modes.py --out writes it)")
        d = json.loads((ROOT / f).read_text())
        o, t = d["outcomes"], d["turn"]
        g = d["grasp_by_outcome"]
        parts = Path(d["checkpoint"]).parts
        rows.append(f"| `{parts[-5]}/{parts[-3]}/{parts[-1]}` | "
                    f"{o['success']} | {o['slipped']} | {o['never_held']} | {o['released'] + o['other']} | "
                    f"{t['grasp_yaw_follows_start_r']:.2f} | "
                    + " / ".join(f"{t[k][0]:.2f}" for k in ("success_start_yaw_0_15", "success_start_yaw_15_30",
                                                         "success_start_yaw_30_45"))
                    + f" | {g.get('success', {}).get('x_mm', '-')} / {g.get('slipped', {}).get('x_mm', '-')} |")
    if not rows:
        return []
    return ["", "How they fail (`experiments/failure_modes.py --task sort --ensemble 0.3 --every 2 --noise-scale 0`, "
            "the true instruction, seeds 1000-1099; files written before stop 50, with its own loop and two threads, "
            "can differ from the evaluator by one success; since, the same episodes). `r`: "
            "correlation between how far the goal cube starts turned from the hand and how "
            "far off the first grasp is (1: the hand grasps as it started); success by the starting angle; the "
            "grasp's offset along the pads' travel (median mm, successes / slips):", "",
            "| checkpoint | success | slipped | never held | other | r | success at 0-15 / 15-30 / 30-45 deg "
            "| offset mm |", "|---|---|---|---|---|---|---|---|", *rows]


def device_measure(run: Path, res: dict[str, Any]) -> None:
    """The device run's evaluations (RUN/eval/<ablation>_<setting>, 50 seeds), paired within it, and its
    training (steps, batch, lr) read from its last checkpoint (RUN/checkpoints/step_*), into `res`."""
    from vla.train.trainer import latest_checkpoint

    o = {p.name: v for p in sorted((run / "eval").glob("*")) if (v := read_seed_outcomes(p)) is not None}
    ck = latest_checkpoint(run)
    if not o or ck is None:
        return
    state = json.loads((ck / "train_state.json").read_text())
    res["device_train"] = {"run": str(run.relative_to(ROOT) if run.is_relative_to(ROOT) else run),
                           "step": state["step"], "batch_size": state["train_config"]["batch_size"],
                           "lr": state["train_config"]["lr"]}
    res[f"device_{state['step']}"] = {k: sum(v.values()) / len(v) for k, v in o.items()}
    for a, b in (("true_plain", "true_job"), ("true_plain", "true_ns0"), ("true_ns0", "true_job")):
        if a in o and b in o:
            res[f"device_{b}_minus_{a}"] = paired_difference(o[a], o[b])


def device_lines(res: dict[str, Any]) -> list[str]:
    t = res.get("device_train")
    if t is None or f"device_{t['step']}" not in res:
        return []
    lines = ["", f"The same recipe on a lent H200 (`{t['run']}`: {t['step']:,} steps at batch {t['batch_size']}, "
             f"lr {t['lr']:g}, demos collected there with EGL; 50 seeds 1000+; evaluated there):", "",
             "| evaluation | success |", "|---|---|",
             *[f"| {k} | {v:.2f} |" for k, v in res[f"device_{t['step']}"].items()], ""]
    return lines + [f"- {m[1]} minus {m[2]}: {format_paired(v)}" for k, v in res.items()
                    if (m := DEVICE_PAIR.fullmatch(k))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phase", choices=["train", "eval", "report"])
    ap.add_argument("--out", default="runs/bench_language")
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--train-seed", type=int, default=0, help="train/eval: the training seed (0: the first run)")
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--eval-steps", default="20000", help="eval/report: the checkpoints' steps")
    ap.add_argument("--settings", default="job,grounded,plain,ns0",
                    help="eval: the executions (SETTINGS), in this order")
    ap.add_argument("--n-action-steps", type=int, default=4, help="eval: actions run from each chunk")
    ap.add_argument("--device-run", default="", help="report: the device job's unpacked results")
    ap.add_argument("--variant", default="", help="report: a variant of the recipe whose runs are under --out, "
                    "reported beside the recipe's own (language_recipe_<VARIANT>.md)")
    ap.add_argument("--note", default="", help="report --variant: what the variant changes")
    ap.add_argument("--failures", default="", help="report --variant: failure_modes.py JSON files to tabulate")
    ap.add_argument("--headline", action="store_true", help="report --variant: make the variant's mean at its "
                    "last --eval-steps language.json's same_scene_* headline (needs as many training seeds as the "
                    "recipe's)")
    ap.add_argument("--recipe-steps", default="", help="report --variant: also pair with the recipe's own "
                    "checkpoints at these steps (e.g. 15000,20000)")
    args = ap.parse_args()
    out = (ROOT / args.out).resolve() / "sort"
    if args.phase == "report" and args.variant:
        report_variant(args, out)
        return
    {"train": train, "eval": evaluate, "report": report}[args.phase](args, out)


if __name__ == "__main__":
    main()
