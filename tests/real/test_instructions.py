"""`InstructionPrep`: new instructions are embedded off the inference thread (defect 5), without ROS."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np

from real.instructions import InstructionPrep, find_instruction_encoder
from vla.policy.language import EMBED_DIM, InstructionEncoder


class SlowEncoder(InstructionEncoder):
    """Embeds by a fixed vector after `gate` opens (a model that takes its time); fails on 'broken'."""

    def __init__(self) -> None:
        super().__init__(model_dir="/nonexistent")
        self.gate = threading.Event()
        self.inside = threading.Event()

    def warm_up(self) -> None:
        pass

    def encode(self, instructions: list[str]) -> np.ndarray:
        missing = [t for t in instructions if not self.has(t)]
        if missing:
            self.inside.set()
            assert self.gate.wait(10)
            if "broken" in missing:
                raise RuntimeError("the model cannot embed this")
            self.preload({t: np.full(EMBED_DIM, EMBED_DIM ** -0.5, np.float32) for t in missing})
        return super().encode(instructions)


def test_the_current_instruction_runs_until_the_new_one_is_embedded() -> None:
    enc = SlowEncoder()
    enc.gate.set()
    prep = InstructionPrep(enc)
    try:
        assert prep.warm_up("trace the curve") < 5
        enc.gate.clear()
        assert prep.usable("trace the curve") == "trace the curve"
        t0 = time.perf_counter()
        assert prep.usable("pick up the cube") == "trace the curve"  # scheduled; the old one meanwhile
        assert time.perf_counter() - t0 < 0.5 and enc.inside.wait(5) and prep.pending
        assert prep.usable("pick up the cube") == "trace the curve"
        enc.gate.set()
        deadline = time.monotonic() + 5
        while prep.usable("pick up the cube") != "pick up the cube":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert prep.n_embedded == 1 and not prep.pending
    finally:
        enc.gate.set()
        prep.close()


def test_nothing_ready_holds_and_a_failed_embedding_goes_to_the_policy() -> None:
    enc = SlowEncoder()
    prep = InstructionPrep(enc)
    try:
        prep.warm_up("")  # a blank default: nothing to embed
        assert prep.usable("") == ""  # blank: the policy says what is wrong with it
        assert prep.usable("broken") is None  # no instruction ready yet: the node holds
        enc.gate.set()
        deadline = time.monotonic() + 5
        while prep.usable("broken") is None:  # not retried: passed on, the policy's failure holds the arm
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert prep.usable("broken") == "broken" and prep.n_embedded == 0
    finally:
        prep.close()


def test_the_encoder_is_found_through_the_deployment_wrappers() -> None:
    enc = InstructionEncoder(model_dir="/nonexistent")
    onnx_like = SimpleNamespace(language=enc)
    torch_like = SimpleNamespace(model=SimpleNamespace(language=enc))
    for inner in (onnx_like, torch_like):
        selection = SimpleNamespace(policy=inner)
        assert find_instruction_encoder(SimpleNamespace(vla=selection)) is enc
    assert find_instruction_encoder(SimpleNamespace(vla=SimpleNamespace())) is None
    assert find_instruction_encoder(SimpleNamespace(language=object())) is None  # no encode / has / warm_up
