"""Instruction embeddings made ready off the inference thread, so no chunk ever waits on the language model.

A language-conditioned VLA embeds its instruction inside `sample_chunk` (all-MiniLM-L6-v2, cached per
string). The first unseen instruction used to load the model there: 2.4-3.4 s without a chunk on our
CPU, so the queue ran dry and the robot held. A string with an embedded NUL is one way to get an
unseen instruction by accident: DDS delivers it cut at the NUL.

`InstructionPrep` does two things:

- `warm_up` at node start loads the model and embeds the default instruction (a node that cannot load
  its model fails at start, not on the robot's first new instruction);
- `usable(wanted)` on the control thread: the instruction to put in the observation now. `wanted`
  once its embedding is cached; until then the previous ready instruction, while a background thread
  embeds `wanted` (one forward pass once the model is loaded: tens of ms on an idle CPU, ~0.5 s on a
  loaded one, either way never on the inference thread). With none ready yet (the robot's first
  instruction with a blank default), None: the caller holds, as it does awaiting the first
  instruction. Why not hold on every switch: a hold brakes the arm, and keeping the current task for
  the few ticks of an embedding is what a person watching would expect from a robot told something new.

An embedding that fails (the model cannot load) is not retried: `usable` then passes the instruction
on, and the policy's own failure goes through the executor's inference_failing hold with its message.

The encoder is found on the policy by `find_instruction_encoder` (a `language` attribute with `encode`,
`has` and `warm_up`: `vla.policy.language.InstructionEncoder` or the grounding wrapper), through the
wrappers the deployment stacks around it (`vla`, `policy`, `model` attributes). A policy without one
(the synthetic stand-in, a policy with its own encoder) gets no preparation and runs as before.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

WRAPPED = ("vla", "policy", "model")  # attributes under which deployment wrappers keep the policy they wrap


def find_instruction_encoder(policy: Any, depth: int = 6) -> Any | None:
    """The instruction encoder of `policy` or of a policy it wraps, or None."""
    seen: set[int] = set()
    todo = [policy]
    for _ in range(depth):
        nxt = []
        for obj in todo:
            if obj is None or id(obj) in seen:
                continue
            seen.add(id(obj))
            enc = getattr(obj, "language", None)
            if all(callable(getattr(enc, m, None)) for m in ("encode", "has", "warm_up")):
                return enc
            nxt += [getattr(obj, a, None) for a in WRAPPED]
        todo = nxt
    return None


class InstructionPrep:
    """See the module docstring. Thread-safe; `close()` stops its thread."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self._cv = threading.Condition()
        self._ready: str | None = None  # the newest instruction whose embedding is cached
        self._wanted: str | None = None  # the next one to embed
        self._failed: dict[str, str] = {}  # instruction -> why it could not be embedded
        self._closed = False
        self.n_embedded = 0
        self.embed_max_s = 0.0  # the longest background embedding, for diagnostics
        self._thread = threading.Thread(target=self._loop, name="instruction-prep", daemon=True)
        self._thread.start()

    @classmethod
    def for_policy(cls, policy: Any) -> InstructionPrep | None:
        enc = find_instruction_encoder(policy)
        return None if enc is None else cls(enc)

    def warm_up(self, default_instruction: str) -> float:
        """Load the model and embed `default_instruction` (when not blank), on the caller's thread.
        Returns the seconds it took."""
        t0 = time.perf_counter()
        self.encoder.warm_up()
        if default_instruction.strip():
            self.encoder.encode([default_instruction])
            with self._cv:
                self._ready = default_instruction
        return time.perf_counter() - t0

    def usable(self, wanted: str) -> str | None:
        """The instruction to infer with now (see the module docstring); schedules `wanted`'s embedding."""
        with self._cv:
            if not wanted.strip() or wanted in self._failed:
                return wanted  # nothing to prepare: the policy says what is wrong with it
            if self.encoder.has(wanted):
                self._ready = wanted
                return wanted
            if self._wanted != wanted:
                self._wanted = wanted  # only the newest matters: an older pending one is skipped
                self._cv.notify()
            return self._ready

    @property
    def pending(self) -> bool:
        with self._cv:
            return self._wanted is not None

    def close(self, timeout: float = 5.0) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()
        self._thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self._cv:
                while self._wanted is None and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                text = self._wanted
            t0 = time.perf_counter()
            error = None
            try:
                self.encoder.encode([text])
            except Exception as exc:  # the thread must outlive one bad instruction
                error = f"{type(exc).__name__}: {exc}"
                log.error("could not embed the instruction %r: %s", text, error)
            took = time.perf_counter() - t0
            with self._cv:
                if error is None:
                    self.n_embedded += 1
                    self.embed_max_s = max(self.embed_max_s, took)
                else:
                    if len(self._failed) >= 100:  # each is a message that passed the boundary: keep it bounded
                        self._failed.clear()
                    self._failed[text] = error
                if self._wanted == text:
                    self._wanted = None
