"""One evaluation worker: `python -m sim.eval_worker SPEC.json` (local backend, see sim/evaluate.py), or
`run_worker(spec)` inside a Ray task (sim/ray_backend.py)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from sim.intervener import intervener_args, intervener_expert_options
from sim.perturb import perturbed
from sim.policies import ExpertPolicy, expert_options, load_policy
from sim.worker_io import EpisodeResult, env_kwargs
from vla.data.builder import EpisodeBuilder
from vla.policy.ensemble import ChunkSchedule
from vla.video import annotate, can_view, view_frame, write_mp4


def run_eval_episode(env: Any, policy: Any, seed: int, spec: dict[str, Any], record: bool, video: bool,
                intervener: Any = None) -> tuple[EpisodeResult, EpisodeBuilder | None, list[np.ndarray]]:
    """One episode: the policy's chunks, `n_action_steps` at a time; an intervener, when given, may
    take over at any step (its steps are flagged), RaC episodes end after the intervention."""
    obs, info = env.reset(seed=seed, options=instruction_option(env, seed, spec.get("instruction", "")))
    # Every policy's noise restarts from the episode's seed: an episode's result must not depend on
    # which worker ran it (once all of a worker's episodes replayed one noise stream, and the same
    # checkpoint scored 35% or 51% on the same 100 seeds with 1 or 2 workers).
    policy.reset(seed)
    if intervener is not None:
        intervener.reset()
        intervener.expert.reset(seed)
    builder = EpisodeBuilder(task=spec["task"], instruction=obs["instruction"], source=spec["source"],
                             seed=seed) if record else None
    instruction, grounding = str(obs["instruction"]), getattr(policy, "grounding", None)
    video_size = int(spec["video_size"])
    frames: list[np.ndarray] = [annotate(view_frame(env, obs, video_size), 0, info.get("subtask"), "policy")
                                ] if video and can_view(env, obs, video_size) else []
    subtasks: list[str] = []
    schedule = ChunkSchedule(int(spec["n_action_steps"]), spec.get("temporal_ensemble"),
                             int(spec.get("temporal_ensemble_every", 1)))
    guided_chunk, guided_steps = False, []
    total_reward, steps, n_intervention, n_recovery, t0 = 0.0, 0, 0, 0, time.perf_counter()
    done = False
    while not done:
        if isinstance(policy, ExpertPolicy):
            policy.info = info
        action, queried = schedule.action(policy, obs)
        if queried:
            guided_chunk = bool(np.any(getattr(policy, "last_guided", False)))
        is_intervention, is_recovery = False, False
        if intervener is not None:
            info["policy_action"] = action
            if intervener.wants_control(obs, info):
                action, is_recovery = intervener.act(obs, info)
                is_intervention = True
            elif intervener.episode_done:
                break  # RaC: the episode ends with the intervention
        if not is_intervention and guided_chunk:
            guided_steps.append(steps)
        label = action
        if spec["label"] == "clean" and not is_intervention:
            label = policy.expert.clean_action  # DART: execute the noisy action, teach the clean one
        elif spec["label"] == "expert" and not is_intervention and intervener is not None:
            label = intervener.label(obs, info)  # DAgger: execute the policy's action, teach the expert's
        next_obs, reward, terminated, truncated, info = env.step(action)
        schedule.executed(by_policy=not is_intervention)  # after a takeover the policy re-plans from scratch
        if builder is not None:
            builder.add_step(images=obs["images"], state=obs["state"], action=label, timestamp=obs["timestamp"],
                             reward=float(reward), is_intervention=is_intervention, is_recovery=is_recovery,
                             policy_version=spec["policy_version"])
        obs = next_obs
        total_reward += float(reward)
        steps += 1
        n_intervention += is_intervention
        n_recovery += is_recovery
        if frames:
            control = "intervener" if is_intervention else "guided" if guided_chunk else "policy"
            frames.append(annotate(view_frame(env, obs, video_size), steps, info.get("subtask"), control))
        sub = info.get("subtask")
        if sub is not None and (not subtasks or subtasks[-1] != sub):
            subtasks.append(str(sub))
        rac_over = intervener is not None and intervener.episode_done
        done = bool(terminated or truncated or info.get("success") or rac_over)
    success = bool(info.get("success", False))
    finished = [str(s) for s in info.get("subtasks_done", subtasks if success else subtasks[:-1])]
    result = EpisodeResult(seed=seed, success=success, length=steps, reward=total_reward, subtasks=subtasks,
                           subtasks_done=finished, seconds=time.perf_counter() - t0,
                           intervention_steps=n_intervention, recovery_steps=n_recovery,
                           takeovers=len(intervener.takeovers) if intervener is not None else 0,
                           takeover_reasons=[f"{why}@{at}" for at, why in intervener.takeovers]
                           if intervener is not None else [],
                           guided_steps=guided_steps, control_hz=float(env.metadata.get("render_fps", 20.0)),
                           grounded_to=grounding.grounded_to(instruction) if grounding is not None else "")
    return result, builder, frames


def instruction_option(env: Any, seed: int, instruction: str) -> dict[str, str] | None:
    """The reset option of EvalConfig.instruction: None (the task's own), literal text, or "@wrong" /
    "@heldout", which the task derives from the episode's goal (after a first reset with the seed)."""
    if not instruction:
        return None
    if instruction.startswith("@"):
        unwrapped = env.unwrapped
        if not hasattr(unwrapped, "ablation_instruction"):
            raise ValueError(f"instruction={instruction}: task {type(unwrapped).__name__} has no same-scene "
                             "alternatives (tasks with them: sort, the mw_* same-scene pairs)")
        env.reset(seed=seed)
        return {"instruction": unwrapped.ablation_instruction(instruction[1:])}
    return {"instruction": instruction}


def run_worker(spec: dict[str, Any]) -> Iterator[EpisodeResult]:
    """The spec's episodes in order, one env and policy for all of them; yields each result after
    its episode's `.npz`/`.json` (when `episode_dir` is set) and video are on disk. Both backends
    run this: the local one in a `python -m sim.eval_worker` process, the Ray one in a Ray task
    (sim/ray_backend.py), so the same seeds give the same episodes on either."""
    from vla.registry import TASKS

    env = perturbed(TASKS.make(spec["task"], **env_kwargs(spec)), spec.get("perturb", "none"),
                    env_kwargs(spec)["obs_mode"], spec["task"], spec.get("randomize", "none"))
    estimated = None
    if spec.get("poses"):
        from sim.estimated_poses import EstimatedPosesEnv

        env = estimated = EstimatedPosesEnv(env, spec["poses"], spec["task"], spec.get("poses_smoothing", 1.0),
                                            spec.get("poses_rest_gate_mm", 0.0))
    policy = load_policy(spec["policy"], env, noise=spec["noise"], skill=spec["skill"],
                         seed=spec["seeds"][0] if spec["seeds"] else 0, noise_scale=spec.get("noise_scale"),
                         expert_options=expert_options(spec))
    if spec.get("instruction_vocab"):
        from vla.policy.grounding import DEFAULT_MARGIN, attach

        attach(policy, spec["instruction_vocab"], spec.get("instruction_vocab_margin", DEFAULT_MARGIN))
    intervener = None
    if spec["intervener"]:
        from sim.intervener import ExpertIntervener
        from sim.policies import make_expert

        expert = make_expert(env, seed=spec["seeds"][0] if spec["seeds"] else 0,
                             options=intervener_expert_options(spec))
        intervener = ExpertIntervener(env, expert, mode=spec["intervener"], **intervener_args(spec))
    episode_dir = Path(spec["episode_dir"]) if spec["episode_dir"] else None
    if episode_dir is not None:
        episode_dir.mkdir(parents=True, exist_ok=True)
    try:
        for seed in spec["seeds"]:
            video = seed in spec["video_seeds"]
            result, builder, frames = run_eval_episode(env, policy, seed, spec, episode_dir is not None, video,
                                                       intervener)
            if estimated is not None:
                result.pose_error_mm = estimated.episode_errors_mm()
            if hasattr(policy, "episode_done"):  # a learner's policy keeps what it decided (DSRL's steered one)
                policy.episode_done(seed, result.success)
            if frames:
                result.video = str(write_mp4(Path(spec["video_dir"]) / f"{spec['task']}_seed{seed}.mp4", frames))
            if builder is not None and episode_dir is not None:
                episode = builder.finish(result.success)
                np.savez(episode_dir / f"{seed}.npz", **episode.steps)
                (episode_dir / f"{seed}.json").write_text(json.dumps({"instruction": episode.instruction}))
            yield result
    finally:
        env.close()


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    for result in run_worker(spec):
        with open(spec["results"], "a") as f:  # one line per episode: the parent's progress signal
            f.write(json.dumps(result.__dict__) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
