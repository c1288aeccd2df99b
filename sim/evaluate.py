"""Parallel evaluation (`vla eval`) and demo collection (`vla sim collect`) in worker processes.

The parent splits a fixed, reproducible seed list (`seed_offset + i` inside a named range of
`vla.protocol`: collect, tune or report) over K worker subprocesses
(`python -m sim.eval_worker SPEC.json`), or with `backend=ray` over K Ray tasks that run the same
worker function anywhere on a cluster (sim/ray_backend.py). Nothing is pickled across the process boundary: the spec
is JSON, each worker appends one JSON line per finished episode to its results file and, when
recording, saves the episode as an `.npz` (loaded with allow_pickle=False); the parent shows
progress from those files, writes recorded episodes to the EpisodeStore (it is the single
writer), and summarises: success rate with a Wilson 95% interval, episode lengths, per-sub-task
success, a summary JSON and a PNG plot. Videos of chosen seeds are MP4 files written by workers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from sim.robustness import ABLATE_BY
from sim.worker_io import EpisodeResult, env_kwargs
from vla import protocol
from vla.data.schema import Episode, closest
from vla.evaluation import OBS_MODES, Execution
from vla.metrics import wilson_interval
from vla.policy.specs import check_spec, policy_label, wrapper_spec
from vla.progress import progress as tqdm
from vla.registry import EVALUATORS

if TYPE_CHECKING:
    from vla.policy.config import PolicyConfig

INTERVENERS = ("", "rac", "hg_dagger")
LABELS = ("noisy", "clean", "expert")


@dataclass
class EvalConfig(Execution):
    """An evaluation (or collection): the shared execution settings (vla.evaluation: task, cameras,
    image_size, horizon, obs_mode, n_action_steps, temporal_ensemble(_every), workers, backend,
    ray_address) and what only an evaluation has."""

    # image (cameras + proprioception) or state (+ the objects' poses); "": a checkpoint's own, found from
    # the state size it was trained on (image for the built-in policies)
    obs_mode: str = ""
    policy: str = "expert"  # zero | random | expert | path to a checkpoint folder
    episodes: int = 10
    # the seeds: offsets seed_offset .. seed_offset + episodes - 1 of a named range (vla.protocol): collect
    # (demos, training rollouts), tune (every choice is made on these) or report (the figures). The summary
    # records the range, so a figure says whether it is held out
    seed_range: str = "tune"
    seed_offset: int = 0
    # an explicit seed list instead (absolute seeds, each inside seed_range; e.g. a resumed run's missing ones)
    seeds: list[int] | None = None
    record: str = ""  # EpisodeStore path to append every episode to ("" = do not record)
    source: str = "rollout"  # source of recorded episodes (demo for `vla sim collect`)
    videos: int = 2  # MP4 of the first N seeds
    video_size: int = 256  # their frames: the task's viewing camera at this size (0: the policy's cameras)
    noise: float = 0.0  # expert only: action noise
    # expert only: what a recorded step's action is when noise > 0: "noisy" (what was executed: sloppy
    # demos) or "clean" (the expert's action before the noise: DART, arXiv:1703.09327, whose demos
    # visit the states a learner drifts to and teach the way back from them); with an intervener,
    # "expert" records every policy step with the expert's action from its state (DAgger's label)
    label: str = "noisy"
    skill: float = 1.0  # expert only: 1 = perfect, lower = hesitant / misgrasps
    # expert only (native tasks): cap on its rotation action, so it turns the hand over the approach
    # (sim.experts.native.NativePickPlaceExpert); None = as fast as it translates
    expert_rot_speed: float | None = None
    # expert only (native tasks): its feedback gain (sim.experts.native, `gain`); None = 1.5. Below 1 its
    # approach tolerates a command that reaches the arm late, and so does a policy that imitates it
    expert_gain: float | None = None
    # expert only (native tasks): chance per episode that the hand lets go of the carried object once
    # and the expert picks it up again (demos with recoveries; needs label=clean, which keeps the
    # forced opening out of the recorded actions)
    expert_drop: float = 0.0
    # expert only (native tasks): chance per episode of a sideways push as the hand comes down to grasp, after
    # which the expert centres again (sim.experts.native, `drift`; needs label=clean, like expert_drop)
    expert_drift: float = 0.0
    # expert only (native tasks): Gaussian noise of this fraction of full scale on its executed rotation, every step
    # (sim.experts.native, `rot_noise`: DART on the tilt a policy never learns to correct; needs label=clean)
    expert_rot_noise: float = 0.0
    # expert only (native tasks): keep the hand's yaw until it hovers over the object, then turn
    # (under the wrist camera; sim.experts.native.NativePickPlaceExpert)
    expert_turn_late: bool = False
    # checkpoints only: the scale of the flow's initial noise instead of the checkpoint's
    # policy.noise_scale (0: every chunk from the prior's mean); None keeps the checkpoint's
    noise_scale: float | None = None
    out_dir: str = "runs/eval"
    policy_version: int = 0
    intervener: str = ""  # "" (none), "rac" (rewind + correct, episode ends) or "hg_dagger"
    intervener_args: dict[str, float] = field(default_factory=dict)  # ExpertIntervener keywords, e.g. subtask_timeout
    # the instruction every episode is given instead of the task's own ("" = the task's): literal text
    # (a neutral phrase), "@wrong" (another goal of the same scene) or "@heldout" (a held-out phrasing
    # of the episode's goal), for the language ablations; the scene and the goal stay the episode's own
    instruction: str = ""
    # checkpoints: ground instructions the policy never saw on the phrasings it was trained on, grouped by
    # meaning: "checkpoint" (those the checkpoint carries: its training instructions with their aliases),
    # an aliases file {instruction: [paraphrase, ...]} (the one given to data.instruction_aliases) or
    # another checkpoint's folder. An unseen text is replaced by a phrasing of the nearest meaning when that
    # one leads the next by instruction_vocab_margin in relative (whitened) distance, and passes as said
    # otherwise (vla.policy.grounding)
    instruction_vocab: str = ""
    instruction_vocab_margin: float = 0.05
    # success against severity (sim/robustness.py): the same seeds under `perturb` with every severity
    # times each factor, e.g. perturb=realistic perturb_sweep=[0,0.5,1,2]; OUT/robustness.json + .png
    perturb_sweep: list[float] | None = None
    # which part of `perturb` costs the most in combination (sim/robustness.py): the whole, then the whole with each
    # group of kinds ("group") or each kind ("kind") left out, on the same seeds; OUT/ablation.json + .png
    perturb_ablate: str = ""

    RENAMED: ClassVar[dict[str, str]] = {
        "seed_start": "seeds come from a named range now: seed_range=collect|tune|report and seed_offset=N "
                      "(vla.protocol; the old seed_start=S below 1000000 is seed_range=collect seed_offset=S)"}

    def seed_list(self) -> list[int]:
        """The absolute seeds this evaluation runs, in order."""
        if self.seeds is not None:
            return [int(s) for s in self.seeds]
        return protocol.seeds(self.seed_range, self.episodes, self.seed_offset)

    def validate(self) -> None:
        if self.episodes < 1 or self.workers < 1 or self.n_action_steps < 1:
            raise ValueError("episodes, workers and n_action_steps must be >= 1, got "
                             f"{self.episodes}, {self.workers}, {self.n_action_steps}")
        self.check_execution()
        seeds = self.seed_list()
        if not seeds or len(set(seeds)) != len(seeds):
            raise ValueError(f"the seed list must be non-empty and without repeats, got {seeds}")
        protocol.check_in_range(self.seed_range, seeds, "seeds" if self.seeds is not None else "seed_offset")
        if self.perturb_ablate and self.perturb_ablate not in ABLATE_BY:
            raise ValueError(f"unknown perturb_ablate '{self.perturb_ablate}'"
                             + closest(self.perturb_ablate, ABLATE_BY))
        if self.perturb_ablate and self.perturb_sweep:
            raise ValueError("perturb_ablate and perturb_sweep are two modes of one evaluation; set one of them")
        if self.label not in LABELS:
            raise ValueError(f"unknown label '{self.label}'" + closest(self.label, LABELS))
        if self.label == "clean" and self.policy != "expert":
            raise ValueError(f"label=clean labels the expert's steps; policy is '{self.policy}'")
        if self.label == "expert" and not self.intervener:
            raise ValueError("label=expert asks the intervener's expert for every step's label; set intervener")
        if self.intervener not in INTERVENERS:
            raise ValueError(f"unknown intervener '{self.intervener}'" + closest(self.intervener, INTERVENERS))
        # imported here: vla.policy imports torch, which the evaluator's parent does not need
        from vla.policy.config import valid_noise_scale

        if self.noise_scale is not None and not valid_noise_scale(self.noise_scale):
            raise ValueError(f"noise_scale must be finite and >= 0 (or null: the checkpoint's), got {self.noise_scale}")
        if self.expert_gain is not None and not 0.0 < self.expert_gain <= 3.0:
            raise ValueError(f"expert_gain must be in (0, 3] (or null: 1.5), got {self.expert_gain}")
        if self.expert_rot_speed is not None and not 0.0 < self.expert_rot_speed <= 1.0:
            raise ValueError(f"expert_rot_speed must be in (0, 1] (or null: no cap), got {self.expert_rot_speed}")
        # the expert's executed-action perturbations (its labels stay its own): with label=clean only, else the
        # recorded actions would teach the perturbation
        for key, teaches, unit in (("expert_drop", "the forced opening", "a probability"),
                                   ("expert_drift", "the push", "a probability"),
                                   ("expert_rot_noise", "the noise", "a fraction of full scale")):
            value = getattr(self, key)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{key} must be {unit} in [0, 1], got {value}")
            if value > 0 and (self.policy != "expert" or self.label != "clean"):
                raise ValueError(f"{key} > 0 needs policy=expert and label=clean (otherwise the recorded actions "
                                 f"would teach {teaches}), got policy={self.policy} label={self.label}")
        if self.instruction and not self.instruction.strip():
            raise ValueError("instruction must be text or empty (the task's own), got only whitespace")
        if self.instruction_vocab:
            from sim.policies import BUILTIN
            from vla.policy.grounding import DEFAULT_MIN_COS, OWN, check_thresholds, load_vocab

            if self.policy in BUILTIN:
                raise ValueError(f"instruction_vocab grounds a checkpoint's instructions; policy '{self.policy}' "
                                 "takes none")
            check_thresholds(self.instruction_vocab_margin, DEFAULT_MIN_COS)
            # a missing or malformed file (or a checkpoint without phrasings) fails here, not in a worker;
            # a wrapped policy spec's own phrasings are checked when its worker loads it
            if self.instruction_vocab != OWN:
                load_vocab(self.instruction_vocab)
            elif Path(self.policy).is_dir():
                try:
                    load_vocab(self.policy)
                except ValueError as e:
                    raise ValueError(f"instruction_vocab={OWN}: {e}") from None
        if self.intervener_args:
            from sim.intervener import intervener_args

            intervener_args({"intervener_args": self.intervener_args})  # unknown keys fail here, not in a worker


def time_to_success(results: list[EpisodeResult]) -> dict[str, float | None]:
    """Efficiency (HABC's second claim): mean control steps and robot seconds (steps over the env's
    control rate) to success over the successful episodes; None without a success."""
    won = [r for r in results if r.success]
    if not won:
        return {"steps_to_success": None, "seconds_to_success": None}
    return {"steps_to_success": float(np.mean([r.length for r in won])),
            "seconds_to_success": float(np.mean([r.length / r.control_hz for r in won]))}


def summarise(results: list[EpisodeResult], config: EvalConfig) -> dict[str, Any]:
    n = len(results)
    k = sum(r.success for r in results)
    lo, hi = wilson_interval(k, n)
    lengths = np.array([r.length for r in results])
    subtask_names: list[str] = []
    for r in results:
        for s in r.subtasks:
            if s not in subtask_names:
                subtask_names.append(s)
    per_subtask = {s: sum(s in r.subtasks_done for r in results) / n for s in subtask_names}
    steps = int(lengths.sum())
    seconds = sum(r.seconds for r in results)
    return {
        "task": config.task, "policy": config.policy, "episodes": n, "successes": k,
        "success_rate": k / n, "wilson95": [lo, hi],
        "length_mean": float(lengths.mean()), "length_median": float(np.median(lengths)),
        "length_success_mean": float(lengths[[r.success for r in results]].mean()) if k else None,
        **time_to_success(results),
        "subtask_success": per_subtask, "seeds": [r.seed for r in results],
        # the protocol range the seeds lie in (vla.protocol): only a "report" figure is held out
        "seed_range": protocol.range_of_seeds(r.seed for r in results) if results else config.seed_range,
        "intervention_steps": sum(r.intervention_steps for r in results),
        "recovery_steps": sum(r.recovery_steps for r in results),
        "episodes_with_takeover": sum(r.takeovers > 0 for r in results),
        "takeover_reasons": dict(Counter(x.split("@")[0] for r in results for x in r.takeover_reasons)),
        "grounded_episodes": sum(bool(r.grounded_to) for r in results),
        "env_steps_per_s_per_worker": steps / seconds if seconds else None,
        "config": asdict(config), "episodes_detail": [asdict(r) for r in results],
    }


def seed_outcomes(summary: dict[str, Any]) -> dict[int, bool]:
    """Success per seed of an evaluation summary (for differences paired by seed)."""
    return {int(e["seed"]): bool(e["success"]) for e in summary["episodes_detail"]}


def seed_completions(summary: dict[str, Any]) -> dict[int, int | None]:
    """Steps to success per seed of an evaluation summary, None where the episode failed (for
    completions compared on the seeds two policies both solved: `vla.metrics.shared_success_length_ratio`)."""
    return {int(e["seed"]): int(e["length"]) if e["success"] else None for e in summary["episodes_detail"]}


def read_seed_outcomes(folder: Path) -> dict[int, bool] | None:
    """`seed_outcomes` of the summary.json in `folder`; None when that evaluation has not run."""
    f = Path(folder) / "summary.json"
    return seed_outcomes(json.loads(f.read_text())) if f.exists() else None


def plot_summary(summary: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    names = ["task", *summary["subtask_success"]]
    rates = [summary["success_rate"], *summary["subtask_success"].values()]
    lo, hi = summary["wilson95"]
    axes[0].bar(names, rates, color=["tab:blue"] + ["tab:gray"] * (len(names) - 1))
    rate = summary["success_rate"]
    axes[0].errorbar([0], [rate], yerr=[[max(rate - lo, 0.0)], [max(hi - rate, 0.0)]], color="black", capsize=6)
    axes[0].set_ylim(0, 1.05)
    axes[0].set_ylabel("success rate")
    policy = policy_label(summary["policy"])
    axes[0].set_title(f"{summary['task']} / {policy}: {summary['successes']}/{summary['episodes']} "
                      f"({summary.get('seed_range', '?')} seeds)")
    axes[0].tick_params(axis="x", rotation=30)
    detail = summary["episodes_detail"]
    axes[1].hist([[d["length"] for d in detail if d["success"]], [d["length"] for d in detail if not d["success"]]],
                 bins=15, stacked=True, label=["success", "failure"], color=["tab:green", "tab:red"])
    axes[1].set_xlabel("episode length (steps)")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def run_evaluation(config: EvalConfig, progress: bool = True) -> dict[str, Any]:
    """Run the episodes in `config.workers` subprocesses (backend=local) or Ray tasks (backend=ray);
    returns the summary (also written to disk)."""
    config.validate()
    from vla.registry import TASKS

    TASKS.get(config.task)  # an unknown task fails here, naming the valid ones, before any worker starts
    # so does a missing or damaged checkpoint or ONNX export (not "worker 0 failed"), and one whose
    # observations the env would not give as asked
    config = observation_contract(config, check_policy_spec(config.policy))
    export = _runtime_policy(config)
    randomized: dict[str, Any] = {}
    estimated: dict[str, Any] = {}
    preset_left: dict[str, str] = {}
    if config.poses:
        config, estimated = _estimated_poses(config, progress)
    if config.perturb != "none" or config.randomize != "none":
        # one that cannot apply to this task or observation fails here, not in a worker; a randomisation's
        # kinds that cannot apply are named once
        from sim.perturb import applicable_kinds, perturbed, preset_applicable

        probe = TASKS.make(config.task, **env_kwargs(config))
        try:
            spec, preset_left = preset_applicable(config.perturb, probe.unwrapped, config.obs_mode, config.task)
            if preset_left:
                config = replace(config, perturb=spec)
                if progress:
                    print(f"perturb: left out {', '.join(preset_left)} ({next(iter(preset_left.values()))})")
            perturbed(probe, config.perturb, config.obs_mode, config.task, config.randomize)
            if config.randomize != "none":
                kept, left = applicable_kinds(config.randomize, probe.unwrapped, config.obs_mode, config.task)
                randomized = {"randomized": kept, "left_out": left}
                if left and progress:
                    print(f"randomize={config.randomize}: left out {', '.join(left)} ({next(iter(left.values()))})")
        finally:
            probe.close()
    out_dir = Path(config.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    seeds = config.seed_list()
    video_seeds = set(seeds[: config.videos])
    workers = min(config.workers, len(seeds))
    store = _open_record_store(config) if config.record else None
    desc = f"{config.task} / {policy_label(config.policy)}"
    with tempfile.TemporaryDirectory(prefix="vla_eval_") as tmp:
        specs = [{**asdict(config), "policy": export or config.policy, "seeds": seeds[w::workers],
                  "video_seeds": sorted(video_seeds),
                  "results": str(Path(tmp) / f"worker{w}.jsonl"),
                  "episode_dir": str(Path(tmp) / "episodes") if store is not None else "",
                  "video_dir": str(out_dir / "videos")} for w in range(workers)]
        # The store is closed here, also when a worker fails, not by the garbage collector: a second
        # evaluation in this process that records to the same store must find the writer lock free.
        try:
            if config.backend == "ray":
                from sim.ray_backend import run_specs

                results = run_specs(specs, config.ray_address, Path(tmp) / "episodes" if store is not None else None,
                                    out_dir / "videos", len(seeds), progress, desc)
            else:
                results = _run_local(specs, Path(tmp), len(seeds), progress, desc)
            if store is not None:
                _record(store, Path(tmp) / "episodes", results, config)
        finally:
            if store is not None:
                store.close()
    summary = summarise(sorted(results, key=lambda r: r.seed), config)
    if preset_left:
        summary["perturb_left_out"] = preset_left
    if randomized:
        summary["randomize"] = randomized
    if estimated:
        from sim.estimated_poses import pose_error_summary

        errors = pose_error_summary((r.success, r.pose_error_mm) for r in results)
        summary["estimated_poses"] = {**estimated, **({"error_mm": errors} if errors else {})}
    if export:
        summary["onnx_export"] = export
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    plot_summary(summary, out_dir / "summary.png")
    return summary


def _runtime_policy(config: EvalConfig) -> str:
    """The ONNX export the workers load instead of a checkpoint folder (runtime=onnx), or ""."""
    from sim.policies import BUILTIN
    from vla.policy.specs import is_onnx_export, wrapper_spec

    if config.runtime != "onnx" or config.policy in BUILTIN or is_onnx_export(config.policy):
        return ""
    if wrapper_spec(config.policy) is not None:
        raise ValueError(f"runtime=onnx runs a checkpoint folder's ONNX export; '{config.policy}' wraps its "
                         "policy (set runtime=torch)")
    from vla.policy.export import runtime_export

    return str(runtime_export(config.policy, config.image_size))


def applicable_perturb(config: EvalConfig) -> tuple[EvalConfig, dict[str, str]]:
    """`config` with the kinds its perturbation's presets bring that cannot apply to this task and policy left
    out (sim.perturb.preset_applicable: object-pose errors for a policy that reads no poses), and those kinds
    with why; `config` itself when every kind applies."""
    from sim.perturb import preset_applicable
    from vla.registry import TASKS

    if config.perturb in ("", "none"):
        return config, {}
    known = observation_contract(config, check_policy_spec(config.policy))
    probe = TASKS.make(known.task, **env_kwargs(known))
    try:
        spec, left = preset_applicable(config.perturb, probe.unwrapped, known.obs_mode, known.task)
    finally:
        probe.close()
    return (replace(config, perturb=spec) if left else config), left


def _estimated_poses(config: EvalConfig, progress: bool) -> tuple[EvalConfig, dict[str, Any]]:
    """`config` with the pose kinds of its perturbation left out (the estimator's own errors replace them),
    after the estimator was checked against the task and the env (one line, before any worker starts)."""
    from sim.estimated_poses import EstimatedPosesEnv, without_pose_kinds
    from vla.registry import TASKS

    if config.obs_mode != "state":
        raise ValueError(f"poses={config.poses}: a pose estimator feeds a state policy's object poses; this "
                         f"policy reads obs_mode={config.obs_mode}")
    perturb, left = without_pose_kinds(config.perturb)
    randomize, left_r = without_pose_kinds(config.randomize)
    if (left or left_r) and progress:
        print(f"poses={config.poses}: left out {', '.join(left + left_r)} (the estimator's own errors replace them)")
    probe = TASKS.make(config.task, **env_kwargs(config))
    try:
        est = EstimatedPosesEnv(probe, config.poses, config.task).estimator
    finally:
        probe.close()
    return replace(config, perturb=perturb, randomize=randomize), {
        "estimator": config.poses, "cameras": est.cameras, "trained_on": est.meta.get("trained_on"),
        "smoothing": config.poses_smoothing, "rest_gate_mm": config.poses_rest_gate_mm, "left_out": left + left_r}


def _run_local(specs: list[dict[str, Any]], tmp: Path, total: int, progress: bool, desc: str) -> list[EpisodeResult]:
    """Each spec in its own `python -m sim.eval_worker` subprocess."""
    procs, result_files, logs = [], [], []
    for w, spec in enumerate(specs):
        spec_path = tmp / f"worker{w}.json"
        spec_path.write_text(json.dumps(spec))
        result_files.append(Path(spec["results"]))
        # One thread per worker: K workers on K cores, no oversubscription (llvmpipe renders too).
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "LP_NUM_THREADS": "1"}
        # stderr goes to a file: a pipe nobody reads while waiting would block a chatty worker.
        log = open(tmp / f"worker{w}.log", "w")  # noqa: SIM115 - closed after the worker exits
        logs.append(log)
        procs.append(subprocess.Popen([sys.executable, "-m", "sim.eval_worker", str(spec_path)], env=env,
                                      stderr=log, stdout=subprocess.DEVNULL))
    try:
        return _wait(procs, result_files, total, progress, desc)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()


def _wait(procs: list[subprocess.Popen], files: list[Path], total: int, progress: bool,
          desc: str) -> list[EpisodeResult]:
    bar = tqdm(total=total, desc=desc, disable=not progress)
    done = 0
    while True:
        finished = all(p.poll() is not None for p in procs)
        lines = [line for f in files if f.exists() for line in f.read_text().splitlines() if line.strip()]
        bar.update(len(lines) - done)
        done = len(lines)
        if finished:
            break
        time.sleep(0.2)
    bar.close()
    for i, p in enumerate(procs):
        if p.returncode != 0:
            log = files[i].with_suffix(".log")
            err = log.read_text() if log.exists() else ""
            raise RuntimeError(f"evaluation worker {i} failed (exit {p.returncode}):\n{err[-3000:]}")
    results = [EpisodeResult.from_dict(json.loads(line)) for line in lines]
    if len(results) != total:
        raise RuntimeError(f"expected {total} episode results, got {len(results)}")
    return results


def check_policy_spec(spec: str) -> PolicyConfig | None:
    """Validate a checkpoint or ONNX export folder in this (parent) process before workers load it: a
    damaged or missing one is one CheckpointError / FileNotFoundError naming the file. Returns the
    folder's policy config (None for a built-in or wrapped policy)."""
    from sim.policies import BUILTIN

    if spec in BUILTIN:
        return None
    if wrapper_spec(spec) is None and not Path(spec).exists():
        raise FileNotFoundError(f"policy '{spec}' is neither a built-in ({', '.join(BUILTIN)}) nor an existing "
                                "checkpoint folder")
    return check_spec(spec)


def _state_dim(config: EvalConfig, obs_mode: str) -> int | None:
    """The state size the task gives in `obs_mode` (None: the task does not take that mode)."""
    from vla.registry import TASKS

    try:  # no cameras: nothing is rendered, only the size is read
        env = TASKS.make(config.task, **env_kwargs({**asdict(config), "obs_mode": obs_mode, "cameras": []}))
    except ValueError:
        return None
    try:
        return int(env.observation_space["state"].shape[0])
    finally:
        env.close()


def observation_contract(config: EvalConfig, policy: PolicyConfig | None) -> EvalConfig:
    """`config` with the observations the policy was trained on: its cameras and the obs_mode whose state
    size is its state_dim, where the config leaves them unset; a config that sets others is one ValueError
    naming both. Without this a policy trained with obs_mode=state failed in every worker ("state has shape
    (9,), the policy expects (22,)") unless the user repeated the mode the checkpoint implies.

    A checkpoint records its cameras and state_dim (config.json; an ONNX export's runtime.json), not the
    mode, so the mode is found from the task's state size in each mode: this serves every checkpoint, old
    ones included, on every task (each one's state mode adds the objects' poses, so the sizes differ)."""
    if policy is None:  # a built-in or wrapped policy brings no contract: the task's defaults
        return replace(config, obs_mode=config.obs_mode or "image")
    cams = list(policy.cameras)
    shown = f"cameras={cams}" if cams else "cameras=[] (state only)"
    if config.cameras is not None and sorted(config.cameras) != sorted(cams):
        raise ValueError(f"cameras={list(config.cameras)}, but the policy {config.policy} was trained on {shown}; "
                         "leave cameras unset to use the policy's")
    dims: dict[str, int | None] = {}
    for mode in sorted(OBS_MODES, key=lambda m: m != config.obs_mode):  # the asked one first: usually one env
        dims[mode] = _state_dim(config, mode)
        if dims[mode] == policy.state_dim:
            break
    fits = [m for m, d in dims.items() if d == policy.state_dim]
    if not fits:
        given = " or ".join(f"{d} (obs_mode={m})" for m, d in dims.items() if d is not None)
        raise ValueError(f"the policy {config.policy} takes a {policy.state_dim}-d state, task '{config.task}' "
                         f"gives {given}: the policy was trained on another task or robot")
    if config.obs_mode and config.obs_mode not in fits:
        raise ValueError(f"obs_mode={config.obs_mode} gives a {dims[config.obs_mode]}-d state on task "
                         f"'{config.task}', but the policy {config.policy} was trained with obs_mode={fits[0]} "
                         f"(a {policy.state_dim}-d state); leave obs_mode unset to use the policy's")
    return replace(config, obs_mode=config.obs_mode or fits[0], cameras=cams)


def _open_record_store(config: EvalConfig) -> Any:
    from vla.data.store import EpisodeStore

    path = Path(config.record)
    if EpisodeStore.exists(path):  # a half-created store (killed creator) is replaced by create
        return EpisodeStore.open(path, mode="a")
    from vla.data.schema import StoreSchema
    from vla.registry import TASKS

    env = TASKS.make(config.task, **env_kwargs(config))
    try:
        obs, _ = env.reset(seed=config.seed_list()[0])  # the schema is what the env really returns
        schema = StoreSchema(cameras={c: img.shape[:2] for c, img in obs["images"].items()},
                             state_dim=int(obs["state"].shape[0]), action_dim=int(env.action_space.shape[0]),
                             fps=float(env.metadata.get("render_fps", 20.0)))
        return EpisodeStore.create(path, schema)
    finally:
        env.close()


def _record(store: Any, episode_dir: Path, results: list[EpisodeResult], config: EvalConfig) -> None:
    for r in sorted(results, key=lambda r: r.seed):
        with np.load(episode_dir / f"{r.seed}.npz", allow_pickle=False) as z:
            steps = {k: z[k] for k in z.files}
        meta = json.loads((episode_dir / f"{r.seed}.json").read_text())
        # A rollout that needed a takeover is an intervention episode (vla.data.schema sources).
        source = "intervention" if config.source == "rollout" and r.intervention_steps else config.source
        store.append_episode(Episode(steps=steps, task=config.task, instruction=meta["instruction"],
                                     success=r.success, source=source, seed=r.seed))


@EVALUATORS.register("sim_episodes")
def run_episodes(progress: bool = True, **config: Any) -> dict[str, Any]:
    """`run_evaluation` by keyword (`EvalConfig` fields), for callers in vla/ that must not import sim/."""
    return run_evaluation(EvalConfig(**config), progress=progress)


@EVALUATORS.register("sim")
def make_training_evaluator(task: str, episodes: int = 10, workers: int = 2, out_dir: str = "runs/train/eval",
                            n_action_steps: int = 8, image_size: int = 84) -> Any:
    """`evaluator(model, step) -> metrics` for the trainer: saves the (EMA) weights it is handed as a
    checkpoint folder and runs the fixed seed list in worker processes."""

    def evaluate(model: Any, step: int) -> dict[str, float]:
        from vla.policy.checkpoint import save_checkpoint

        folder = Path(out_dir) / f"step_{step:08d}"
        save_checkpoint(folder / "policy", model, None)
        s = run_evaluation(EvalConfig(task=task, policy=str(folder / "policy"), episodes=episodes, workers=workers,
                                      n_action_steps=n_action_steps, image_size=image_size, videos=1,
                                      out_dir=str(folder)), progress=False)
        return {"success_rate": s["success_rate"], "length_mean": s["length_mean"]}

    return evaluate
