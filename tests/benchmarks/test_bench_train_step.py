"""benchmarks/bench_train_step.py compares like with like: its `old` optimiser and EMA (torch's
per-tensor loops) make the same updates as the current fused / multi-tensor ones, to float rounding."""

from __future__ import annotations

import torch

from tests.benchmarks.helpers import load_script


def test_old_and_current_train_the_same_weights() -> None:
    bench = load_script("bench_train_step")
    trained = {}
    for variant in ("old", "current"):
        trainer, data = bench.make_trainer(variant, batch=4)
        for _ in range(3):
            trainer.train_step(data)
        assert trainer.opt.param_groups[0]["fused"] is (variant == "current")
        trained[variant] = (trainer.model.state_dict(), trainer.ema.state)
    for i in (0, 1):  # the weights, then their average
        old, new = trained["old"][i], trained["current"][i]
        assert old.keys() == new.keys()
        for k in old:
            assert torch.allclose(old[k].float(), new[k].float(), atol=1e-5), k
