"""Success against perturbation severity: `vla eval CKPT perturb=SPEC perturb_sweep=[0,0.5,1,2]`; and which
part of a combined perturbation costs the most: `vla eval CKPT perturb=SPEC perturb_ablate=group|kind`.

Each point evaluates the same seeds with every severity of SPEC (vla.perturb) multiplied by the
point's factor (0 is the clean run), so the curve is paired by seed along its length. Writes
OUT/robustness.json (per factor: the perturbation as evaluated, successes, episodes, success rate,
Wilson 95% interval, and the paired difference to the clean point when 0 is among the factors) and
OUT/robustness.png, with each point's own evaluation (summary, videos) in OUT/sweep_<factor>/.

An ablation evaluates SPEC whole, then SPEC with each group of kinds (vla.perturb.GROUPS: pose, camera, image,
action, ...) or each kind left out, on the same seeds. What leaving a part out gains, paired by seed against the
whole, is what that part costs in combination, which a kind evaluated alone does not show: kinds that each cost
a little can compound (a late command and a noisy one), and one that costs a lot alone can be masked by another.
Writes OUT/ablation.json (the whole and each part left out: successes, Wilson 95%, the paired gain over the
whole), OUT/ablation.png, and each evaluation in OUT/full/ and OUT/without_<part>/.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from vla.metrics import format_paired, paired_difference, wilson_interval
from vla.perturb import GROUPS, KINDS, parse_perturb, scaled, spec_text

ABLATE_BY = ("group", "kind")


def run_sweep(config: Any, progress: bool = True, clean: dict[int, bool] | None = None) -> dict[str, Any]:
    """config: an EvalConfig with `perturb` and `perturb_sweep` set; returns robustness.json's content.
    `clean`: the same policy's outcomes per seed, unperturbed, with the same execution, on these seeds or
    more (an evaluation already run): the x0 point is read from them instead of being run again (the
    evaluation is deterministic per seed, so it would be the same)."""
    from sim.evaluate import applicable_perturb, run_evaluation, seed_outcomes

    factors = [float(f) for f in config.perturb_sweep]
    if not factors or len(set(factors)) != len(factors) or any(not np.isfinite(f) or f < 0 for f in factors):
        raise ValueError(f"perturb_sweep must be distinct finite factors >= 0, got {config.perturb_sweep}")
    if not parse_perturb(config.perturb):
        raise ValueError("perturb_sweep needs perturb=SPEC (a preset or NAME:SEVERITY,...) to scale; it is none")
    # the preset's kinds that cannot apply here (object poses for a camera policy) leave before it is spelt out
    # per point, where each would be a kind named on its own
    config, left_out = applicable_perturb(config)
    kinds = parse_perturb(config.perturb)
    out = Path(config.out_dir)
    points: list[dict[str, Any]] = []
    per_seed: dict[float, dict[int, bool]] = {}
    for f in factors:
        sub = _point_config(config, f, factors)
        seeds = sub.seed_list()
        reused = f == 0 and clean is not None and set(seeds) <= set(clean)
        if reused:
            per_seed[f] = {s: clean[s] for s in seeds}
        else:
            per_seed[f] = seed_outcomes(run_evaluation(sub, progress=progress))
        points.append({"factor": f, "perturb": sub.perturb, **_point(per_seed[f]),
                       **({"reused": "the clean evaluation's outcomes"} if reused else {})})
    if 0.0 in per_seed:
        clean = per_seed[0.0]
        for p in points:
            p["minus_clean"] = paired_difference(clean, per_seed[p["factor"]])
    result = {"perturb": config.perturb, "kinds": kinds, "task": config.task, "policy": config.policy,
              "seed_range": config.seed_range, "points": points, **({"left_out": left_out} if left_out else {})}
    out.mkdir(parents=True, exist_ok=True)
    (out / "robustness.json").write_text(json.dumps(result, indent=1))
    plot_sweep(result, out / "robustness.png")
    if progress:
        for p in points:
            extra = f", minus clean {format_paired(p['minus_clean'])}" if "minus_clean" in p else ""
            print(f"x{p['factor']:g} ({p['perturb']}): {p['successes']}/{p['episodes']} "
                  f"[{p['wilson95'][0]:.0%}, {p['wilson95'][1]:.0%}]{extra}")
        print(f"robustness: {out / 'robustness.json'}, plot: {out / 'robustness.png'}")
    return result


def _point(outcomes: dict[int, bool]) -> dict[str, Any]:
    """One evaluation's successes, episodes, success rate and Wilson 95% interval, from its outcomes per seed."""
    n, k = len(outcomes), int(sum(outcomes.values()))
    lo, hi = wilson_interval(k, n)
    return {"successes": k, "episodes": n, "success": k / n, "wilson95": [lo, hi]}


def _point_config(config: Any, factor: float, factors: list[float]) -> Any:
    """The evaluation of one point of the sweep: every severity times `factor`, its own folder."""
    return replace(config, perturb=spec_text(scaled(parse_perturb(config.perturb), factor)), perturb_sweep=None,
                   out_dir=str(Path(config.out_dir) / f"sweep_{factor:g}"),
                   videos=config.videos if factor == max(factors) else 0)


def clean_outcomes(summary_file: Path, config: Any) -> dict[int, bool] | None:
    """Outcomes per seed of an evaluation already run (`summary_file`, e.g. the refine stage's of the same
    policy) that is this sweep's x0 point but for how many seeds it ran, its videos and its folder; None if
    it is missing or differs in anything else (policy, task, execution, observations, seed range)."""
    from sim.evaluate import seed_outcomes

    if not Path(summary_file).exists():
        return None
    done = json.loads(Path(summary_file).read_text())
    x0 = asdict(_point_config(config, 0.0, [0.0]))
    # a setting left unset (None: cameras, horizon) is resolved from the policy and task, which are compared
    differs = [k for k, v in x0.items() if k not in ("episodes", "videos", "out_dir") and v is not None
               and done["config"].get(k, v) != v]
    return None if differs else seed_outcomes(done)


def plot_title(result: dict[str, Any], width: int = 60) -> str:
    """The task and the policy, the policy's path shortened from the left to fit (the task stays whole)."""
    policy = str(result["policy"])
    room = max(width - len(result["task"]) - 2, 10)
    return f"{result['task']}: {policy if len(policy) <= room else '...' + policy[-(room - 3):]}"


def plot_sweep(result: dict[str, Any], path: Path, ax: Any = None) -> Path:
    """Success (Wilson 95% bars) against the severity factor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = result["points"]
    x = [p["factor"] for p in pts]
    y = [p["success"] for p in pts]
    err = np.array([[p["success"] - p["wilson95"][0] for p in pts], [p["wilson95"][1] - p["success"] for p in pts]])
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.errorbar(x, y, yerr=err, marker="o", capsize=3)
    ax.set_xlabel(f"severity x ({result['perturb']})")
    ax.set_ylabel("success")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(plot_title(result), fontsize=9)
    ax.grid(alpha=0.3)
    if own:
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
    return path


def ablation_parts(kinds: dict[str, float], by: str) -> dict[str, list[str]]:
    """What an ablation leaves out, one part at a time: {part: its kinds}. by="group": each group of
    vla.perturb.GROUPS that `kinds` has, in that order; by="kind": each kind, in `kinds`' order."""
    if by not in ABLATE_BY:
        raise ValueError(f"perturb_ablate must be one of {', '.join(ABLATE_BY)}, got '{by}'")
    if by == "kind":
        return {k: [k] for k in kinds}
    return {g: [k for k in kinds if KINDS[k].group == g] for g in GROUPS if any(KINDS[k].group == g for k in kinds)}


def run_ablation(config: Any, progress: bool = True) -> dict[str, Any]:
    """config: an EvalConfig with `perturb` and `perturb_ablate` set; returns ablation.json's content."""
    from sim.estimated_poses import without_pose_kinds
    from sim.evaluate import applicable_perturb, run_evaluation, seed_outcomes

    by = config.perturb_ablate
    if not parse_perturb(config.perturb):
        raise ValueError("perturb_ablate needs perturb=SPEC (a preset or NAME:SEVERITY,...) to take apart; it is none")
    config, left_out = applicable_perturb(config)
    if config.poses:  # the estimator's own errors replace the pose kinds, so leaving them out would change nothing
        spec, gone = without_pose_kinds(config.perturb)
        left_out = {**left_out, **{k: "poses come from the estimator, whose own errors replace them" for k in gone}}
        config = replace(config, perturb=spec)
    kinds = parse_perturb(config.perturb)
    parts = ablation_parts(kinds, by)
    out = Path(config.out_dir)

    def evaluate(spec: dict[str, float], folder: str) -> dict[int, bool]:
        sub = replace(config, perturb=spec_text(spec), perturb_ablate="", out_dir=str(out / folder),
                      videos=config.videos if folder == "full" else 0)
        return seed_outcomes(run_evaluation(sub, progress=progress))

    full = evaluate(kinds, "full")
    rows = []
    for part, members in parts.items():
        rest = {k: s for k, s in kinds.items() if k not in members}
        outcomes = evaluate(rest, f"without_{part}")
        rows.append({"part": part, "kinds": {k: kinds[k] for k in members}, "perturb": spec_text(rest),
                     **_point(outcomes), "gain": paired_difference(full, outcomes)})
    rows.sort(key=lambda r: -r["gain"]["mean"])
    result = {"perturb": config.perturb, "by": by, "kinds": kinds, "task": config.task, "policy": config.policy,
              "seed_range": config.seed_range, "full": _point(full), "without": rows,
              **({"left_out": left_out} if left_out else {})}
    out.mkdir(parents=True, exist_ok=True)
    (out / "ablation.json").write_text(json.dumps(result, indent=1))
    plot_ablation(result, out / "ablation.png")
    if progress:
        f = result["full"]
        print(f"whole ({result['perturb']}): {f['successes']}/{f['episodes']}")
        for r in rows:
            print(f"without {r['part']}: {r['successes']}/{r['episodes']}, gain {format_paired(r['gain'])}")
        print(f"ablation: {out / 'ablation.json'}, plot: {out / 'ablation.png'}")
    return result


def plot_ablation(result: dict[str, Any], path: Path) -> Path:
    """What leaving each part out gains over the whole (paired 95% interval), the costliest part on top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["without"][::-1]
    fig, ax = plt.subplots(figsize=(5.5, 0.9 + 0.35 * max(len(rows), 1)))
    gains = [r["gain"]["mean"] for r in rows]
    err = np.array([[r["gain"]["mean"] - r["gain"]["lo"] for r in rows],
                    [r["gain"]["hi"] - r["gain"]["mean"] for r in rows]]).reshape(2, -1)
    ax.barh([r["part"] for r in rows], gains, xerr=err, capsize=3, color="tab:blue")
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_xlabel(f"success gained by leaving it out (whole: {result['full']['success']:.2f})")
    ax.set_title(plot_title(result), fontsize=9)
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
