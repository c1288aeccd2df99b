"""benchmarks/results/worldmodel.{md,json} and PNGs from a bench_worldmodel.py run folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
VARIANTS = {"pick_place_state": "pick_place, state", "pick_place_cams": "pick_place, camera + proprio",
            "lift_state": "robosuite lift, state"}


def _load(p: Path) -> Any:
    return json.loads(p.read_text()) if p.exists() else None


def _f(x: Any, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def report(run: Path, inputs: Path) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {}
    lines = ["# World model", "",
             f"2 CPUs, no GPU. Run folder `{os.path.relpath(run, ROOT)}`. Commands:", "",
             "```", "python benchmarks/wm_candidates.py --out runs/bench_wm/inputs",
             "python benchmarks/bench_worldmodel.py variants --out runs/bench_wm/run",
             "python benchmarks/bench_worldmodel.py state --inputs runs/bench_wm/inputs --out runs/bench_wm/run",
             "python benchmarks/bench_worldmodel.py report --inputs runs/bench_wm/inputs --out runs/bench_wm/run",
             "```", "", "## Validation on held-out episodes", "",
             "| model | episodes (successes) | train s | chunk AUROC | chunk ECE | replay AUROC | replay ECE | "
             "probe err k=1/5/10 (m) | copy-last k=1/5/10 (m) | median probe / copy-last k=5 (m) | "
             "latent MSE k=5 vs copy-last | corruption: logged / shuffled / noised p(success) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    per_task: dict[str, Any] = {}
    for key, label in VARIANTS.items():
        v = _load(run / f"val_{key}" / "summary.json")
        t = _load(run / f"wm_{key}" / "train_summary.json")
        if v is None:
            continue
        ks = v["k_step"]
        pe = "/".join(_f(ks.get(k, {}).get("probe_err_m")) for k in ("1", "5", "10"))
        ce = "/".join(_f(ks.get(k, {}).get("copy_last_err_m")) for k in ("1", "5", "10"))
        k5 = ks.get("5", {})
        c = v["corruption"]
        lines.append(
            f"| {label} | {v['episodes']} ({v['successes']}) | {_f(t and t['seconds'], 0)} | "
            f"{_f(v['chunk_success']['auroc'])} | {_f(v['chunk_success']['ece'])} | "
            f"{_f(v['episode_success']['auroc'])} | {_f(v['episode_success']['ece'])} | {pe} | {ce} | "
            f"{_f(k5.get('probe_err_median_m'))} / {_f(k5.get('copy_last_err_median_m'))} | "
            f"{_f(k5.get('latent_mse'), 4)} vs {_f(k5.get('copy_last_latent_mse'), 4)} | "
            f"{_f(c['logged_success_prob'], 2)} / {_f(c['shuffled_success_prob'], 2)} / "
            f"{_f(c['noised_success_prob'], 2)} |")
        per_task[key] = {"probe_err_k5": k5.get("probe_err_m"), "copy_last_err_k5": k5.get("copy_last_err_m"),
                         "probe_err_median_k5": k5.get("probe_err_median_m"),
                         "copy_last_err_median_k5": k5.get("copy_last_err_median_m"),
                         "success_auroc": v["chunk_success"]["auroc"], "ece": v["chunk_success"]["ece"],
                         "success_auroc_replay": v["episode_success"]["auroc"],
                         "train_seconds": t and t["seconds"]}
        src = Path(v.get("plot", ""))
        if src.exists():
            shutil.copy(src, RESULTS / f"worldmodel_{key}.png")
    main = per_task.get("pick_place_state", {})
    figures.update(success_auroc=main.get("success_auroc"), ece=main.get("ece"),
                   success_auroc_replay=main.get("success_auroc_replay"), per_task=per_task)
    rank = _load(run / "rank.json")
    if rank:
        lines += ["", "## Ranking policies without the simulator (pick_place, state)", "",
                  f"{len(rank['candidates'])} checkpoints, {rank['starts']} real start states "
                  f"(first frames of held-out seeds 100000+) x {rank['samples']} sampled chunk sequences, "
                  f"{rank['n_chunks']} imagined chunks "
                  "(200 steps, the task's horizon). Real success: 50 simulator episodes each on those seeds.", "",
                  "| checkpoint | real success | imagined success | soft (mean max p) | disagreement | BC val loss | "
                  "success head on logged real rollouts |", "|---|---|---|---|---|---|---|"]
        for name, r in sorted(rank["candidates"].items(), key=lambda kv: kv[1]["real_success"]):
            lines.append(f"| {name} | {r['real_success']:.2f} | {r['imagined_success']:.2f} | "
                         f"{r['soft_success']:.2f} | {r['disagreement']:.4f} | {_f(r.get('bc_val_loss'))} | "
                         f"{_f(r.get('logged_success_head'))} |")
        lines += ["", "| proxy | Spearman | Pearson | MMRV | pairwise accuracy |", "|---|---|---|---|---|"]
        for proxy, m in rank.get("metrics", {}).items():
            lines.append(f"| {proxy} | " + " | ".join(f"{m[k]['value']:.2f} [{m[k]['lo']:.2f}, {m[k]['hi']:.2f}]"
                                                      for k in ("spearman", "pearson", "mmrv", "pairwise_accuracy"))
                         + " |")
        m = rank.get("metrics", {}).get("imagined_success", {})
        figures.update(rank_spearman=m.get("spearman", {}).get("value"),
                       rank_pearson=m.get("pearson", {}).get("value"),
                       rank_mmrv=m.get("mmrv", {}).get("value"), rank_pairwise_accuracy=m.get("pairwise_accuracy", {})
                       .get("value"), rank_intervals={k: [v["lo"], v["hi"]] for k, v in m.items()},
                       n_checkpoints=len(rank["candidates"]),
                       baselines={p: {k: v["value"] for k, v in mm.items()} for p, mm in rank["metrics"].items()
                                  if p != "imagined_success"})
    sp = _load(run / "speed.json")
    if sp:
        lines += ["", "## Speed (env steps per second, one thread)", "",
                  "| simulator, 2 cameras 84x84 | simulator, no cameras | imagined (batch "
                  f"{sp['imagined_batch']}) | imagined with the policy sampling | speedup vs sim with cameras |",
                  "|---|---|---|---|---|",
                  f"| {sp['sim_cameras_steps_per_s']:.0f} | {sp['sim_state_steps_per_s']:.0f} | "
                  f"{sp['imagined_steps_per_s']:.0f} | {sp['imagined_with_policy_steps_per_s']:.0f} | "
                  f"{sp['speedup_vs_sim_cameras']:.0f}x (with the policy: "
                  f"{sp['speedup_with_policy_vs_sim_cameras']:.1f}x) |"]
        figures.update(imagined_vs_sim_speedup=sp["speedup_vs_sim_cameras"],
                       imagined_with_policy_vs_sim_speedup=sp["speedup_with_policy_vs_sim_cameras"], speed=sp)
    notes = ROOT / "benchmarks" / "results" / "worldmodel_notes.md"
    if notes.exists():
        lines += ["", notes.read_text().strip()]
    (RESULTS / "worldmodel.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "worldmodel.json").write_text(json.dumps(figures, indent=1))
    print(f"wrote {RESULTS / 'worldmodel.md'} and worldmodel.json")
