"""`vla refine imagination`: the policy improves from rollouts imagined in the world model, inside
the one refinement loop (vla/refine/loop.py; registered in `vla.registry.REFINE_METHODS`).

Per iteration k (policy version k), after the loop has collected a few real rollouts of version k
without any intervener:
1. co-evolution (WoVR, World-VLA-Loop): the world model is refitted on the run's store (demos and
   every real rollout so far; never the imagined episodes) for `refit_steps` more steps, so its
   errors where the new policy goes are corrected. The first iteration starts from `wm` (a trained
   model) or trains one for `wm_steps`;
2. start states: real recorded states of version k's rollouts, first frames and keyframes (every
   fraction in `keyframes`), at most `starts` of them;
3. K = `samples` chunk sequences of version k from each start, `chunks` chunks long, scored,
   guarded and weighted by `worldmodel.imagination_math` (group-relative advantages);
4. the first `train_chunks` chunks of the rollouts with a positive weight go to the run's store
   (source=imagined, the seed of the real episode they started from), returned to the loop with
   their weights (`vla.refine.method.Added`, kept in `iter_k/added.json`).
`oracle=true` executes the same starts and samples in the simulator (worldmodel/oracle.py) and
weights them by the true success: the same budget, a perfect model. With
`oracle_continuation=deployed` only the supervised chunks are sampled and the policy as it deploys plays
on (to `oracle_chunks`), so a chunk is judged by its value under the policy, not by a noisy sequence's luck.
Fine-tuning version k then supervises demos (weight 1, `demo_share` of the windows) and the
imagined steps (their rollout's weight); the policy's own real steps only with `real_weight` > 0.

Image policies (any that reads cameras: `obs_mode=image`, or `obs_mode=state` on a native task, which
keeps its cameras): the model renders nothing, so an image policy cannot act inside
it, but it can be scored one chunk ahead. Its K chunks are sampled from the real recorded
observation at each start (cameras and proprio), the model (which sees a camera itself: preset
`cameras`) predicts where each chunk leads, and the score is the success within that chunk plus
the value bootstrap, minus the disagreement penalty (`chunks` must be 1). The chunk goes to the
store as a one-chunk imagined episode that holds its start frame, and only its first window (the
real observation and the scored chunk) is supervised. This is the `train_chunks=1` setting of the
state-mode runs, which was also their best.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vla.refine.method import Added, MethodArgs, RefineMethod, Rollouts, Run
from vla.refine.weights import StepWeights
from vla.registry import REFINE_METHODS


@dataclass
class ImaginationArgs(MethodArgs):
    wm: str = ""  # a trained world model (checkpoint or run folder) to start from; "" = train one
    wm_preset: str = ""  # "" = `default` (state mode) or `cameras` (obs_mode=image)
    wm_overrides: list[str] = field(default_factory=list)  # e.g. [model.ensemble=3]
    wm_steps: int = 2000  # training steps when no `wm` is given
    refit_steps: int = 300  # co-evolution: more steps on the grown store each iteration (0 = never)
    starts: int = 32  # real start states per iteration
    keyframes: list[float] = field(default_factory=lambda: [0.0, 0.3, 0.6])
    samples: int = 8  # chunk sequences per start (the group of the group-relative advantage)
    # the flow prior's noise scale the K samples are drawn at (null: the checkpoint's own). A checkpoint that
    # deploys noise-free (policy.noise_scale=0, the main job's since 2026-12-04) gives K identical chunks whose
    # scores cannot differ: every start fell under min_std and nothing was supervised (the job's imagine stage
    # reported 0 supervised; a state base on pick_place 0 of 240). Rollouts and evaluations keep the checkpoint's.
    # 0.3 since 2026-12-08 (1.0 before): samples at 1.0 move the gripper 0.20 a step against the demos' 0.06, and
    # even the oracle lost more with them (worldmodel_notes.md; runs/s30/decision.txt)
    sample_noise: float | None = 0.3
    chunks: int = 6  # imagined chunks per rollout (short: model error compounds)
    # leading chunks of each rollout that are supervised: 1 (the chunk taken from the real state)
    # reached 0.50 from 0.42 over 5 seeds, 2 fell to 0.35 (benchmarks/results/imagination.md)
    train_chunks: int = 1
    value_weight: float = 0.5
    disagreement_penalty: float = 1.0
    guard_factor: float = 2.0  # successes with disagreement above guard_factor x the median are dropped
    beta: float = 1.0
    w_max: float = 5.0
    min_std: float = 0.05  # a start whose K scores spread less than this gets no weight: their order is noise
    # what each sample is weighed against: "group", the mean of the start's K samples (GRPO's); "deployed", the
    # policy's own chunk at the checkpoint's noise rolled out from the same start (one more rollout a start), so
    # only a sample that beats what the policy does anyway is supervised (imagination_math.baseline_advantages).
    # "deployed" since 2026-12-08 ("group" before)
    baseline: str = "deployed"
    real_weight: float = 0.0  # loss weight of the policy's own real rollout steps
    # the demos' share of the sampled windows; null: every supervised window at its natural share. At 0.5 the
    # 14-25 chunks a round supervises fill half of every batch (about 20x their share of the steps). null since
    # 2026-12-08 (0.5 before)
    demo_share: float | None = None
    # false: an equal-compute control - the same real rollouts and fine-tuning, no world model. With
    # real_weight=1 it trains on the policy's own rollouts, unfiltered; with real_weight=0 on the demos
    # alone (the demos-only control: what the fine-tuning steps give without any new data)
    imagine: bool = True
    # true: the oracle - the same starts and K chunk sequences executed in the simulator, scored by the
    # true success (worldmodel/oracle.py); what a perfect world model would give on this budget
    oracle: bool = False
    # the oracle's look-ahead in chunks (0 = `chunks`, the imagined budget): the world model's score
    # adds a value bootstrap for a rollout cut short, the simulator's true counterpart is to play the
    # policy on, so a longer look-ahead is the fair "perfect model" (success until then, not in 6 chunks)
    oracle_chunks: int = 0
    # what the oracle plays after the first `train_chunks` chunks (the supervised ones): "sampled", the same
    # noisy samples (the imagined rollout's counterpart); "deployed", the policy as it deploys (its own noise),
    # so a chunk's outcome is its value under the policy, Q(s, chunk), and not the luck of a noisy sequence
    oracle_continuation: str = "sampled"
    # what a supervised start writes: "samples", the chosen samples; "deployed" (a control, with baseline=deployed), the
    # policy's own noise-free chunk from the same start in their place, at the same weights: a target the policy
    # already outputs, so whatever it changes is the imagined episodes' data path, not their content
    supervise: str = "samples"
    # supervise only each imagined episode's first window (its real start and the chunk planned there); image
    # policies always do (their later steps hold the start frame). True since 2026-12-08: on the oracle, the later
    # windows of an open-loop chunk cost -0.093 [-0.173, -0.014] (worldmodel_notes.md)
    first_window_only: bool = True

    def validate(self) -> None:
        from vla.policy.config import valid_noise_scale

        for name in ("starts", "samples", "chunks", "train_chunks"):
            if getattr(self, name) < 1:
                raise ValueError(f"method_args.{name} must be >= 1, got {getattr(self, name)}")
        if self.samples < 2:
            raise ValueError("method_args.samples must be >= 2: advantages are relative within a start's samples")
        if not all(0 <= f < 1 for f in self.keyframes) or not self.keyframes:
            raise ValueError(f"method_args.keyframes must be fractions in [0, 1), got {self.keyframes}")
        if self.sample_noise is not None and not (valid_noise_scale(self.sample_noise) and self.sample_noise > 0):
            raise ValueError(f"method_args.sample_noise must be > 0 (K samples must differ) or null, "
                             f"got {self.sample_noise}")
        if self.baseline not in ("group", "deployed"):
            raise ValueError(f"method_args.baseline must be 'group' or 'deployed', got {self.baseline!r}")
        if self.demo_share is not None and not 0 <= self.demo_share <= 1:
            raise ValueError(f"method_args.demo_share must be in [0, 1] or null, got {self.demo_share}")
        if self.real_weight < 0:
            raise ValueError(f"method_args.real_weight must be >= 0, got {self.real_weight}")
        if self.oracle_chunks < 0 or (self.oracle_chunks and not self.oracle):
            raise ValueError("method_args.oracle_chunks is the oracle's look-ahead: >= 1 with oracle=true")
        if self.oracle_continuation not in ("sampled", "deployed"):
            raise ValueError(f"method_args.oracle_continuation must be 'sampled' or 'deployed', "
                             f"got {self.oracle_continuation!r}")
        if self.oracle_continuation == "deployed" and not self.oracle:
            raise ValueError("method_args.oracle_continuation=deployed is the oracle's: it needs oracle=true")
        if self.supervise not in ("samples", "deployed"):
            raise ValueError(f"method_args.supervise must be 'samples' or 'deployed', got {self.supervise!r}")
        if self.supervise == "deployed" and self.baseline != "deployed":
            raise ValueError("method_args.supervise=deployed writes the deployed chunk's rollout: it needs "
                             "baseline=deployed")
        if self.oracle and not self.imagine:
            raise ValueError("method_args.oracle=true replaces the world model's outcomes: it needs imagine=true")


def policy_reads_cameras(cfg: Any) -> bool:
    """Whether the refined policy reads cameras: obs_mode=image, or a checkpoint with cameras (obs_mode=state
    keeps a native task's cameras: a policy of cameras and object poses)."""
    from vla.policy.checkpoint import CheckpointError, load_config

    if cfg.obs_mode != "state":
        return True
    try:
        return bool(load_config(cfg.ckpt).cameras)
    except CheckpointError:  # not a checkpoint folder: the run's own check names it
        return False


@REFINE_METHODS.register("imagination")
class Imagination(RefineMethod):
    Args = ImaginationArgs
    args: ImaginationArgs
    intervener = ""  # the policy's own rollouts, no person

    def check(self) -> None:
        self.images = policy_reads_cameras(self.run_cfg)
        if self.images and self.args.imagine and self.args.chunks != 1:
            raise ValueError(f"method_args.chunks must be 1 for a policy that reads cameras, got {self.args.chunks}: "
                             "the world model predicts no images, so an image policy acts only at the real start "
                             "state (its chunk is scored by the predicted success and value after it)")
        if self.images and self.args.oracle:
            raise ValueError("method_args.oracle=true needs a state-only policy (obs_mode=state cameras=[]): the "
                             "oracle's simulators run without cameras")
        if not self.args.wm_preset:
            self.args.wm_preset = "cameras" if self.images else "default"

    # ------------------------------------------------------------------ world model
    def wm_dir(self, run: Run) -> Path:
        return run.out / "wm"

    def refit(self, run: Run, version: int) -> dict[str, Any]:
        c = self.args
        return fit_run_world_model(run, self.wm_dir(run), c.wm, c.wm_preset, c.wm_overrides,
                                   lambda base: base + (version + 1) * c.refit_steps, c.wm_steps)

    # ------------------------------------------------------------------ imagination
    def augment(self, run: Run, rollouts: Rollouts) -> Added | None:
        if not self.args.imagine:
            return None
        from vla.data.store import EpisodeStore
        from vla.policy.config import check_sampling_noise
        from worldmodel.checkpoint import load_checkpoint
        from worldmodel.imagination_math import (
            advantage_weights,
            baseline_advantages,
            group_advantages,
            group_std,
            guard,
            rollout_scores,
        )
        from worldmodel.imagined_env import (
            ImaginedEnv,
            StartStates,
            policy_observations,
            rollout,
            start_states,
            write_imagined,
        )
        from worldmodel.rank import load_candidate

        c, version = self.args, rollouts.version
        wm_info = self.refit(run, version)
        model, job, meta, _, _ = load_checkpoint(self.wm_dir(run))
        with EpisodeStore.open(run.store_path) as store:
            table, cams = store.table(), list(store.schema.cameras)
        # a run resumed after a crash may hold imagined episodes of this round that the loop never
        # recorded as added: they are ignored (only the episodes in `Added` are supervised)
        eps = rollouts.episodes
        rng = np.random.default_rng([self.run_cfg.seed, version])
        parts = [start_states(run.store_path, model, episodes=eps, keyframe=f, task=self.run_cfg.task)
                 for f in c.keyframes]
        starts = StartStates.concat(parts)
        if len(starts) > c.starts:
            starts = starts.take(np.sort(rng.choice(len(starts), c.starts, replace=False)))
        seed = self.run_cfg.seed * 1000 + version
        policy = load_candidate(run.policy_path(version), seed=seed, noise_scale=c.sample_noise)
        check_sampling_noise(policy, c.samples, "imagination (method_args.sample_noise=null)")
        # the policy as it deploys (its own noise): the oracle's continuation and the deployed baseline's chunk
        own = load_candidate(run.policy_path(version), seed=seed) \
            if c.oracle_continuation == "deployed" or c.baseline == "deployed" else None
        reps = starts.repeat(c.samples)
        frames = None
        if c.oracle:
            from worldmodel.oracle import simulate

            after = own if c.oracle_continuation == "deployed" else None

            def play(pol: Any, n: int) -> dict[str, np.ndarray]:
                return simulate(self.run_cfg.task, run.store_path, starts, n, c.oracle_chunks or c.chunks,
                                job.model.chunk, pol, seed=seed, continuation=after, sampled_chunks=c.train_chunks)
        else:
            env = ImaginedEnv(model, max_chunks=c.chunks, fps=meta.get("fps", 20.0))
            real = None
            if self.images:  # the real observation at each start: what an image policy samples from
                real = policy_observations(run.store_path, starts, cams)  # read once, sampled K times
                frames = {cam: np.repeat(np.stack([o["images"][cam] for o in real]), c.samples, 0) for cam in cams}
                seen = list(getattr(getattr(policy, "cfg", None), "cameras", cams))  # a policy refuses others
                real = [{**o, "images": {cam: o["images"][cam] for cam in seen}} for o in real]

            def play(pol: Any, n: int) -> dict[str, np.ndarray]:
                first_obs = None if real is None else [o for o in real for _ in range(n)]
                return rollout(env, pol, starts.repeat(n), c.chunks, seed=seed, first_obs=first_obs)
        res = play(policy, c.samples)
        median_dis = float(np.median(res["disagreement"]))

        def score(r: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
            dis = r["disagreement"]
            hit = np.argmax(r["success_prob"] >= 0.5, axis=1)
            trusted = guard(r["success"], dis[np.arange(len(dis)), hit], c.guard_factor * median_dis)
            probs = np.where(trusted[:, None] | ~r["success"][:, None], r["success_prob"],
                             np.minimum(r["success_prob"], 0.49))  # a distrusted success counts as a failure
            return rollout_scores(probs, r["value"][:, -1], dis, value_weight=c.value_weight,
                                  disagreement_penalty=c.disagreement_penalty), trusted

        scores, trusted = score(res)
        groups = np.repeat(np.arange(len(starts)), c.samples)
        deployed, own_res = None, None
        if c.baseline == "deployed":  # the chunk the policy deploys, from each start, scored the same way
            own_res = play(own, 1)
            deployed = score(own_res)[0]
            adv = baseline_advantages(scores, groups, deployed, min_std=c.min_std)
        else:
            adv = group_advantages(scores, groups, min_std=c.min_std)
        weights = advantage_weights(adv, beta=c.beta, w_max=c.w_max)
        keep = np.flatnonzero(weights > 0)
        rows, result, which, images = reps, res, keep, frames
        if c.supervise == "deployed":  # the control: each chosen sample's start, its deployed rollout in its place
            assert own_res is not None
            rows, result, which = starts, own_res, groups[keep]
            images = None if frames is None else {k: v[::c.samples] for k, v in frames.items()}
        written = write_imagined(run.store_path, rows, result, self.run_cfg.task, job.model.chunk,
                                 meta.get("fps", 20.0), seeds=table.seed[rows.episode], max_chunks=c.train_chunks,
                                 policy_version=version, which=which, start_images=images)
        spread = group_std(scores, groups, deployed)
        info = {"starts": len(starts), "rollouts": len(reps), "imagined_success": float(res["success"].mean()),
                # why a start's chunks are not supervised: their scores barely differ (the advantages' min_std)
                "score_std_within_start_median": float(np.median(spread)),
                "starts_under_min_std": int((spread < c.min_std).sum()), "sample_noise": c.sample_noise,
                "baseline": c.baseline, "demo_share": c.demo_share, "supervise": c.supervise,
                "guard_rejected": int((res["success"] & ~trusted).sum()), "score_mean": float(scores.mean()),
                "supervised_rollouts": len(keep), "real_start_episodes": eps.tolist(),
                "wm": {k: wm_info.get(k) for k in ("steps", "seconds")}, "oracle": c.oracle}
        if deployed is not None:  # how often a sample beat the policy's own chunk, by the score
            info["deployed_score_mean"] = float(deployed.mean())
            info["samples_above_deployed"] = int((scores > deployed[groups]).sum())
        if c.oracle:
            info["oracle_continuation"] = c.oracle_continuation
            info["replay_error_max"] = float(res["replay_error"].max())
            info["simulated_steps"] = int(res["lengths"].sum())
        # image mode: an episode's later steps hold its start frame, so only its first window is real
        first = self.images or c.first_window_only
        info["first_window_only"] = first
        return Added(episodes=written, weights=weights[keep].tolist(), first_window_only=first, info=info)

    # ------------------------------------------------------------------ weights
    def weights(self, run: Run, version: int, model: torch.nn.Module, added: list[Added]
                ) -> tuple[StepWeights, dict[str, float]]:
        from vla.data.schema import EXECUTED
        from vla.data.store import EpisodeStore
        from vla.refine.weights import demo_loss, sample_distribution

        with EpisodeStore.open(run.store_path) as store:
            table = store.table()
        starts, ends = table.episode_starts, table.episode_ends
        loss, demo = demo_loss(table)
        n_imagined, w_sum = 0, 0.0
        for a in added:  # imagined data of every iteration so far, aggregated
            for e, w in zip(a.episodes, a.weights, strict=True):
                loss[starts[e]:starts[e] + 1 if a.first_window_only else ends[e]] = w
                n_imagined += 1
                w_sum += w
        if self.args.real_weight > 0:
            for e in np.flatnonzero(np.isin(table.source, EXECUTED)):
                loss[starts[e]:ends[e]] = self.args.real_weight
        sample = sample_distribution(loss, demo, self.args.demo_share)
        return StepWeights(loss=loss, sample=sample), {
            "imagined_episodes_supervised": float(n_imagined),
            "imagined_weight_mean": w_sum / max(n_imagined, 1), "supervised_steps": float((loss > 0).sum())}


def fit_run_world_model(run: Run, out: Path, wm: str, preset: str, overrides: list[str],
                        total_steps: Callable[[int], int], wm_steps: int) -> dict[str, Any]:
    """Train (or continue) a refinement run's world model in `out` on the run's store, resumably:
    from the given model `wm` (its architecture and step count) or from scratch for `wm_steps`;
    it trains up to `total_steps(base step)` steps."""
    from vla.config import load_config
    from worldmodel.checkpoint import latest_wm_checkpoint, load_checkpoint, resolve
    from worldmodel.config import WMJobConfig
    from worldmodel.train import train_world_model

    base, given = wm_steps, None
    if wm:  # continue the given model: its architecture, its step count
        src = resolve(wm)
        _, given, _, _, state = load_checkpoint(src)
        base = int(state["step"])
        if latest_wm_checkpoint(out) is None:
            (out / "checkpoints").mkdir(parents=True, exist_ok=True)
            shutil.copytree(src, out / "checkpoints" / f"step_{base:08d}")
    job = load_config(WMJobConfig, "worldmodel", preset,
                      [*overrides, "train.progress=false", "train.val_fraction=0",
                       f"train.steps={total_steps(base)}", f"train.seed={run.cfg.seed}"])
    if given is not None:
        job.model = given.model
    return train_world_model([str(run.store_path)], out, job, task=run.cfg.task, resume=True)


__all__ = ["Imagination", "ImaginationArgs", "fit_run_world_model"]
