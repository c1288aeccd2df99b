"""The HABC benchmark's analysis (benchmarks/bench_habc.py `report` and `diagnose`): paired gains per seed,
efficiency, critic AUROC, the minimum detectable difference, the curves and the results page. Split from the
driver so that each stays a few hundred lines; the driver's constants and run layout are imported from it.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from bench_habc import JSON_SETTING, base_name, n_demos, shares_used
from harness import ROOT, read_runs

from sim.evaluate import read_seed_outcomes, seed_completions
from vla.metrics import paired_difference, shared_success_length_ratio, t_interval

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
