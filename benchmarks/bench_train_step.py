"""The training step of the main job's policy (tiny preset, two 84x84 cameras, batch 32) on this
machine, with the optimiser and EMA as they are, as they were before the fused optimiser (torch's per-tensor loops
on CPU), or compiled (`train.compile`):

    python benchmarks/bench_train_step.py --variants old,current,old,current --steps 100

One fixed synthetic batch (no data loading), 5 warm-up steps, then the median of `--steps` steps; one
JSON line per variant. Alternate the variants: this machine drifts by a quarter between minutes.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import numpy as np
import torch
from bench_policy import _stats

from vla.policy.config import load_policy_config
from vla.policy.model import VLAModel
from vla.train.config import TrainConfig
from vla.train.trainer import Trainer

CAMERAS = ["agentview", "robot0_eye_in_hand"]


def as_before(trainer: Trainer, model: VLAModel) -> None:
    """The optimiser and EMA update of before the fused optimiser: AdamW without fused or multi-tensor kernels, and
    the EMA tensor by tensor."""
    groups = [{**{k: v for k, v in g.items() if k not in ("fused", "foreach")}, "params": g["params"]}
              for g in trainer.opt.param_groups]
    trainer.opt = torch.optim.AdamW(groups, fused=False, foreach=False)
    ema = trainer.ema
    assert ema is not None
    params = {n for n, _ in model.named_parameters()}

    def update(m: torch.nn.Module) -> None:
        ema.updates += 1
        d = ema.current_decay()
        for k, v in m.state_dict().items():
            if k in params and v.is_floating_point():
                ema.state[k].mul_(d).add_(v.detach().float(), alpha=1 - d)
            else:
                ema.state[k].copy_(v)

    ema.update = update  # type: ignore[method-assign]


def make_trainer(variant: str, batch: int) -> tuple[Trainer, dict]:
    """A trainer of the job's policy set up as `variant`, and one fixed batch."""
    torch.manual_seed(0)
    cfg = load_policy_config("tiny", cameras=CAMERAS, state_dim=9, action_dim=7, noise_scale=0.0)
    model = VLAModel(cfg, _stats(CAMERAS))
    g = torch.Generator().manual_seed(0)
    data = {"images": {c: torch.randint(0, 256, (batch, 1, 84, 84, 3), generator=g, dtype=torch.uint8)
                       for c in CAMERAS},
            "state": torch.randn(batch, 1, 9, generator=g), "obs_mask": torch.ones(batch, 1, dtype=torch.bool),
            "action": torch.randn(batch, 16, 7, generator=g), "action_mask": torch.ones(batch, 16, dtype=torch.bool),
            "lang": torch.randn(batch, 384, generator=g)}
    tc = TrainConfig(steps=10**6, batch_size=batch, lr=1e-3, device="cpu", tensorboard=False, progress=False,
                     ckpt_every=10**9, compile=variant == "compile")
    trainer = Trainer(model, [0], tc, tempfile.mkdtemp(), _stats(CAMERAS))  # type: ignore[arg-type]
    if variant == "old":
        as_before(trainer, model)
    return trainer, data


def run(variant: str, steps: int, batch: int) -> dict:
    trainer, data = make_trainer(variant, batch)
    t0 = time.perf_counter()
    for _ in range(5):
        trainer.train_step(data)
    warm = time.perf_counter() - t0
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        trainer.train_step(data)
        times.append(time.perf_counter() - t)
    med = float(np.median(times))
    return {"variant": variant, "threads": torch.get_num_threads(), "batch": batch, "warmup_s": round(warm, 1),
            "median_ms": round(1000 * med, 1), "samples_per_s": round(batch / med)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variants", default="old,current,old,current", help="old | current | compile, comma-separated")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    for v in args.variants.split(","):
        if v not in ("old", "current", "compile"):
            raise SystemExit(f"--variants: unknown variant '{v}' (old, current, compile)")
    for v in args.variants.split(","):
        print(json.dumps(run(v, args.steps, args.batch)), flush=True)


if __name__ == "__main__":
    main()
