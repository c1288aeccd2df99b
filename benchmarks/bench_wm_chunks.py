"""Does the world model tell chunks apart (issue 63)? The chunk-level figures of world models on chunk-truth
sets (`vla wm chunk-truth`: K candidate chunks per state of a policy's own episodes, each executed and
continued in the simulator), from `vla wm eval WM --truth SET ... --out DIR`, each model on the same sets.
The last `--model` is the headline (top-level keys); the others are its comparisons. Writes
benchmarks/results/worldmodel_chunks.json and .md.

    D=runs/s6   # runs/s6/wm63.sh and runs/s7/wm_rank.sh: the commands, in order
    CK=runs/main63/train/checkpoints/step_00003000     # the main job's pretrained policy (0.81 on report)
    vla wm chunk-truth $CK seed_range=tune episodes=20 states_per_episode=3 noisy=5 perturbed=2 out=$D/truth_tune
    vla wm chunk-truth $CK seed_range=report episodes=20 states_per_episode=3 noisy=5 perturbed=2 out=$D/truth_report
    vla wm train runs/main63/demos.zarr runs/main63/refine/store.zarr --out $D/wm      # the default preset
    vla wm eval $D/wm --truth $D/truth_tune --truth $D/truth_report --out $D/wm_eval
    # trained on chunk outcomes too: a collect-range truth set (100 episodes, 297 states), RankNet + value
    vla wm chunk-truth $CK seed_range=collect seed_offset=800000 episodes=100 states_per_episode=3 noisy=5 \
        perturbed=2 out=runs/s7/truth_collect
    vla wm train runs/main63/demos.zarr runs/main63/refine/store.zarr --out runs/s7/wm_rank \
        "train.rank_truth=[runs/s7/truth_collect]"
    vla wm eval runs/s7/wm_rank --truth $D/truth_tune --truth $D/truth_report --out runs/s7/wm_rank_eval
    # its control: the same candidates, their value targets only (runs/s7/wm_abl.sh)
    vla wm train runs/main63/demos.zarr runs/main63/refine/store.zarr --out runs/s7/wm_pointwise \
        "train.rank_truth=[runs/s7/truth_collect]" train.w_rank=0
    vla wm eval runs/s7/wm_pointwise --truth $D/truth_tune --truth $D/truth_report --out runs/s7/wm_pointwise_eval
    # the camera model (agentview + the arm's state, no object pose; configs/worldmodel/cameras.yaml) on the same
    # sets, and the same trained on the chunk outcomes (runs/s11/q_wmcam.sh)
    C="--preset cameras model.state_inputs=9"
    vla wm train runs/main63/demos.zarr runs/main63/refine/store.zarr --out runs/s11/wm_cam $C
    vla wm train runs/main63/demos.zarr runs/main63/refine/store.zarr --out runs/s11/wm_cam_rank $C \
        "train.rank_truth=[runs/s7/truth_collect]"
    # a second collect-range set (100 more episodes), both models on both sets (runs/s11/q_truth2.sh)
    vla wm chunk-truth $CK seed_range=collect seed_offset=801000 episodes=100 states_per_episode=3 noisy=5 \
        perturbed=2 out=runs/s11/truth_collect2
    vla wm train runs/main63/demos.zarr runs/main63/refine/store.zarr --out runs/s11/wm_rank2 \
        "train.rank_truth=[runs/s7/truth_collect,runs/s11/truth_collect2]"
    vla wm train runs/main63/demos.zarr runs/main63/refine/store.zarr --out runs/s11/wm_cam_rank2 $C \
        "train.rank_truth=[runs/s7/truth_collect,runs/s11/truth_collect2]"
    # each `vla wm eval M --truth $D/truth_tune --truth $D/truth_report --out M_eval`, then
    python benchmarks/bench_wm_chunks.py \
        --model default $D/wm_eval/chunk_truth.json "state model, the default preset" \
        --model pointwise runs/s7/wm_pointwise_eval/chunk_truth.json "the control: value targets only" \
        --model cam runs/s11/wm_cam_eval/chunk_truth.json "camera model, the cameras preset" \
        --model cam_rank runs/s11/wm_cam_rank_eval/chunk_truth.json "the same, also trained on runs/s7/truth_collect" \
        --model cam_rank2 runs/s11/wm_cam_rank2_eval/chunk_truth.json "the same, on both collect sets" \
        --model rank2 runs/s11/wm_rank2_eval/chunk_truth.json "state model on both collect sets" \
        --model rank runs/s7/wm_rank_eval/chunk_truth.json "the same, also trained on runs/s7/truth_collect" \
        --camera cam_rank2
    (the headline of each family, fixed before the second set was read: the model trained on both sets where
    its `tune` Spearman is the higher, else the one set's; --camera names the camera model's)

The same figures against their controls (2026-12-06, benchmarks/results/worldmodel_chunks_controls.*; the sets above
and their models' evaluations are gone): report sets of another policy (runs/s14/wmr's d40 checkpoint at 2000
steps, 0.81 real), once with one deterministic continuation and once with 4 sampled ones, the same states and
candidates; every evaluation also reads each set's own reliability, the kind-only control and the policy's own
chunks (runs/s15/truth.sh, wm63c.sh):

    CK=runs/s14/wmr/pretrain/d40/checkpoints/step_00002000
    T="seed_range=report episodes=20 states_per_episode=3 noisy=5 perturbed=2"
    vla wm chunk-truth $CK $T out=runs/s15/truth_det
    vla wm chunk-truth $CK $T continuations=4 continuation_noise=1.0 out=runs/s15/truth_m4
    vla wm chunk-truth $CK seed_range=collect seed_offset=800000 episodes=100 states_per_episode=3 noisy=5 \
        perturbed=2 out=runs/s15/truth_collect_det
    vla wm train runs/s14/wmr/{demos,expert_failures,rollouts}.zarr --out runs/s15/wm_rank_det train.steps=3000 \
        "train.rank_truth=[runs/s15/truth_collect_det]"
    # rank_own: the same collect set without its perturbed copies (runs/s15/wm63d.sh)
    python experiments/truth_own_candidates.py runs/s15/truth_collect_det runs/s15/truth_collect_own
    vla wm train runs/s14/wmr/{demos,expert_failures,rollouts}.zarr --out runs/s15/wm_rank_own train.steps=3000 \
        "train.rank_truth=[runs/s15/truth_collect_own]"
    # each of runs/s14/wmr/wm, runs/s14/wmr/wm_seen, runs/s15/wm_rank_own, runs/s15/wm_rank_det:
    vla wm eval M --truth runs/s15/truth_det --truth runs/s15/truth_m4 --out runs/s15/eval_<m>
    python benchmarks/bench_wm_chunks.py --name worldmodel_chunks_controls \
        --model wm runs/s15/eval_wm/chunk_truth.json "..." \
        --model wm_seen runs/s15/eval_wm_seen/chunk_truth.json "..." \
        --model rank_own runs/s15/eval_wm_rank_own/chunk_truth.json "..." \
        --model rank runs/s15/eval_wm_rank_det/chunk_truth.json "..."

On a robosuite task (2026-12-06, benchmarks/results/worldmodel_chunks_lift.*; runs/s16/q_lift.sh): robosuite lift in
state mode, a policy weak enough to fail (10 demos, 600 steps: 0.76 on 100 tune seeds), its report set, the models
trained on demos, a noisy expert's failures and the policy's rollouts, one of them also on a collect-range truth set
(every process with OMP_NUM_THREADS=1: two torch processes at two threads each on two cores ran 10x slower):

    vla run out_dir=runs/s16/lift_w "stages=[sim_demos,stats,pretrain]" demos.task=lift demos.obs_mode=state \
        demos.gain=null demos.randomize=none demos.episodes=10 pretrain.steps=600
    CK=runs/s16/lift_w/train/checkpoints/step_00000600
    vla wm chunk-truth $CK task=lift seed_range=report episodes=20 states_per_episode=3 noisy=5 perturbed=2 \
        out=runs/s16/truth_lift_report
    vla wm chunk-truth $CK task=lift seed_range=collect seed_offset=800000 episodes=40 states_per_episode=3 noisy=5 \
        perturbed=2 out=runs/s16/truth_lift_collect
    vla eval $CK task=lift episodes=100 seed_range=collect seed_offset=700000 videos=0 \
        record=runs/s16/lift_rollouts.zarr
    vla sim collect runs/s16/lift_failures.zarr task=lift episodes=40 noise=0.3 skill=0.6 obs_mode=state \
        seed_offset=600000
    vla run out_dir=runs/s16/lift "stages=[sim_demos,stats,pretrain]" demos.task=lift demos.obs_mode=state \
        demos.gain=null demos.randomize=none demos.episodes=40   # its 40 demos (its policy scores 1.00: too strong)
    S="runs/s16/lift/demos.zarr runs/s16/lift_failures.zarr runs/s16/lift_rollouts.zarr"
    vla wm train $S --out runs/s16/wm_lift train.steps=2000
    vla wm train $S --out runs/s16/wm_lift_rank train.steps=2000 "train.rank_truth=[runs/s16/truth_lift_collect]"
    vla wm eval runs/s16/wm_lift --truth runs/s16/truth_lift_report --out runs/s16/eval_wm_lift   (and wm_lift_rank)
    python benchmarks/bench_wm_chunks.py --name worldmodel_chunks_lift \
        --model wm_lift runs/s16/eval_wm_lift/chunk_truth.json "..." \
        --model rank_lift runs/s16/eval_wm_lift_rank/chunk_truth.json "..."

The camera model on a camera policy's own chunks (2026-12-06, benchmarks/results/worldmodel_chunks_camera_policy.*;
runs/s16/q_cam.sh): the camera-only policy of runs/s13/cam/i_g07pc_s0 (demos.obs_mode=image, 400 demos, 7,000 steps;
0.77 on the report range), its truth sets storing both cameras' frames at every state:

    CK=runs/s13/cam/i_g07pc_s0/train/checkpoints/step_00007000
    vla wm chunk-truth $CK seed_range=report episodes=20 states_per_episode=3 noisy=5 perturbed=2 \
        out=runs/s16/truth_cam_report
    vla wm chunk-truth $CK seed_range=collect seed_offset=800000 episodes=40 states_per_episode=3 noisy=5 \
        perturbed=2 out=runs/s16/truth_cam_collect
    vla eval $CK episodes=60 seed_range=collect seed_offset=700000 videos=0 temporal_ensemble=0.3 \
        temporal_ensemble_every=2 n_action_steps=4 record=runs/s16/cam_rollouts.zarr
    S="runs/s13/cam/i_g07pc_s0/demos.zarr runs/s16/cam_rollouts.zarr"
    C="--preset cameras model.state_inputs=9 train.steps=1000"
    vla wm train $S --out runs/s16/wm_cam $C
    vla wm train $S --out runs/s16/wm_cam_rank $C "train.rank_truth=[runs/s16/truth_cam_collect]"
    vla wm eval runs/s16/wm_cam --truth runs/s16/truth_cam_report --out runs/s16/eval_wm_cam   (and wm_cam_rank)
    python benchmarks/bench_wm_chunks.py --name worldmodel_chunks_camera_policy --camera cam_rank \
        --model cam runs/s16/eval_wm_cam/chunk_truth.json "..." \
        --model cam_rank runs/s16/eval_wm_cam_rank/chunk_truth.json "..."
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from results_io import RESULTS, write_result

TARGETS = {"chunk_spearman": 0.5, "chunk_auroc_best_vs_worst": 0.8}
KEYS = ("chunk_spearman", "chunk_auroc_best_vs_worst", "states", "states_that_order", "regret", "default_regret",
        "gain_over_default", "picked_value", "best_value")


# the truth set's agreement with itself across its continuations (worldmodel.metrics.truth_reliability)
RELIABILITY = ("split_half_spearman", "spearman_brown", "one_rollout_ceiling")


# read among the policy's own chunks and for the kind-only control (worldmodel.metrics.chunk_report)
SAMPLE_KEYS = ("chunk_spearman", "chunk_auroc_best_vs_worst", "states_that_order", "gain_over_default")


def _round(x: Any) -> Any:
    """A figure to 4 places; NaN (nothing to read) as None."""
    return round(x, 4) if isinstance(x, float) and x == x else (None if isinstance(x, float) else x)


def block(report: dict[str, Any]) -> dict[str, Any]:
    return {k: (round(report[k], 4) if isinstance(report[k], float) else report[k]) for k in KEYS if k in report}


def sets_of(reports: dict[str, Any]) -> dict[str, Any]:
    sets = {}
    for path, r in reports.items():
        meta = json.loads((Path(path) / "meta.json").read_text())
        sets[path] = {"task": r["task"], "seed_range": r["seed_range"], "policy": meta["config"]["policy"],
                      "candidates": 1 + meta["config"]["noisy"] + meta["config"]["perturbed"],
                      "continuations": meta["config"].get("continuations", 1),
                      "continuation_noise": meta["config"].get("continuation_noise", 0.0), **block(r)}
        own, prior = r.get("policy_samples") or {}, r.get("kind_prior") or {}
        sets[path] |= {f"policy_samples_{k}": _round(own.get(k)) for k in SAMPLE_KEYS}
        sets[path] |= {f"kind_prior_{k}": _round(prior.get(k)) for k in SAMPLE_KEYS}
        sets[path] |= {f"kind_prior_policy_samples_{k}": _round((prior.get("policy_samples") or {}).get(k))
                       for k in SAMPLE_KEYS}
        rel = r.get("truth_reliability") or {}
        sets[path] |= {k: _round(rel.get(k)) for k in RELIABILITY}  # NaN (one continuation) is stored as null
    return sets


def report_set(model: dict[str, Any]) -> dict[str, Any] | None:
    """A model's figures on its report-range truth set (None without one)."""
    return next((s for s in model["sets"].values() if s["seed_range"] == "report"), None)


def target_figures(r: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The issue's targets read on report-set figures `r`: each value and whether it is met, keys prefixed."""
    return {f"{prefix}{k}": r[k] for k in TARGETS} | {f"{prefix}{k}_target_met": bool(r[k] is not None and r[k] >= t)
                                                      for k, t in TARGETS.items()}


def target_line(figures: dict[str, Any], what: str, prefix: str = "") -> str:
    met = {k: "met" if figures[f"{prefix}{k}_target_met"] else "not met" for k in TARGETS}
    return (f"Targets on the report set {what}: Spearman >= 0.5 ({met['chunk_spearman']}), AUROC >= 0.8 "
            f"({met['chunk_auroc_best_vs_worst']}).")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", nargs=3, action="append", required=True, metavar=("KEY", "EVAL_JSON", "LABEL"),
                    help="a model: its key, the chunk_truth.json `vla wm eval --truth` wrote, what it is")
    ap.add_argument("--camera", default="", metavar="KEY",
                    help="the --model that is the camera model's headline: its report-set figures also go to the "
                    "top level as camera_<key> (the issue's targets hold for the state and the camera model)")
    ap.add_argument("--name", default="worldmodel_chunks", help="the results' name under benchmarks/results/ "
                    "(another name keeps the figures of earlier sets whose evaluations are gone)")
    args = ap.parse_args()
    models = {key: {"label": label, "sets": sets_of(json.loads(Path(path).read_text()))}
              for key, path, label in args.model}
    if args.camera and args.camera not in models:
        raise SystemExit(f"--camera {args.camera}: not one of the --model keys {sorted(models)}")
    head_key = args.model[-1][0]
    head = models[head_key]
    report = report_set(head)
    figures: dict[str, Any] = {"model": head["label"], "models": models, "headline": head_key,
                               "sets": head["sets"]}
    if report:
        figures |= target_figures(report)
        if report.get("kind_prior_chunk_spearman") is not None:
            prior = report["kind_prior_chunk_spearman"]
            figures |= {"kind_prior_chunk_spearman": prior,
                        "kind_prior_chunk_auroc_best_vs_worst": report["kind_prior_chunk_auroc_best_vs_worst"],
                        "chunk_spearman_above_kind_prior": report["chunk_spearman"] > prior,
                        "policy_samples_chunk_spearman": report["policy_samples_chunk_spearman"]}
    cam_report = report_set(models[args.camera]) if args.camera else None
    if cam_report:
        figures |= {"camera_model": models[args.camera]["label"], "camera_headline": args.camera}
        figures |= target_figures(cam_report, "camera_")
    write_result(args.name, figures, seed_range="report" if report else "tune",
                 key_figures=list(TARGETS) if report else None)

    def cell(row: dict[str, Any], k: str) -> str:
        return "n/a" if row.get(k) is None else f"{row[k]:.3f}"

    lines = ["# Does the world model tell chunks apart? (issue 63)", "",
             "Commands: the docstring of `benchmarks/bench_wm_chunks.py`. Within-state Spearman between the model's "
             "score and the candidate's true value (states whose candidates do not all tie), AUROC of the best "
             "candidate against the worst, and the regret of executing the model's pick against the best candidate "
             "(and of the noise-free chunk, which runs without selection). Every model on the same sets.", "",
             *[f"- `{k}`: {m['label']}" for k, m in models.items()], "",
             "| model | set | seeds | states (ordered) | candidates x continuations | Spearman | best-vs-worst AUROC "
             "| regret of the pick | regret of the noise-free chunk | pick minus noise-free |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key, m in models.items():
        for path, s in m["sets"].items():
            lines.append(f"| {key} | `{path}` | {s['seed_range']} | {s['states']} ({s['states_that_order']}) | "
                         f"{s['candidates']} x {s.get('continuations', 1)} | {cell(s, 'chunk_spearman')} | "
                         f"{cell(s, 'chunk_auroc_best_vs_worst')} | "
                         f"{cell(s, 'regret')} | {cell(s, 'default_regret')} | {cell(s, 'gain_over_default')} |")
    sampled = [(k, p, s) for k, m in models.items() for p, s in m["sets"].items()
               if s.get("policy_samples_chunk_spearman") is not None or s.get("kind_prior_chunk_spearman") is not None]
    if sampled:
        lines += ["", "Against the kind-only control (the noise-free chunk above the policy's samples above the "
                  "perturbed copies, no model), and among the chunks the policy itself proposes (its noise-free chunk "
                  "and samples: what test-time selection chooses between; states where they differ):", "",
                  "| model | set | Spearman, all | kind prior, all | AUROC, all | kind prior AUROC | Spearman, "
                  "policy's chunks (states) | kind prior there | pick minus noise-free there |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for key, p, s in sampled:
            lines.append(f"| {key} | `{p}` | {cell(s, 'chunk_spearman')} | {cell(s, 'kind_prior_chunk_spearman')} | "
                         f"{cell(s, 'chunk_auroc_best_vs_worst')} | "
                         f"{cell(s, 'kind_prior_chunk_auroc_best_vs_worst')} | "
                         f"{cell(s, 'policy_samples_chunk_spearman')} ({s.get('policy_samples_states_that_order')}) | "
                         f"{cell(s, 'kind_prior_policy_samples_chunk_spearman')} | "
                         f"{cell(s, 'policy_samples_gain_over_default')} |")
    checked = {p: s for p, s in head["sets"].items() if s.get("split_half_spearman") is not None}
    if checked:
        lines += ["", "Each truth set against itself (its continuations split in two halves; what any model's Spearman "
                  "on it is capped by):", "",
                  "| set | continuations (noise) | split-half Spearman | Spearman-Brown (all continuations) "
                  "| mean of the others against one continuation |", "|---|---|---|---|---|"]
        lines += [f"| `{p}` | {s['continuations']} ({s['continuation_noise']:g}) | {cell(s, 'split_half_spearman')} | "
                  f"{cell(s, 'spearman_brown')} | {cell(s, 'one_rollout_ceiling')} |" for p, s in checked.items()]
    if report:
        lines += ["", target_line(figures, f"({head_key})")]
        if "kind_prior_chunk_spearman" in figures:
            above = "above" if figures["chunk_spearman_above_kind_prior"] else "not above"
            lines += ["", f"The kind-only control on the same set, with no model: Spearman "
                      f"{figures['kind_prior_chunk_spearman']:.3f}, AUROC "
                      f"{figures['kind_prior_chunk_auroc_best_vs_worst']:.3f}; the model's Spearman is {above} it. "
                      f"Among the policy's own chunks the model reads {figures['policy_samples_chunk_spearman']:.3f}."]
    if cam_report:
        lines += ["", target_line(figures, f"for the camera model ({args.camera})", "camera_")]
    for path, s in head["sets"].items():
        if s.get("gain_over_default") is not None:
            lines += ["", f"`{path}` ({head_key}): executing the model's pick instead of the noise-free chunk changes "
                      f"the true value by {s['gain_over_default']:+.3f} a state; picking the best candidate would gain "
                      f"{s['default_regret']:+.3f} (the room test-time selection has)."]
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print((RESULTS / f"{args.name}.md").read_text())


if __name__ == "__main__":
    main()
