"""Success against perturbation severity: `vla eval CKPT perturb=SPEC perturb_sweep=[0,0.5,1,2]`.

Each point evaluates the same seeds with every severity of SPEC (vla.perturb) multiplied by the
point's factor (0 is the clean run), so the curve is paired by seed along its length. Writes
OUT/robustness.json (per factor: the perturbation as evaluated, successes, episodes, success rate,
Wilson 95% interval, and the paired difference to the clean point when 0 is among the factors) and
OUT/robustness.png, with each point's own evaluation (summary, videos) in OUT/sweep_<factor>/.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from vla.metrics import format_paired, paired_difference, wilson_interval
from vla.perturb import parse_perturb, scaled, spec_text


def run_sweep(config: Any, progress: bool = True) -> dict[str, Any]:
    """config: an EvalConfig with `perturb` and `perturb_sweep` set; returns robustness.json's content."""
    from sim.evaluate import run_evaluation

    factors = [float(f) for f in config.perturb_sweep]
    if not factors or len(set(factors)) != len(factors) or any(not np.isfinite(f) or f < 0 for f in factors):
        raise ValueError(f"perturb_sweep must be distinct finite factors >= 0, got {config.perturb_sweep}")
    kinds = parse_perturb(config.perturb)
    if not kinds:
        raise ValueError("perturb_sweep needs perturb=SPEC (a preset or NAME:SEVERITY,...) to scale; it is none")
    out = Path(config.out_dir)
    points: list[dict[str, Any]] = []
    per_seed: dict[float, dict[int, bool]] = {}
    for f in factors:
        spec = spec_text(scaled(kinds, f))
        sub = replace(config, perturb=spec, perturb_sweep=None, out_dir=str(out / f"sweep_{f:g}"),
                      videos=config.videos if f == max(factors) else 0)
        summary = run_evaluation(sub, progress=progress)
        detail = summary["episodes_detail"]
        per_seed[f] = {int(e["seed"]): bool(e["success"]) for e in detail}
        n, k = len(detail), int(sum(e["success"] for e in detail))
        lo, hi = wilson_interval(k, n)
        points.append({"factor": f, "perturb": spec, "successes": k, "episodes": n, "success": k / n,
                       "wilson95": [lo, hi]})
    if 0.0 in per_seed:
        clean = per_seed[0.0]
        for p in points:
            p["minus_clean"] = paired_difference(clean, per_seed[p["factor"]])
    result = {"perturb": config.perturb, "kinds": kinds, "task": config.task, "policy": config.policy,
              "seed_range": config.seed_range, "points": points}
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
    ax.set_title(f"{result['task']}: {result['policy']}"[-60:], fontsize=9)
    ax.grid(alpha=0.3)
    if own:
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
    return path
