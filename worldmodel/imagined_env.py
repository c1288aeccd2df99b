"""The imagined environment: a batched, gymnasium-style environment over the world model.

It starts from real recorded states (an episode's first frame or a mid-episode keyframe: WoVR's
keyframe-initialised rollouts), takes one action chunk per
step for B episodes at once, and reports per episode the predicted success probability, the
value and the ensemble's disagreement. Each ensemble member carries its own latent, so the
disagreement grows where the model is unsure. An episode is imagined a success when the members'
mean success probability passes `success_threshold`; a success the members disagree on
(disagreement above `max_disagreement`) is not counted (the hallucination guard).

The observation it returns holds the predicted state and no images: a decoder-free model renders
nothing, so state policies can act in it and image policies cannot (`check_policy`). An image
policy can still be scored through it for one chunk: its chunk is sampled from the real recorded
observation at the start (`policy_observations`), and the model predicts where that chunk leads
(`rollout(..., first_obs=...)` with one chunk).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vla.data.store import EpisodeStore
from worldmodel.data import WorldModelDataError, check_store, resize_images
from worldmodel.model import WorldModel


@dataclass
class StartStates:
    """Real recorded states to start imagined episodes from."""

    state: np.ndarray  # float32 [B, D]
    images: np.ndarray | None  # uint8 [B, n_cams, S, S, 3] (the world model's cameras and size)
    instructions: list[str]
    episode: np.ndarray  # int64 [B]: source episode index in its store
    step: np.ndarray  # int64 [B]: step within that episode
    success: np.ndarray  # bool [B]: how that real episode ended

    def __len__(self) -> int:
        return len(self.state)

    def take(self, idx: np.ndarray) -> StartStates:
        """The starts at `idx` (in that order, repeats allowed)."""
        idx = np.asarray(idx, np.int64)
        return StartStates(self.state[idx], None if self.images is None else self.images[idx],
                           [self.instructions[i] for i in idx], self.episode[idx], self.step[idx], self.success[idx])

    def repeat(self, k: int) -> StartStates:
        """Each start k times in a row (K samples from the same start)."""
        return self.take(np.repeat(np.arange(len(self)), k))

    @staticmethod
    def concat(parts: list[StartStates]) -> StartStates:
        return StartStates(np.concatenate([p.state for p in parts]),
                           None if parts[0].images is None else np.concatenate([p.images for p in parts]),
                           [s for p in parts for s in p.instructions], np.concatenate([p.episode for p in parts]),
                           np.concatenate([p.step for p in parts]), np.concatenate([p.success for p in parts]))


def start_states(store_path: str | Path, model: WorldModel, episodes: np.ndarray | None = None,
                 keyframe: float = 0.0, task: str = "") -> StartStates:
    """Start states from a store: each episode's step at `keyframe` x its length (0 = first frame).
    With `task` (the world model's), episodes of another task are an error."""
    if not 0 <= keyframe < 1:
        raise ValueError(f"keyframe must be in [0, 1), got {keyframe}")
    if not EpisodeStore.exists(store_path):
        raise WorldModelDataError(f"{store_path}: not an EpisodeStore")
    cfg = model.cfg
    with EpisodeStore.open(store_path) as store:
        check_store(store, cfg, f"start states {store_path}")
        table = store.table()
        eps = np.arange(len(table)) if episodes is None else np.asarray(episodes, np.int64)
        if len(eps) == 0 or eps.max() >= len(table) or eps.min() < 0:
            raise WorldModelDataError(f"{store_path}: has {len(table)} episodes, asked for {eps.tolist()[:5]}...")
        other = sorted(set(table.task[eps].tolist()) - {task}) if task else []
        if other:
            raise WorldModelDataError(f"{store_path}: start states of task {other[0]!r}, the world model was trained "
                                      f"on {task!r}")
        idx, steps = [], []
        for e in eps:
            start, end = store.episode_bounds(int(e))
            t = int(keyframe * (end - start))
            idx.append(start + t)
            steps.append(t)
        state = np.stack([store.read("state", i, i + 1)[0] for i in idx]).astype(np.float32)
        images = None
        if cfg.cameras:
            images = np.stack([np.stack([resize_images(store.read(f"images/{c}", i, i + 1), cfg.image_size)[0]
                                         for c in cfg.cameras]) for i in idx])
        return StartStates(state, images, [str(table.instruction[e]) for e in eps], eps, np.asarray(steps),
                           table.success[eps].astype(bool))


def policy_observations(store_path: str | Path, starts: StartStates, cameras: list[str] | tuple[str, ...]
                        ) -> list[dict[str, Any]]:
    """The recorded observations at `starts` as a policy sees them live: the store's frames of
    `cameras` at the store's own size (the policy resizes), the state and the instruction."""
    with EpisodeStore.open(store_path) as store:
        missing = [c for c in cameras if c not in store.schema.cameras]
        if missing:
            raise WorldModelDataError(f"{store_path}: has no camera {missing[0]!r} (it has: "
                                      f"{', '.join(store.schema.cameras) or 'none'})")
        rows = [store.episode_bounds(int(e))[0] + int(t) for e, t in zip(starts.episode, starts.step, strict=True)]
        state = np.stack([store.read("state", i, i + 1)[0] for i in rows]).astype(np.float32)
        images = {c: np.stack([store.read(f"images/{c}", i, i + 1)[0] for i in rows]) for c in cameras}
    return [{"images": {c: images[c][i] for c in cameras}, "state": state[i], "instruction": starts.instructions[i],
             "timestamp": 0.0} for i in range(len(rows))]


class ImaginedEnv:
    """B imagined episodes at once. `reset(starts)`, then `step(chunks [B, c, A])`."""

    def __init__(self, model: WorldModel, success_threshold: float = 0.5, max_disagreement: float = float("inf"),
                 max_chunks: int = 25, fps: float = 20.0) -> None:
        self.model = model.eval()
        self.cfg = model.cfg
        self.success_threshold, self.max_disagreement = success_threshold, max_disagreement
        self.max_chunks, self.fps = max_chunks, fps
        self.z: torch.Tensor | None = None

    @torch.no_grad()
    def reset(self, starts: StartStates) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        if starts.state.shape[1] != self.cfg.state_dim:
            raise WorldModelDataError(f"start state size {starts.state.shape[1]}, the world model needs "
                                      f"{self.cfg.state_dim}")
        images = None if starts.images is None else torch.from_numpy(starts.images)
        z = self.model.encode(torch.from_numpy(starts.state), images)
        self.z = z.unsqueeze(0).expand(self.cfg.ensemble, *z.shape).contiguous()
        self.starts = starts
        self.n = len(starts)
        self.t = 0
        self.done = np.zeros(self.n, bool)
        self.success = np.zeros(self.n, bool)
        self.state = starts.state.copy()
        return self._obs(), {"value": self._value(self.z)}

    def _obs(self) -> list[dict[str, Any]]:
        ts = self.t * self.cfg.chunk / self.fps
        return [{"images": {}, "state": self.state[i], "instruction": self.starts.instructions[i], "timestamp": ts}
                for i in range(self.n)]

    def _value(self, z: torch.Tensor) -> np.ndarray:
        return torch.sigmoid(self.model.value_logit(z)).mean(0).numpy()

    @torch.no_grad()
    def step(self, chunks: np.ndarray) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray, np.ndarray,
                                                dict[str, Any]]:
        if self.z is None:
            raise RuntimeError("call reset(starts) before step()")
        a = np.asarray(chunks, np.float32)
        want = (self.n, self.cfg.chunk, self.cfg.action_dim)
        if a.shape != want:
            raise ValueError(f"chunks must have shape {want} (episodes, chunk, action), got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError("chunks contain NaN or inf")
        z = self.model.next(self.z, torch.from_numpy(a))
        live = torch.from_numpy(~self.done)
        self.z = torch.where(live[None, :, None], z, self.z)  # finished episodes stay where they ended
        p_members = torch.sigmoid(self.model.success_logit(self.z))  # [E, B]
        p = p_members.mean(0).numpy()
        dis = (self.z.std(0, unbiased=False).mean(-1).numpy() if self.cfg.ensemble > 1 else np.zeros(self.n))
        new_state = self.model.state(self.z).mean(0).numpy().astype(np.float32)
        self.state = np.where(self.done[:, None], self.state, new_state)
        self.t += 1
        hit = (p >= self.success_threshold) & ~self.done
        trusted = dis <= self.max_disagreement
        self.success |= hit & trusted
        terminated = hit.copy()
        self.done |= hit
        truncated = np.full(self.n, self.t >= self.max_chunks) & ~self.done
        info = {"success_prob": p, "success_prob_std": p_members.std(0, unbiased=False).numpy(), "disagreement": dis,
                "value": self._value(self.z), "success": self.success.copy(), "rejected": hit & ~trusted}
        return self._obs(), p, terminated, truncated, info


def check_policy(policy: Any, model: WorldModel, images_given: bool = False) -> None:
    """Only a policy that reads the state alone, of this model's state and action sizes, can act on
    imagined observations; an image policy only where real images are given (`images_given`)."""
    cfg = getattr(policy, "cfg", None)
    if cfg is None:
        return
    if getattr(cfg, "cameras", None) and not images_given:
        raise WorldModelDataError(f"the policy needs images of cameras {list(cfg.cameras)}; the imagined environment "
                                  "predicts the state only (train the policy in state mode to rank it)")
    for name in ("state_dim", "action_dim"):
        have, need = getattr(cfg, name, None), getattr(model.cfg, name)
        if have is not None and have != need:
            raise WorldModelDataError(f"the policy's {name} is {have}, the world model's is {need} "
                                      "(a checkpoint of another task or observation mode?)")


def rollout(env: ImaginedEnv, policy: Any, starts: StartStates, n_chunks: int, seed: int = 0,
            first_obs: list[dict[str, Any]] | None = None) -> dict[str, np.ndarray]:
    """Roll `policy` (sample_chunk over a batch) in the imagined env for n_chunks from `starts`.
    `first_obs` (the real observations at the starts, `policy_observations`) is what the first chunk
    is sampled from; an image policy needs it, and then imagines one chunk only.
    Returns per episode and chunk: success_prob, disagreement, value [B, K]; states [B, K+1, D];
    actions [B, K, c, A]; and the imagined success [B]."""
    if first_obs is not None and len(first_obs) != len(starts):
        raise ValueError(f"first_obs has {len(first_obs)} observations for {len(starts)} starts")
    check_policy(policy, env.model, images_given=first_obs is not None and n_chunks == 1)
    if hasattr(policy, "reset"):
        try:
            policy.reset(seed)
        except TypeError:
            policy.reset()
    obs, info = env.reset(starts)
    if first_obs is not None:
        obs = first_obs
    c = env.cfg.chunk
    rec: dict[str, list[np.ndarray]] = {"success_prob": [], "disagreement": [], "value": [info["value"]],
                                        "states": [env.state.copy()], "actions": []}
    for _ in range(n_chunks):
        chunk = np.asarray(policy.sample_chunk(obs), np.float32)
        if chunk.shape[1] < c:
            raise WorldModelDataError(f"the policy's chunks have {chunk.shape[1]} actions, the world model steps {c}")
        chunk = chunk[:, :c]
        obs, _, _, _, info = env.step(chunk)
        for k in ("success_prob", "disagreement", "value"):
            rec[k].append(info[k])
        rec["states"].append(env.state.copy())
        rec["actions"].append(chunk)
        if env.done.all():
            break
    out = {k: np.stack(v, 1) for k, v in rec.items()}
    out["success"] = env.success.copy()
    return out


def replay(env: ImaginedEnv, starts: StartStates, actions: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Imagine the outcome of logged action sequences (one [T_i, A] array per start): whole chunks,
    the last one padded with its final action. Returns success_prob / disagreement [B, K] and
    states [B, K+1, D] with K = the longest sequence's chunks (shorter ones stay where they ended)."""
    c = env.cfg.chunk
    n_chunks = max(int(np.ceil(len(a) / c)) for a in actions)
    env.reset(starts)
    probs, dis, states, live = [], [], [env.state.copy()], []
    for k in range(n_chunks):
        chunk = np.stack([_chunk_of(a, k, c) for a in actions])
        alive = np.array([k * c < len(a) for a in actions])
        env.done |= ~alive
        _, p, _, _, info = env.step(chunk)
        probs.append(np.where(alive, p, 0.0))
        dis.append(info["disagreement"])
        states.append(env.state.copy())
        live.append(alive)
    return {"success_prob": np.stack(probs, 1), "disagreement": np.stack(dis, 1), "states": np.stack(states, 1),
            "alive": np.stack(live, 1)}


def _chunk_of(a: np.ndarray, k: int, c: int) -> np.ndarray:
    part = a[k * c:(k + 1) * c]
    if len(part) == 0:
        part = a[-1:]
    if len(part) < c:
        part = np.concatenate([part, np.repeat(part[-1:], c - len(part), 0)])
    return part


def write_imagined(store_path: str | Path, starts: StartStates, result: dict[str, np.ndarray], task: str,
                   chunk: int, fps: float = 20.0, seeds: np.ndarray | None = None, max_chunks: int | None = None,
                   policy_version: int = 0, which: np.ndarray | None = None,
                   start_images: dict[str, np.ndarray] | None = None) -> list[int]:
    """Append imagined episodes (from `rollout`; only the rollouts in `which`, at most `max_chunks`
    chunks each) to a store with source="imagined". Within a chunk the state is interpolated
    linearly between the predicted chunk boundaries (rollouts executed in the simulator,
    `worldmodel.oracle`, bring every step's state and their length); the reward is the success on
    the last step. Returns the store indices of the episodes written.
    A store with cameras needs `start_images` ({camera: uint8 [B, H, W, 3]}, the real frames at the
    starts): the model renders nothing, so every step of an episode holds its start frame, and only
    its first step's observation is real (supervise the first window only)."""
    from vla.data.schema import Episode

    path = Path(store_path)
    if not EpisodeStore.exists(path):  # nothing, or a half-created folder that create replaces
        from vla.data.schema import StoreSchema

        d, a = result["states"].shape[-1], result["actions"].shape[-1]
        store = EpisodeStore.create(path, StoreSchema(cameras={}, state_dim=d, action_dim=a, fps=fps))
    else:
        store = EpisodeStore.open(path, mode="a")
    with store:
        cams = store.schema.cameras
        missing = [c for c in cams if start_images is None or c not in start_images]
        if missing:
            raise WorldModelDataError(f"{path}: has camera {missing[0]!r} and imagined episodes have no images: "
                                      "give the start frames (start_images) or write to a state-only store")
        written = []
        for i in (range(len(starts)) if which is None else np.asarray(which).tolist()):
            # the chunk whose end the episode reached success at, else the last one imagined
            end = int(np.argmax(result["success_prob"][i] >= 0.5)) + 1 if result["success"][i] else \
                result["actions"].shape[1]
            k = min(end, max_chunks) if max_chunks else end
            acts = result["actions"][i, :k].reshape(-1, result["actions"].shape[-1])
            if "step_states" in result:  # executed for real (worldmodel.oracle): every step's state is known
                n = min(len(acts), int(result["lengths"][i]))
                acts, states = acts[:n], result["step_states"][i, :n]
            else:
                s = result["states"][i, : k + 1]
                frac = (np.arange(chunk) / chunk)[None, :, None]
                states = (s[:-1, None] * (1 - frac) + s[1:, None] * frac).reshape(-1, s.shape[-1])
            reward = np.zeros(len(acts), np.float32)
            reward[-1] = float(result["success"][i] and k == end)
            steps = {"state": states.astype(np.float32), "action": acts.astype(np.float32), "reward": reward,
                     "is_intervention": np.zeros(len(acts), bool), "is_recovery": np.zeros(len(acts), bool),
                     "policy_version": np.full(len(acts), policy_version, np.int32),
                     "timestamp": np.arange(len(acts), dtype=np.float64) / fps}
            for c in cams:
                frame = np.asarray(start_images[c][i], np.uint8)  # type: ignore[index]
                steps[f"images/{c}"] = np.repeat(frame[None], len(acts), 0)
            seed = int(seeds[i]) if seeds is not None else -1
            written.append(store.append_episode(Episode(steps=steps, task=task, instruction=starts.instructions[i],
                                                        success=bool(result["success"][i]), source="imagined",
                                                        seed=seed)))
    return written
