"""Chunk-level ground truth (issue 63): does a world model rank the chunks a policy proposes at one state the way
the simulator would? A truth set holds, for states along a policy's own episodes, K candidate chunks and each
one's true outcome: the candidate's first `execute` actions run in the simulator from that state, then the policy's
own continuation to the end of the episode, `continuations` times.

Candidates (action diversity at one state): the policy's noise-free chunk (candidate 0, what it executes without
selection), `noisy` samples from its flow prior at noise scale 1, and `perturbed` copies of the noise-free chunk
with Gaussian noise of `perturb_std` (of the action range) on every action.

States: every `every` steps of the policy's noise-free episode from each seed, up to `states_per_episode`. The
simulator reaches a state again by resetting with the seed and replaying the recorded actions (MuJoCo is
deterministic; the replayed state is checked against the recorded one, as worldmodel/oracle.py does), so any
task whose reset is seeded works, native or robosuite.

Stored as one folder: `truth.npz` (observations, candidates, outcomes) and `meta.json` (format and version, task,
checkpoint, seeds and every setting): `vla wm chunk-truth`. `score_truth` scores a set with a world model and
`worldmodel.metrics.chunk_report` compares the scores with the truth (`vla wm eval --truth`). Ours: SimplerEnv
(arXiv 2405.05941) validates proxies by policy-level ranking; we found no stack that measures a world model at
the level of the chunks it must choose between.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

FORMAT, VERSION = "chunk-truth", 1


@dataclass
class TruthConfig:
    task: str = "pick_place"
    policy: str = ""  # checkpoint folder
    seed_range: str = "tune"  # vla.protocol: tune while developing, report for figures
    seed_offset: int = 0
    episodes: int = 10
    states_per_episode: int = 3
    every: int = 16  # steps between saved states
    noisy: int = 5  # candidates from the flow prior at noise scale 1
    perturbed: int = 2  # noise-free chunk + Gaussian noise
    perturb_std: float = 0.3  # of the half action range
    execute: int = 8  # actions of a candidate executed before the continuation
    continuations: int = 1  # rollouts per candidate
    continuation_noise: float = 0.0  # the continuation's noise scale (0: deterministic, one rollout says it all)
    n_action_steps: int = 8  # the continuation executes this many actions of each chunk
    horizon: int | None = None
    image_size: int = 84
    out: str = "runs/chunk_truth"

    def validate(self) -> None:
        from vla import protocol

        if not self.policy:
            raise ValueError("chunk-truth needs policy=CHECKPOINT")
        for name in ("episodes", "states_per_episode", "every", "execute", "continuations", "n_action_steps"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.noisy < 0 or self.perturbed < 0 or self.perturb_std < 0 or self.continuation_noise < 0:
            raise ValueError("noisy, perturbed, perturb_std and continuation_noise must be >= 0")
        protocol.check_in_range(self.seed_range, self.seeds(), "seed_offset")

    def seeds(self) -> list[int]:
        from vla import protocol

        return protocol.seeds(self.seed_range, self.episodes, self.seed_offset)

    @property
    def candidates(self) -> int:
        return 1 + self.noisy + self.perturbed


def make_env(cfg: TruthConfig, policy_cfg: Any) -> Any:
    """The task with the policy's cameras and the observation mode whose state size it was trained on."""
    from vla.registry import TASKS

    kwargs: dict[str, Any] = {"cameras": tuple(policy_cfg.cameras), "image_size": cfg.image_size}
    if cfg.horizon is not None:
        kwargs["horizon"] = cfg.horizon
    for mode in ("image", "state"):
        env = TASKS.make(cfg.task, obs_mode=mode, **kwargs)
        if int(env.observation_space["state"].shape[0]) == policy_cfg.state_dim:
            return env
        env.close()
    raise ValueError(f"{cfg.policy}: its state_dim {policy_cfg.state_dim} matches neither observation mode of "
                     f"task '{cfg.task}'")


def _play(env: Any, policy: Any, obs: dict[str, Any], first: np.ndarray, n_action_steps: int,
          t0: int) -> tuple[bool, int]:
    """`first`, then the policy's chunks, until success or the end of the episode: (success, steps taken)."""
    steps, horizon = t0, env.unwrapped.horizon
    queue = list(first)
    while steps < horizon:
        if not queue:
            queue = list(np.asarray(policy.sample_chunk([obs]))[0][:n_action_steps])
        obs, _, term, trunc, info = env.step(queue.pop(0))
        steps += 1
        if info.get("success"):
            return True, steps - t0
        if term or trunc:
            break
    return False, steps - t0


def build(cfg: TruthConfig, progress: bool = True) -> Path:
    """Run the truth set of `cfg` into cfg.out; returns the folder."""
    from vla.policy.specs import check_spec, load_spec
    from worldmodel.oracle import replay

    cfg.validate()
    policy_cfg = check_spec(cfg.policy)
    if policy_cfg is None:
        raise ValueError(f"chunk-truth needs a checkpoint folder, got the wrapper '{cfg.policy}'")
    env = make_env(cfg, policy_cfg)
    plain = load_spec(cfg.policy, noise_scale=0.0)
    noisy = load_spec(cfg.policy, noise_scale=1.0)
    cont = plain if cfg.continuation_noise == 0 else load_spec(cfg.policy, noise_scale=cfg.continuation_noise)
    low, high = env.action_space.low, env.action_space.high
    rows: dict[str, list[Any]] = {k: [] for k in ("seed", "step", "state", "images", "instruction", "chunks",
                                                   "success", "steps", "replay_error")}
    t_start = time.perf_counter()
    try:
        for i, seed in enumerate(cfg.seeds()):
            plain.reset(seed)
            obs, _ = env.reset(seed=seed)
            actions: list[np.ndarray] = []
            saved: list[tuple[int, dict[str, Any]]] = []
            done = False
            while len(actions) < env.unwrapped.horizon and not done:
                if len(actions) % cfg.every == 0 and len(saved) < cfg.states_per_episode:
                    saved.append((len(actions), obs))
                for a in np.asarray(plain.sample_chunk([obs]))[0][:cfg.n_action_steps]:
                    actions.append(np.asarray(a, np.float32))
                    obs, _, term, trunc, info = env.step(a)
                    if info.get("success") or term or trunc:
                        done = True
                        break
            for t, o in saved:
                rng = np.random.default_rng([seed, t])
                base = np.asarray(plain.sample_chunk([o]))[0]
                noisy.reset(int(rng.integers(2**31)))
                cands = [base]
                if cfg.noisy:
                    cands += list(np.asarray(noisy.sample_chunk([o] * cfg.noisy)))
                half = (high - low) / 2
                cands += [np.clip(base + rng.normal(0.0, cfg.perturb_std, base.shape) * half, low, high)
                          for _ in range(cfg.perturbed)]
                ok = np.zeros((len(cands), cfg.continuations), bool)
                took = np.zeros((len(cands), cfg.continuations), np.int32)
                worst = 0.0
                for k, cand in enumerate(cands):
                    for m in range(cfg.continuations):
                        start = replay(env, seed, actions[:t])
                        worst = max(worst, float(np.abs(np.asarray(start["state"], np.float64)
                                                        - np.asarray(o["state"], np.float64)).max()))
                        cont.reset(int(seed * 1000 + t * 10 + m))
                        ok[k, m], took[k, m] = _play(env, cont, start, np.asarray(cand)[:cfg.execute],
                                                     cfg.n_action_steps, t)
                rows["seed"].append(seed)
                rows["step"].append(t)
                rows["state"].append(np.asarray(o["state"], np.float32))
                rows["images"].append(np.stack([o["images"][c] for c in policy_cfg.cameras]) if policy_cfg.cameras
                                      else np.zeros((0,), np.uint8))
                rows["instruction"].append(o["instruction"])
                rows["chunks"].append(np.stack(cands).astype(np.float32))
                rows["success"].append(ok)
                rows["steps"].append(took)
                rows["replay_error"].append(worst)
            if progress:
                n = len(rows["seed"])
                print(f"chunk-truth: seed {i + 1}/{cfg.episodes}, {n} states x {cfg.candidates} candidates, "
                      f"{time.perf_counter() - t_start:.0f} s", flush=True)
    finally:
        env.close()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    arrays = {k: np.asarray(v) for k, v in rows.items() if k != "instruction"}
    arrays["instruction"] = np.asarray(rows["instruction"], dtype=str)
    np.savez_compressed(out / "truth.npz", **arrays)
    meta = {"format": FORMAT, "version": VERSION, "config": asdict(cfg), "cameras": list(policy_cfg.cameras),
            "states": len(rows["seed"]), "candidates": cfg.candidates,
            "seconds": round(time.perf_counter() - t_start, 1),
            "max_replay_error": float(max(rows["replay_error"], default=0.0)),
            "candidate_kinds": ["noise_free"] + ["noisy"] * cfg.noisy + ["perturbed"] * cfg.perturbed}
    meta.update(set_figures(arrays["success"], meta["candidate_kinds"]))
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    return out


def set_figures(success: np.ndarray, kinds: list[str]) -> dict[str, Any]:
    """What a truth set says with no model [S, K, M]: each kind's mean success, its agreement with itself over
    the continuations and what a perfect selector could gain over the noise-free chunk (worldmodel.metrics)."""
    from worldmodel.metrics import selection_ceilings, truth_reliability

    ok = np.asarray(success, np.float64).reshape(len(success), len(kinds), -1)
    by_kind = {k: float(ok[:, [i for i, x in enumerate(kinds) if x == k]].mean()) for k in dict.fromkeys(kinds)}
    return {"success_by_kind": by_kind, "truth_reliability": truth_reliability(ok),
            "selection_ceiling": selection_ceilings(ok, kinds)}


def load_truth(folder: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A truth set's arrays and meta; one error line for a folder that is not one, or of another version."""
    folder = Path(folder)
    meta_path, arrays_path = folder / "meta.json", folder / "truth.npz"
    if not meta_path.exists() or not arrays_path.exists():
        raise FileNotFoundError(f"{folder}: not a chunk-truth set (needs meta.json and truth.npz)")
    meta = json.loads(meta_path.read_text())
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ValueError(f"{meta_path}: format {meta.get('format')!r} version {meta.get('version')!r}; this code "
                         f"reads {FORMAT!r} version {VERSION}")
    with np.load(arrays_path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return arrays, meta


def values(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Each candidate's true value [S, K]: its success rate over the continuations."""
    return arrays["success"].mean(-1)


def score_truth(model: Any, arrays: dict[str, np.ndarray], meta: dict[str, Any], value_weight: float = 0.5,
                disagreement_penalty: float = 1.0) -> np.ndarray:
    """The world model's score of every candidate [S, K], as test-time selection scores them (one chunk imagined
    from the real observation: predicted success, value bootstrap, disagreement penalty)."""
    from worldmodel.select import score_chunks

    s, k = arrays["chunks"].shape[:2]
    cams = meta["cameras"]
    obs = [{"state": arrays["state"][i], "instruction": str(arrays["instruction"][i]),
            "images": {c: arrays["images"][i][j] for j, c in enumerate(cams)}} for i in range(s)]
    return score_chunks(model, obs, arrays["chunks"], value_weight, disagreement_penalty).reshape(s, k)
