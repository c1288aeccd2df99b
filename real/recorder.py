"""Deployment recorder: every episode the robot runs goes to the EpisodeStore, and recording can never
stall the control loop.

The control thread only hands references to a bounded queue (`put_nowait`: no lock held across I/O,
no copy of an image, which the node replaces and never mutates); a writer thread turns them into
episodes. A full queue (a writer stuck on a hung or full disk, or dead) drops the tick and marks the
episode incomplete: an episode with a hole in its timeline is not stored, since it would teach a
jump that never happened, and it is counted. A failed write (ENOSPC, EIO) is logged and counted, the
store is reopened (its commit record keeps every episode stored before intact) and the next episode
is tried again.

One control timeline: each step is a control tick, stamped with the tick's scheduled time from the
episode's first tick. The command sent is the step's `action`; the images are the newest frames at
the tick; the joint state is resampled to the tick time by linear interpolation between the joint
state messages around it (they come at the driver's own rate, not the control rate).

Beside the store, `<store>/deployments/episode_<index>.npz` (numpy arrays only, read with
`allow_pickle=False`) keeps what the policy produced: every chunk with the tick it arrived on, and
per step the action the queue gave before the safety filter, the chunk it came from and the safety
hold that acted (its kind, "" when none).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vla.data.schema import Episode, StoreSchema

log = logging.getLogger(__name__)

SIDECAR_DIR = "deployments"
KEEP_SAMPLES = 64  # joint states kept from before an episode's first tick


@dataclass
class RecorderConfig:
    store: str = ""  # EpisodeStore path (created if missing); "" turns recording off
    task: str = "deployment"
    policy_version: int = 0
    queue_size: int = 8192  # ticks (plus joint states) buffered between the control thread and the writer
    label_topic: str = "~/episode_label"  # std_msgs/Bool from the operator: ends the episode, true = success

    def __post_init__(self) -> None:
        if self.queue_size < 16:
            raise ValueError(f"recorder.queue_size must be >= 16, got {self.queue_size}")
        if not self.task.strip():
            raise ValueError("recorder.task must be a non-empty string")


@dataclass
class _Tick:
    t: float
    command: np.ndarray
    action: np.ndarray | None
    chunk_id: int
    hold: str | None
    images: dict[str, np.ndarray]
    instruction: str


def resample(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per-dimension linear interpolation of samples (times ascending) at `at`; held at the ends."""
    return np.stack([np.interp(at, times, values[:, d]) for d in range(values.shape[1])], axis=1)


def sidecar_path(store: str | Path, index: int) -> Path:
    return Path(store) / SIDECAR_DIR / f"episode_{index:06d}.npz"


def load_sidecar(store: str | Path, index: int) -> dict[str, np.ndarray]:
    with np.load(sidecar_path(store, index), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


class EpisodeRecorder:
    """`joint_state` / `tick` / `chunk` from the node's threads (never block), `end_episode(success)`
    from the operator's label; `close()` writes nothing further. Counters are for diagnostics."""

    def __init__(self, cfg: RecorderConfig, schema: StoreSchema) -> None:
        self.cfg, self.schema = cfg, schema
        self._q: queue.Queue[tuple[str, int, Any]] = queue.Queue(maxsize=cfg.queue_size)
        self._episode = 0  # this run's episode number, counted by the producer side
        self._lost: set[int] = set()  # episodes that lost an item
        self.dropped = 0  # items the control side could not hand over (queue full)
        self.stored = self.failed = self.incomplete = 0
        self.last_error: str | None = None
        from vla.data.store import open_for_append

        # Opened here, not at the first episode's end: a store of another schema, or one another
        # writer holds, stops the node before the robot moves instead of losing the first episode.
        self._store: Any = open_for_append(cfg.store, schema, "the deploy config")
        self._thread = threading.Thread(target=self._run, name="recorder", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # ---- producer side (control / subscription threads): never blocks ------------------------------
    # Every item carries its episode's number, so the writer never mixes episodes, whatever was lost.
    def _put(self, kind: str, payload: Any) -> None:
        try:
            self._q.put_nowait((kind, self._episode, payload))
        except queue.Full:
            self.dropped += 1
            self._lost.add(self._episode)

    def joint_state(self, t: float, q: np.ndarray) -> None:
        self._put("q", (t, q))

    def tick(self, t: float, command: np.ndarray, action: np.ndarray | None, chunk_id: int, hold: str | None,
             images: dict[str, np.ndarray], instruction: str) -> None:
        self._put("tick", _Tick(t, command, action, chunk_id, hold, images, instruction))

    def chunk(self, tick: int, chunk_id: int, actions: np.ndarray) -> None:
        self._put("chunk", (tick, chunk_id, actions))

    def end_episode(self, success: bool) -> None:
        """The operator's label: ends this episode; the next one starts with the next tick. The label
        may wait a moment for room (an operator's call, not the control loop)."""
        episode, self._episode = self._episode, self._episode + 1
        try:
            self._q.put(("end", episode, bool(success)), timeout=1.0)
        except queue.Full:
            self.dropped += 1
            self._lost.add(episode)

    def close(self, timeout: float = 10.0) -> None:
        """Flush what is queued (an unlabelled episode in progress is not stored) and stop."""
        if self.alive:
            with contextlib.suppress(queue.Full):
                self._q.put(("close", -1, None), timeout=timeout)
        self._thread.join(timeout)
        if self._store is not None and not self._thread.is_alive():  # a hung writer keeps its store
            self._store.close()

    def counters(self) -> dict[str, float]:
        return {"recorder_alive": float(self.alive), "recorder_stored": float(self.stored),
                "recorder_failed": float(self.failed), "recorder_incomplete": float(self.incomplete),
                "recorder_dropped": float(self.dropped), "recorder_queue": float(self._q.qsize())}

    # ---- writer thread -----------------------------------------------------------------------------
    def _run(self) -> None:
        ticks: list[_Tick] = []
        qs: list[tuple[float, np.ndarray]] = []
        chunks: list[tuple[int, int, np.ndarray]] = []
        current = 0
        while True:
            kind, episode, payload = self._q.get()
            if kind == "close":
                return
            if episode > current:  # the label of `current` was lost: its steps cannot be stored
                if ticks:
                    self._not_stored(current, "its end label was lost to a full queue")
                ticks, chunks, current = [], [], episode
            if kind == "q":
                qs.append(payload)
                if len(qs) > 2 * KEEP_SAMPLES and not ticks:  # before the first tick only recent ones matter
                    del qs[:-KEEP_SAMPLES]
            elif kind == "tick":
                ticks.append(payload)
            elif kind == "chunk":
                chunks.append(payload)
            elif kind == "end":
                if episode in self._lost:
                    self._not_stored(episode, "ticks or samples were lost to a full queue")
                elif ticks:
                    self._write(ticks, qs, chunks, payload)
                ticks, chunks, current = [], [], episode + 1
                qs = qs[-KEEP_SAMPLES:]  # the next episode's first ticks interpolate between them too

    def _not_stored(self, episode: int, why: str) -> None:
        # An episode with a hole in its timeline would teach a jump that never happened.
        self.incomplete += 1
        self.last_error = f"episode {episode} of this run not stored: {why}"
        log.error(self.last_error)

    def _build(self, ticks: list[_Tick], qs: list[tuple[float, np.ndarray]], success: bool) -> Episode:
        t = np.array([k.t for k in ticks], np.float64)
        if not qs:  # no made-up state: the episode is counted as failed, with this reason
            raise ValueError("no joint state was received during the episode")
        qt = np.array([s[0] for s in qs], np.float64)
        qv = np.stack([np.asarray(s[1], np.float64) for s in qs])
        order = np.argsort(qt, kind="stable")
        state = resample(qt[order], qv[order], t).astype(np.float32)
        steps: dict[str, np.ndarray] = {f"images/{c}": np.stack([k.images[c] for k in ticks])
                                        for c in self.schema.cameras}
        n = len(ticks)
        steps.update(state=state, action=np.stack([k.command for k in ticks]).astype(np.float32),
                     reward=np.zeros(n, np.float32), is_intervention=np.zeros(n, bool),
                     is_recovery=np.zeros(n, bool), policy_version=np.full(n, self.cfg.policy_version, np.int32),
                     timestamp=t - t[0])
        # The one in force over most of the episode: a topic's first message may come after the first ticks.
        heard = Counter(k.instruction for k in ticks if k.instruction.strip())
        instruction = heard.most_common(1)[0][0] if heard else self.cfg.task
        return Episode(steps=steps, task=self.cfg.task, instruction=instruction, success=success, source="rollout")

    def _write(self, ticks: list[_Tick], qs: list[tuple[float, np.ndarray]],
               chunks: list[tuple[int, int, np.ndarray]], success: bool) -> None:
        from vla.data.store import EpisodeStore

        try:
            ticks = [k for k in ticks if all(c in k.images for c in self.schema.cameras)]
            if not ticks:
                raise ValueError("no tick had every camera's image")
            if self._store is None:
                self._store = EpisodeStore.open(self.cfg.store, mode="a")
            index = self._store.append_episode(self._build(ticks, qs, success))
        except Exception as exc:  # a full disk, a dead device, a store of another schema
            self.failed += 1
            self.last_error = f"episode not stored: {type(exc).__name__}: {exc}"
            log.error(self.last_error)
            if self._store is not None:  # reopening truncates what the failed append left past the commit
                try:
                    self._store.close()
                finally:
                    self._store = None
            return
        self.stored += 1
        try:
            self._write_sidecar(index, ticks, chunks)
        except Exception as exc:  # the episode itself is committed; only its policy log is missing
            self.last_error = f"episode {index} stored without its chunk log: {type(exc).__name__}: {exc}"
            log.error(self.last_error)

    def _write_sidecar(self, index: int, ticks: list[_Tick], chunks: list[tuple[int, int, np.ndarray]]) -> None:
        a = self.schema.action_dim
        h = max((c[2].shape[0] for c in chunks), default=0)
        padded = np.full((len(chunks), h, a), np.nan, np.float32)
        for i, (_, _, c) in enumerate(chunks):
            padded[i, : c.shape[0]] = c
        raw = np.stack([np.full(a, np.nan, np.float32) if k.action is None else np.asarray(k.action, np.float32)
                        for k in ticks])
        path = sidecar_path(self.cfg.store, index)
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, chunks=padded, chunk_lengths=np.array([c[2].shape[0] for c in chunks], np.int32),
                 chunk_tick=np.array([c[0] for c in chunks], np.int64),
                 chunk_id=np.array([c[1] for c in chunks], np.int64),
                 step_chunk_id=np.array([k.chunk_id for k in ticks], np.int64), step_raw_action=raw,
                 step_hold=np.array([k.hold or "" for k in ticks], dtype=str))
        tmp.replace(path)
