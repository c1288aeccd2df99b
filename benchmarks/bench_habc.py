"""HABC benchmark with its paired protocol: HABC against SFT paired by seed, with interventions
and in the autonomous setting (no intervener, only the sparse episode outcome), every method at
the same fixed sample shares per group, efficiency (steps and seconds to success) per version,
the critic's held-out AUROC per iteration, and the protocol's minimum detectable difference.

  python benchmarks/bench_habc.py run --out runs/bench_habc --seeds 0,1,2,3,4
  python benchmarks/bench_habc.py report --out runs/bench_habc
  python benchmarks/bench_habc.py diagnose --run autonomous/habc/seed1   # why own steps hurt
  python benchmarks/bench_habc.py prep --task stack3 --demos 400 --steps 4000,8000,12000,16000,20000 \
      --train-args "train.lr=1e-3 policy.noise_scale=0"   # another task's base (stack3's: 0.26 at 20,000)
  python benchmarks/bench_habc.py prep --task lift --demos 3   # lift's: 0.16 / 0.26 / 0.24 at 1k / 2k / 3k
  python benchmarks/bench_habc.py run --task lift --settings autonomous --methods sft,habc,demos_only,habc_gated,pa_rl
  python benchmarks/bench_habc.py run --task lift --settings interventions --methods sft,habc,hg_dagger,rac
  python benchmarks/bench_habc.py report --task lift --name habc_lift --json habc
  python benchmarks/bench_habc.py run --out runs/bench_habc_p10 --shares 0.4,0.5,0.1   # other shares: own --out
  python benchmarks/bench_habc.py run --cameras --base-ckpt CKPT --demo-store DEMOS --run-args n_action_steps=4 \
      --out runs/bench_habc_cam --seeds 0   # one camera run per method (a camera policy and its demos)

Base policy: the world-model benchmark's `d15_s3000` (pick_place, 15 demos, state mode; 0.34 on
the evaluation seeds), its demos; `--base` picks another candidate. Inputs (10 min here):
`python benchmarks/wm_candidates.py --out runs/bench_wm/inputs --runs d15`. Runs (`vla refine`,
resumable; the driver skips finished runs, so it can be stopped and continued in another session):
for each seed s, every (setting, method) collects from the same seeds 500000 + 10000 s and is
evaluated on the same 50 seeds 100000+; version 0 is evaluated once.
- settings: interventions (the scripted person takes over and hands back: HG-DAgger's protocol)
  and autonomous (`intervener=`);
- methods: habc, sft; habc_single (the efficiency ablation: one critic, no efficiency head),
  habc_sampled (`method_args.sample_by_weight`: the critic's weights draw the policy's windows),
  habc_gae (`method_args.adv_lambda=0.95`: GAE advantages over each run instead of one step), habc_mc
  (`method_args.adv_lambda=1.0`: the run's outcome minus V, as far from one-step as GAE goes),
  habc_chunk (`own_chunk_only`: the policy's windows supervise only the chunk it executed),
  habc_gated (`method_args.outcome_gate`: only the policy's runs that ended in a success, ranked inside
  them by exp(A / (2 std)) with lambda-1 advantages; beta -> infinity would be filtered BC),
  filtered_bc, pa_rl (PA-RL, arXiv 2412.06685, on the same critic in Q form); with interventions
  rac and hg_dagger (their intervention steps for the RaC / HG-DAgger ratio); in the autonomous
  setting demos_only, the equal-compute control (the same fine-tuning steps on the demos alone).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

# benchmarks/ is this script's folder
from harness import ROOT, STATE_OBS, evaluate, prep_base, read_runs, refine_run

from sim.evaluate import read_seed_outcomes, seed_completions
from vla.metrics import paired_difference, shared_success_length_ratio, t_interval

# 0.34 on the evaluation seeds in one set of inputs (d15_s1000 0.28); an earlier training of the same
# recipe gave 0.18 (and 0.34): the 15-demo policy varies that much from one training to the next
BASE = "d15_s3000"
SHARES = (0.4, 0.3, 0.3)  # demo, correction, policy: every method's fixed sample shares (--shares)
SETTINGS = {"interventions": (), "autonomous": ("intervener=",)}
METHODS = {"habc": ("habc", ()), "sft": ("sft", ()), "habc_single": ("habc", ("method_args.single_critic=true",)),
           "habc_sampled": ("habc", ("method_args.sample_by_weight=true",)),
           "habc_gae": ("habc", ("method_args.adv_lambda=0.95",)),
           "habc_mc": ("habc", ("method_args.adv_lambda=1.0",)),
           "habc_chunk": ("habc", ("own_chunk_only=true",)),
           # outcome-gated, tempered: only the policy's successful runs, ranked by exp(A / (2 std)) with
           # Monte-Carlo advantages (the efficiency critic sees which successes were fast)
           "habc_gated": ("habc", ("method_args.outcome_gate=true", "method_args.beta=2.0",
                                   "method_args.adv_lambda=1.0")),
           # its efficiency ablation: the same gate and ranking with the viability critic alone
           "habc_gated_single": ("habc", ("method_args.outcome_gate=true", "method_args.beta=2.0",
                                          "method_args.adv_lambda=1.0", "method_args.single_critic=true")),
           "filtered_bc": ("filtered_bc", ()),
           "rac": ("rac", ()), "hg_dagger": ("hg_dagger", ()), "dagger": ("dagger", ()),
           # DAgger with the policy's own rotation in the labels: the expert's roll/pitch corrections are tens of
           # normalised units on demos that barely tilt (dagger_labels.py)
           "dagger_norot": ("dagger", ("intervener_args={label_rotation: 0}",)),
           # ... the policy's own roll and pitch only: the expert's yaw decides when it lets the hand descend
           "dagger_notilt": ("dagger", ("intervener_args={label_tilt: 0}",)),
           # ... and no climb back to hover in the labels: centre at the hand's height
           "dagger_noretreat": ("dagger", ("intervener_args={label_tilt: 0, label_retreat: 0}",)),
           "pa_rl": ("pa_rl", ()),
           # the equal-compute control of the autonomous setting: HG-DAgger without a person trains on
           # the demos alone, for the same steps; a gain it also gets is fine-tuning's, not the method's
           "demos_only": ("hg_dagger", ())}


def share_overrides(name: str, setting: str, shares: tuple[float, float, float]) -> str:
    """The `vla refine` override that fixes the sample shares. PA-RL is a plug-in with its own
    `demo_share` (demos + corrections against its re-ranked chunks): set to what the fixed shares
    give the built-ins (demo + correction with a person; demo / (demo + policy) without one)."""
    d, c, p = shares
    if name == "pa_rl":
        return f"method_args={{demo_share: {d + c if setting == 'interventions' else d / (d + p):.3f}}}"
    return f"method_args.group_shares={{demo: {d}, correction: {c}, policy: {p}}}"


# habc.json names the settings as the benchmark's protocol does
JSON_SETTING = {"interventions": "with_interventions"}
AUTONOMOUS_ONLY = ("demos_only",)  # with a person it would be HG-DAgger
# nothing to learn from without a person: every variant of the methods that learn from the person's actions
CORRECTION_ONLY = tuple(n for n, (m, _) in METHODS.items() if m in ("rac", "hg_dagger", "dagger")
                        and n not in AUTONOMOUS_ONLY)


def base_name(args: argparse.Namespace) -> str:
    """--base, else the base `prep` chose (candidates.json's "base"), else pick_place's BASE."""
    if args.base:
        return str(args.base)
    cands = Path(args.inputs) / "candidates.json"
    return str(json.loads(cands.read_text()).get("base", BASE)) if cands.exists() else BASE


def n_demos(base: str) -> int:
    """The demos a candidate was trained on: `d15_s3000` -> 15 (its store is inputs/demos_15.zarr)."""
    m = re.match(r"d(\d+)", base)
    if m is None:
        raise SystemExit(f"bench_habc: base '{base}' does not start with d<demos> (as d15_s3000 does)")
    return int(m.group(1))


def prep(args: argparse.Namespace) -> None:
    """A base for a task other than pick_place (whose is the world-model benchmark's): `--demos`
    expert demos, a tiny policy on them, the latest checkpoint at 20-50% success (the issue's band)."""
    cands = prep_base(Path(args.inputs).resolve(), args.task, args.demos, args.eval_episodes, (0.2, 0.5),
                      tuple(int(x) for x in args.steps.split(",")), tuple(args.train_args.split()))
    print(f"base {cands['base']} ({cands[cands['base']]['real_success']:.2f})")


def shares_used(out: Path) -> tuple[float, ...] | None:
    """The sample shares of the runs in `out` (older runs did not write them: the default)."""
    if (out / "shares.json").exists():
        return tuple(json.loads((out / "shares.json").read_text()))
    return SHARES if (out / "runs").exists() else None


def run_obs(args: argparse.Namespace) -> tuple[str, ...]:
    """The observation and execution overrides of every evaluation and run: state mode (the seeds' runs),
    or with `--cameras` the task's default cameras (the issue's one camera run per method); `--run-args` after."""
    return (*(() if args.cameras else STATE_OBS), *args.run_args.split())


def run(args: argparse.Namespace) -> None:
    inputs, out = Path(args.inputs).resolve(), Path(args.out).resolve()
    base = base_name(args)
    for kind, names, valid in (("method", args.methods, METHODS), ("setting", args.settings, SETTINGS)):
        bad = sorted(set(names.split(",")) - set(valid))
        if bad:  # before the version-0 evaluation, not after it
            raise SystemExit(f"bench_habc: unknown {kind} '{bad[0]}' (valid: {', '.join(valid)})")
    ckpt = args.base_ckpt or json.loads((inputs / "candidates.json").read_text())[base]["ckpt"]
    demos = Path(args.demo_store).resolve() if args.demo_store else inputs / f"demos_{n_demos(base)}.zarr"
    obs = run_obs(args)
    # the critic input where the policy sees images: the frozen policy encoder's features
    critic = ("critic.features=encoder",) if args.cameras else ()
    had = shares_used(out)  # a folder's runs compare at one set of shares
    if had is not None and had != args.shares:
        raise SystemExit(f"bench_habc: the runs in {out} used --shares {','.join(map(str, had))}, not "
                         f"{','.join(map(str, args.shares))}: pass another --out")
    out.mkdir(parents=True, exist_ok=True)
    (out / "shares.json").write_text(json.dumps(list(args.shares)))
    v0 = out / "v0_eval"
    evaluate(ckpt, v0, args.eval_episodes, 100_000, args.task, obs=obs)
    for seed in [int(s) for s in args.seeds.split(",")]:
        for setting in args.settings.split(","):
            for name in args.methods.split(","):
                if name in (CORRECTION_ONLY if setting == "autonomous" else AUTONOMOUS_ONLY):
                    continue
                run_dir = out / "runs" / setting / name / f"seed{seed}"
                rec = run_dir / "records.json"
                if rec.exists() and len(json.loads(rec.read_text())) == args.iterations + 1:
                    continue
                (run_dir / "iter_00" / "eval").mkdir(parents=True, exist_ok=True)
                shutil.copy(v0 / "summary.json", run_dir / "iter_00" / "eval" / "summary.json")
                method, extra = METHODS[name]
                shares = share_overrides(name, setting, args.shares)
                refine_run(method, ckpt, demos, run_dir,
                           out / "logs" / f"{setting}_{name}_seed{seed}.log", seed=seed,
                           collect_seed_start=500_000 + 10_000 * seed, iterations=args.iterations,
                           episodes=args.episodes, eval_episodes=args.eval_episodes, train_steps=args.train_steps,
                           task=args.task, overrides=(shares, *SETTINGS[setting], *extra, *critic), obs=obs)


# (method, reference) pairs the report differences by seed; habc - sft is the headline
COMPARISONS = (("habc", "sft"), ("habc", "demos_only"), ("sft", "demos_only"), ("filtered_bc", "demos_only"),
               ("filtered_bc", "sft"),
               ("habc", "filtered_bc"), ("habc", "habc_single"), ("habc_sampled", "sft"),
               ("habc_sampled", "demos_only"), ("habc_sampled", "habc"), ("habc_gae", "sft"),
               ("habc_gae", "demos_only"), ("habc_gae", "habc"), ("habc_mc", "sft"), ("habc_mc", "habc"),
               ("habc_mc", "filtered_bc"), ("habc_mc", "demos_only"), ("habc_chunk", "habc"),
               ("habc_chunk", "demos_only"), ("habc_gated", "sft"), ("habc_gated", "filtered_bc"),
               ("habc_gated", "demos_only"), ("habc_gated", "habc"), ("habc_gated", "habc_gated_single"),
               ("habc_gated_single", "sft"), ("habc_single", "sft"),
               ("pa_rl", "sft"), ("pa_rl", "demos_only"), ("pa_rl", "habc"), ("pa_rl", "filtered_bc"),
               # with a person: corrections against the methods that also learn from the policy's own steps
               ("rac", "hg_dagger"), ("hg_dagger", "sft"), ("habc", "hg_dagger"), ("rac", "sft"),
               ("habc_gated", "hg_dagger"))


def seeds_of(by: dict[str, dict[int, list[dict[str, Any]]]], a: str, b: str) -> list[int]:
    return sorted(set(by[a]) & set(by[b]))


def paired_gain(by: dict[str, dict[int, list[dict[str, Any]]]], a: str, b: str
                ) -> tuple[np.ndarray, float | None, float | None]:
    """Final success of `a` minus `b` per seed both finished, with its 95% t interval (None with one seed:
    habc.json holds no NaN)."""
    seeds = seeds_of(by, a, b)
    d = np.array([by[a][s][-1]["success_rate"] - by[b][s][-1]["success_rate"] for s in seeds])
    lo, hi = t_interval(d) if len(d) > 1 else (None, None)
    return d, lo, hi


def final_eval(out: Path, setting: str, method: str, seed: int, iterations: int) -> Path:
    """The folder of a run's final version's evaluation."""
    return out / "runs" / setting / method / f"seed{seed}" / f"iter_{iterations:02d}" / "eval"


def completions(out: Path, setting: str, method: str, seed: int, iterations: int) -> dict[int, int | None]:
    """The final version's evaluation, episode by episode: {evaluation seed: steps to success, None
    when it failed}."""
    path = final_eval(out, setting, method, seed, iterations) / "summary.json"
    return seed_completions(json.loads(path.read_text()))


def episode_paired(out: Path, setting: str, a: str, b: str, seed: int, iterations: int) -> dict[str, Any]:
    """One seed's comparison (the camera run has one): `a`'s final success minus `b`'s, paired by
    evaluation episode (the same seeds; `vla.metrics.paired_difference`). It says whether the two versions
    differ on these episodes, not how a method does over trainings: the seeds' spread is not in it."""
    a_out, b_out = (read_seed_outcomes(final_eval(out, setting, m, seed, iterations)) for m in (a, b))
    assert a_out is not None and b_out is not None, f"{setting} {a} / {b} seed {seed}: a final evaluation is missing"
    return paired_difference(b_out, a_out)


def length_ratio(out: Path, setting: str, by: dict[str, dict[int, list[dict[str, Any]]]], a: str, b: str,
                 iterations: int) -> dict[str, Any] | None:
    """`a`'s completions over `b`'s on the evaluation episodes both completed, per seed, with the
    mean ratio's 95% t interval over seeds: the issue's efficiency at equal success, measured on the
    same episodes (steps to success averages each policy over its own successes)."""
    per_seed, shared = [], []
    for s in seeds_of(by, a, b):
        r, n = shared_success_length_ratio(*(completions(out, setting, m, s, iterations) for m in (a, b)))
        if n:
            per_seed.append(r)
            shared.append(n)
    if not per_seed:
        return None
    x = np.array(per_seed)
    lo, hi = t_interval(x)
    return {"mean": float(x.mean()), "low": lo if len(x) > 1 else None, "high": hi if len(x) > 1 else None,
            "per_seed": [round(v, 3) for v in per_seed], "shared_completions": shared}


def min_detectable(d: np.ndarray, power: float = 0.8) -> float | None:
    """The smallest mean paired difference a two-sided 5% t-test over these seeds detects with
    `power`, at the spread of the observed differences."""
    from scipy import stats

    n = len(d)
    if n < 2 or d.std(ddof=1) < 1e-9:  # no spread: the t-test's power is undefined, not perfect
        return None
    return float((stats.t.ppf(0.975, n - 1) + stats.t.ppf(power, n - 1)) * d.std(ddof=1) / np.sqrt(n))


def load(out: Path, iterations: int) -> dict[str, dict[str, dict[int, list[dict[str, Any]]]]]:
    """The finished runs' records by setting, method and seed."""
    rows: dict[str, dict[str, dict[int, list[dict[str, Any]]]]] = {}
    for setting in sorted(d for d in (out / "runs").glob("*") if d.is_dir()):
        for m, runs in read_runs(setting).items():
            done = {s: r for s, r in runs.items() if len(r) == iterations + 1}
            if done:
                rows.setdefault(setting.name, {})[m] = done
    return rows


def critic_auroc(runs: dict[int, list[dict[str, Any]]]) -> float | None:
    vals = [x["train"]["val_viability_auroc"] for r in runs.values() for x in r[1:]
            if x.get("train") and x["train"].get("val_viability_auroc") is not None
            and np.isfinite(x["train"]["val_viability_auroc"])]
    return float(np.mean(vals)) if vals else None


def steps_to_success(runs: dict[int, list[dict[str, Any]]]) -> float | None:
    vals = [r[-1]["steps_to_success"] for r in runs.values() if r[-1].get("steps_to_success") is not None]
    return float(np.mean(vals)) if vals else None


def intervention_ratio(by: dict[str, dict[int, list[dict[str, Any]]]]) -> float | None:
    """RaC's intervention steps until it first reaches HG-DAgger's final mean success, over
    HG-DAgger's total (None if RaC never reaches it)."""
    if "rac" not in by or "hg_dagger" not in by:
        return None
    seeds = seeds_of(by, "rac", "hg_dagger")
    return reached_at(np.mean([[x["success_rate"] for x in by["rac"][s]] for s in seeds], 0),
                      np.mean([[x["intervention_steps"] for x in by["rac"][s]] for s in seeds], 0),
                      float(np.mean([by["hg_dagger"][s][-1]["success_rate"] for s in seeds])),
                      float(np.mean([by["hg_dagger"][s][-1]["intervention_steps"] for s in seeds])))


def reached_at(success: np.ndarray, steps: np.ndarray, target: float, total: float) -> float | None:
    """steps[k] / total at the first version k whose success reaches target; None if none does, or if
    the target is not above version 0's (the base's) success: HG-DAgger then gained nothing to reach,
    and the base's own success, reached with no corrections, would give a ratio of 0."""
    if len(success) == 0 or target <= success[0]:
        return None
    hit = np.flatnonzero(np.asarray(success) >= target)
    return float(steps[hit[0]] / total) if len(hit) and total > 0 else None


def intervention_ratio_by_seed(by: dict[str, dict[int, list[dict[str, Any]]]]) -> dict[int, float | None]:
    """The same ratio seed by seed (RaC against HG-DAgger's final success on that seed): how much
    of the mean ratio one seed's noisy evaluation decides. None where RaC never reaches it."""
    if "rac" not in by or "hg_dagger" not in by:
        return {}
    return {s: reached_at(np.array([x["success_rate"] for x in by["rac"][s]]),
                          np.array([x["intervention_steps"] for x in by["rac"][s]]),
                          by["hg_dagger"][s][-1]["success_rate"], by["hg_dagger"][s][-1]["intervention_steps"])
            for s in seeds_of(by, "rac", "hg_dagger")}


def final_steps_ratio(by: dict[str, dict[int, list[dict[str, Any]]]]) -> dict[str, Any] | None:
    """RaC's intervention steps over HG-DAgger's after the same rounds, with the paired difference of
    their final success: the ratio at (nearly) equal success when that difference's interval is
    narrow, which the first-crossing ratio above misses when RaC ends a hair below HG-DAgger."""
    if "rac" not in by or "hg_dagger" not in by:
        return None
    seeds = seeds_of(by, "rac", "hg_dagger")
    rac, hg = (np.array([by[m][s][-1]["intervention_steps"] for s in seeds], float) for m in ("rac", "hg_dagger"))
    r = rac / np.maximum(hg, 1)
    d, lo, hi = paired_gain(by, "rac", "hg_dagger")
    return {"steps_ratio": float(rac.mean() / max(hg.mean(), 1)),
            "steps_ratio_low": float(r.min()), "steps_ratio_high": float(r.max()),
            "success_diff": float(d.mean()), "success_diff_low": lo, "success_diff_high": hi, "seeds": len(seeds)}


def plot_curves(rows: dict[str, dict[str, dict[int, list[dict[str, Any]]]]], path: Path) -> None:
    """Mean success per version (with the per-seed spread) and mean steps to success, one panel
    row per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(rows), 2, figsize=(10, 3.6 * len(rows)), squeeze=False)
    for (setting, by), (ax_s, ax_t) in zip(sorted(rows.items()), axes, strict=True):
        for m, runs in sorted(by.items()):
            succ = np.array([[x["success_rate"] for x in r] for r in runs.values()])
            steps = np.array([[x.get("steps_to_success") or np.nan for x in r] for r in runs.values()], float)
            v = np.arange(succ.shape[1])
            line = ax_s.plot(v, succ.mean(0), marker="o", label=f"{m} ({len(runs)} seeds)")[0]
            ax_s.fill_between(v, succ.min(0), succ.max(0), color=line.get_color(), alpha=0.12)
            ax_t.plot(v, np.nanmean(steps, 0), marker="o", color=line.get_color(), label=m)
        ax_s.set(title=f"{setting}: success", xlabel="policy version", ylabel="success rate", ylim=(0, 1))
        ax_t.set(title=f"{setting}: steps to success", xlabel="policy version", ylabel="steps")
        for ax in (ax_s, ax_t):
            ax.grid(alpha=0.3)
            ax.xaxis.get_major_locator().set_params(integer=True)
        ax_s.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(args: argparse.Namespace) -> None:
    out = Path(args.out).resolve()
    rows = load(out, args.iterations)
    res: dict[str, Any] = {}
    entry_key = args.json_task or args.task  # the task's entry in the JSON
    args.shares = shares_used(out) or args.shares
    base = base_name(args)
    lines = ["# HABC with its paired protocol", "",
             f"Base `{args.base_ckpt or base}` ({args.task}, "
             f"{f'demos {args.demo_store}' if args.demo_store else f'{n_demos(base)} demos'}, "
             f"{'cameras' if args.cameras else 'state mode'}{(', ' + args.run_args) if args.run_args else ''}); "
             f"{args.iterations} rounds x "
             f"{args.episodes} rollouts, "
             f"{args.eval_episodes} evaluation episodes per version, sample shares fixed at demo {args.shares[0]} / "
             f"correction {args.shares[1]} / policy {args.shares[2]} for every method. Commands: the docstring of "
             "`benchmarks/bench_habc.py`. What the figures say and why: `habc_notes.md`.", "",
             "| setting | method | seeds | final success (mean) | per seed | steps to success "
             "| critic held-out AUROC |",
             "|---|---|---|---|---|---|---|"]
    paired: list[str] = []  # below the table: a paragraph between rows would end it
    for setting, by in rows.items():
        for m, runs in sorted(by.items()):
            final = [runs[s][-1]["success_rate"] for s in sorted(runs)]
            sts = steps_to_success(runs)
            auc = critic_auroc(runs)
            seeds = ", ".join(map(str, sorted(runs)))
            lines.append(f"| {setting} | {m} | {len(runs)} ({seeds}) | {np.mean(final):.3f} | "
                         f"{', '.join(f'{x:.2f}' for x in final)} | {sts if sts is None else round(sts, 1)} | "
                         f"{auc if auc is None else round(auc, 3)} |")
        if "habc" in by and "sft" in by:
            seeds = sorted(set(by["habc"]) & set(by["sft"]))
            d, lo, hi = paired_gain(by, "habc", "sft")
            res.setdefault(entry_key, {})[JSON_SETTING.get(setting, setting)] = {
                "seeds": seeds, "sft_success": float(np.mean([by["sft"][s][-1]["success_rate"] for s in seeds])),
                "habc_success": float(np.mean([by["habc"][s][-1]["success_rate"] for s in seeds])),
                "paired_gain": float(d.mean()), "paired_gain_low": lo, "paired_gain_high": hi,
                "habc_steps_to_success": steps_to_success({s: by["habc"][s] for s in seeds}),
                "sft_steps_to_success": steps_to_success({s: by["sft"][s] for s in seeds}),
                "critic_auroc_heldout": critic_auroc({s: by["habc"][s] for s in seeds}),
                "min_detectable_difference": min_detectable(d)}
        for a, b in COMPARISONS:
            if a not in by or b not in by:
                continue
            d, lo, hi = paired_gain(by, a, b)
            mdd = min_detectable(d)
            key = "paired_gain" if (a, b) == ("habc", "sft") else f"{a}_minus_{b}"
            entry = res.setdefault(entry_key, {}).setdefault(JSON_SETTING.get(setting, setting), {})
            if key != "paired_gain":
                entry[key] = {"mean": float(d.mean()), "low": lo, "high": hi, "seeds": len(d)}
            if len(d) < 2:
                seed = seeds_of(by, a, b)[0]
                ep = episode_paired(out, setting, a, b, seed, args.iterations)
                entry[f"{a}_minus_{b}_episode_paired"] = ep
                paired.append(f"\n{setting}: {a} - {b} on seed {seed}: {d.mean():+.3f}; paired by evaluation episode "
                              f"[{ep['lo']:+.3f}, {ep['hi']:+.3f}] ({ep['better']} episodes better, {ep['worse']} "
                              "worse; one training: no interval over seeds).")
                continue
            lr = length_ratio(out, setting, by, a, b, args.iterations)
            entry[f"{a}_over_{b}_length_shared"] = lr
            shorter = "" if lr is None or lr["low"] is None else (
                f" On the evaluation episodes both completed ({sum(lr['shared_completions'])}), {a}'s completions "
                f"take {lr['mean']:.2f} of {b}'s steps [{lr['low']:.2f}, {lr['high']:.2f}].")
            paired.append(f"\n{setting}: {a} - {b} paired by seed {d.mean():+.3f} (95% t interval [{lo:+.3f}, "
                          f"{hi:+.3f}], {len(d)} seeds); minimum detectable difference at 80% power "
                          f"{'n/a' if mdd is None else f'{mdd:.3f}'}"
                          + (" - a pilot: the protocol asks for >= 5 seeds." if len(d) < 5 else ".") + shorter)
    lines += paired
    ratio = intervention_ratio(rows.get("interventions", {}))
    res.setdefault(entry_key, {})["rac_vs_hg_dagger_intervention_ratio"] = ratio
    if entry_key == "pick_place":  # the headline key (not another base's or the camera run's)
        res["rac_vs_hg_dagger_intervention_ratio"] = ratio
    lines.append("\nRaC / HG-DAgger intervention steps at HG-DAgger's final mean success (equal shares): "
                 + (f"{ratio:.2f}" if ratio is not None
                    else "RaC never reaches it (or HG-DAgger ends at or below the base)"
                    if {"rac", "hg_dagger"} <= set(rows.get("interventions", {})) else "not run") + ".")
    by_seed = intervention_ratio_by_seed(rows.get("interventions", {}))
    if "interventions" in rows:
        res[entry_key]["rac_vs_hg_dagger_intervention_ratio_by_seed"] = by_seed
    if by_seed:  # empty unless both RaC and HG-DAgger ran
        lines.append("Seed by seed (RaC against HG-DAgger's final success on that seed): "
                     + ", ".join(f"seed {k}: {'never (or no gain to reach)' if v is None else f'{v:.2f}'}"
                                 for k, v in by_seed.items())
                     + ".")
        final = final_steps_ratio(rows["interventions"])
        if final is not None:
            res[entry_key]["rac_vs_hg_dagger_final"] = final
            lines.append(f"At the last version (same rounds and rollouts): RaC used {final['steps_ratio']:.2f} of "
                         f"HG-DAgger's intervention steps (per seed {final['steps_ratio_low']:.2f}-"
                         f"{final['steps_ratio_high']:.2f}) for a success difference of {final['success_diff']:+.3f}"
                         + (f" [{final['success_diff_low']:+.3f}, {final['success_diff_high']:+.3f}] paired by seed."
                            if final["success_diff_low"] is not None else " (one seed)."))
    v0 = out / "v0_eval" / "summary.json"
    if v0.exists():
        res[entry_key]["base_success"] = json.loads(v0.read_text())["success_rate"]
        lines[4:4] = [f"The base scores {res[entry_key]['base_success']:.2f} on the evaluation seeds (version 0 of "
                      "every run).",
                      ""]
    if rows:
        plot_curves(rows, ROOT / f"benchmarks/results/{args.name}_curves.png")
        lines.append(f"\nCurves (mean success per version over seeds): `{args.name}_curves.png`; records: "
                     f"`{args.name}_raw/`.")
        raw = ROOT / f"benchmarks/results/{args.name}_raw"
        raw.mkdir(exist_ok=True)
        for setting, by in rows.items():
            for m, runs in by.items():
                for seed, r in runs.items():
                    (raw / f"{setting}_{m}_seed{seed}.json").write_text(json.dumps(r, indent=1))
    (ROOT / f"benchmarks/results/{args.name}.md").write_text("\n".join(lines) + "\n")
    # one file for every task: this report replaces its own task's entry and keeps the others'
    path = ROOT / f"benchmarks/results/{args.json or args.name}.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    old.pop("base_success", None)  # in older files pick_place's base sat at the top level
    path.write_text(json.dumps({**old, **res}, indent=1))
    print("\n".join(lines))


def jump_ratio(action: np.ndarray, starts: np.ndarray, ends: np.ndarray, episodes: np.ndarray, n: int
               ) -> dict[str, float]:
    """Median change of the action from one step to the next at the steps where a chunk of `n`
    ends (every n-th step from the episode's start) and everywhere else, and their ratio."""
    switch, inside = [], []
    for e in episodes:
        d = np.linalg.norm(np.diff(action[starts[e]:ends[e]], axis=0), axis=1)
        at = np.arange(len(d)) % n == n - 1
        switch += d[at].tolist()
        inside += d[~at].tolist()
    return {"switch": float(np.median(switch)), "inside": float(np.median(inside)),
            "ratio": float(np.median(switch) / np.median(inside))}


def diagnose(args: argparse.Namespace) -> None:
    """Why learning from the policy's own steps fails, on one finished run (`--run`, e.g.
    autonomous/habc/seed1): (1) the action's jump at chunk switches in rollouts and demos; (2) the
    share of the policy steps' HABC loss mass on failed episodes and the weights' effective sample
    size, for one-step and GAE(lambda) advantages, with the critic fitted as the run fitted it for its
    last version."""
    import torch

    from vla.config import load_config
    from vla.data.store import EpisodeStore
    from vla.policy.checkpoint import load_model
    from vla.refine import habc_math as hm
    from vla.refine.config import RefineConfig
    from vla.refine.critics import critic_values
    from vla.refine.loop import RefineRun
    from vla.refine.methods.rule import Steps

    run_dir = Path(args.out).resolve() / "runs" / args.run
    cfg = load_config(RefineConfig, "refine", "default", [], values=json.loads((run_dir / "config.json").read_text()))
    run = RefineRun(cfg, progress=False)
    store = EpisodeStore.open(run.store_path)
    table = store.table()
    action = np.asarray(store.read("action", 0, store.n_steps))
    out: dict[str, Any] = {"run": args.run, "n_action_steps": cfg.n_action_steps}
    for src in ("demo", "rollout"):
        eps = np.flatnonzero(table.source == src)
        out[f"jump_{src}s"] = jump_ratio(action, table.episode_starts, table.episode_ends, eps, cfg.n_action_steps)
    version = cfg.iterations - 1
    model, _ = load_model(run.policy_path(version), use_ema=True, device="cpu")
    h = run.method.args  # HABC's settings
    steps = Steps(store=store, table=table, success=np.asarray(table.success, bool),
                  is_demo=np.asarray(table.source == "demo"), version=version, model=model, run=run)
    critic, feats, labels, _ = run.method.critic(steps)
    v, eff = critic_values(critic, feats)
    pol = labels.policy_step  # never a demo's step
    failed = ~np.asarray(table.success, bool)[labels.episode[pol]]
    for lam in (None, 0.8, 0.95, 1.0):
        w = hm.habc_weights(v, eff, torch.from_numpy(labels.next_index), torch.from_numpy(labels.done_success),
                            torch.from_numpy(~labels.policy_step), replace(h, adv_lambda=lam),
                            scale_rows=torch.from_numpy(labels.policy_step))["weight"].numpy()[pol]
        out[f"adv_lambda_{lam}"] = {"failed_mass_share": float(w[failed].sum() / w.sum()),
                                    "weight_mean_failed": float(w[failed].mean()),
                                    "weight_mean_successful": float(w[~failed].mean()),
                                    "weights_at_w_max": int((w >= h.w_max - 1e-3).sum()),
                                    # Kish's effective sample size over the policy steps, as a share of
                                    # them: how many steps the weights really train on (filtered BC: the
                                    # successful steps' share, uniformly)
                                    "effective_share": hm.effective_share(w, np.ones(len(w), bool))}
    out["successful_steps_share"] = float((~failed).mean())
    path = ROOT / "benchmarks/results/habc_diagnosis.json"
    path.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phase", choices=["prep", "run", "report", "diagnose"])
    ap.add_argument("--task", default="pick_place", help="prep/run/report: the task (pick_place's inputs come "
                    "from wm_candidates.py; another's from `prep`)")
    ap.add_argument("--demos", type=int, default=40, help="prep: the base's expert demos")
    ap.add_argument("--steps", default="1000,2000,3000", help="prep: the base's candidate checkpoints")
    ap.add_argument("--train-args", default="", help="prep: more `vla train` overrides for the base, space-separated "
                    "(stack3's: 'train.lr=1e-3 policy.noise_scale=0', the main job's recipe)")
    ap.add_argument("--run", default="autonomous/habc/seed1", help="diagnose: SETTING/METHOD/seedS")
    ap.add_argument("--inputs", default=None, help="default: runs/bench_wm/inputs (pick_place), "
                    "runs/bench_habc_TASK/inputs")
    ap.add_argument("--out", default=None, help="default: runs/bench_habc (pick_place), runs/bench_habc_TASK")
    ap.add_argument("--base", default="", help="the candidate every run starts from (default: the one `prep` "
                    f"chose, else {BASE})")
    ap.add_argument("--base-ckpt", default="", help="a checkpoint folder to start from instead of --base "
                    "(e.g. a refined policy; give it its own --out and --name)")
    ap.add_argument("--cameras", action="store_true", help="run/report: image observations from the task's cameras "
                    "instead of state (with a camera policy's --base-ckpt and --demo-store); the critics then read "
                    "the frozen policy encoder's features")
    ap.add_argument("--demo-store", default="", help="run/report: the demos the runs fine-tune on (default: the base's "
                    "inputs/demos_N.zarr)")
    ap.add_argument("--run-args", default="", help="run/report: more overrides of every evaluation and `vla refine` "
                    "run, space-separated (the camera run's: 'n_action_steps=4', the main job's re-planning)")
    ap.add_argument("--name", default="habc", help="report: benchmarks/results/NAME.md, _curves.png, _raw/")
    ap.add_argument("--json", default="", help="report: benchmarks/results/JSON.json (default NAME); the task's "
                    "entry is replaced, other tasks' kept")
    ap.add_argument("--json-task", default="", help="report: the task's key in the JSON (default: --task); another "
                    "key keeps the entry of runs from another base")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--settings", default="autonomous,interventions")
    ap.add_argument("--methods", default="habc,sft,habc_single,rac,hg_dagger")
    ap.add_argument("--shares", default=",".join(map(str, SHARES)), help="run/report: the fixed sample shares "
                    "demo,correction,policy (an empty group's share goes to the others in proportion)")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--eval-episodes", type=int, default=50)
    ap.add_argument("--train-steps", type=int, default=500)
    args = ap.parse_args()
    pp = args.task == "pick_place"
    args.inputs = args.inputs or ("runs/bench_wm/inputs" if pp else f"runs/bench_habc_{args.task}/inputs")
    args.out = args.out or ("runs/bench_habc" if pp else f"runs/bench_habc_{args.task}")
    raw = args.shares
    try:
        args.shares = tuple(float(x) for x in raw.split(","))
    except ValueError:
        args.shares = ()
    if len(args.shares) != 3 or min(args.shares) < 0 or abs(sum(args.shares) - 1) > 1e-6:
        ap.error(f"--shares: three non-negative numbers demo,correction,policy that sum to 1, got '{raw}'")
    {"prep": prep, "run": run, "report": report, "diagnose": diagnose}[args.phase](args)


if __name__ == "__main__":
    main()
