"""The CUDA path of training and inference (bf16 autocast, device placement, checkpoints that move
between devices). Skipped without a GPU: CI has none; these run on a lent GPU machine."""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.vla.policy.synthetic_data import LineDataset
from tests.vla.train.test_trainer import CAMS, cfg, new_trainer
from vla.policy.checkpoint import load_tensors
from vla.policy.policy import load_torch_policy
from vla.train.trainer import latest_checkpoint

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_cuda_training_with_bf16_autocast_learns_and_resumes(tmp_path: Path) -> None:
    steps = dict(steps=60, lr=3e-3, warmup_steps=5, ema_decay=0.9, val_every=30, ckpt_every=30, device="cuda")
    full = new_trainer(tmp_path / "full", cfg(**steps)).fit()
    first = sum(full.losses[s] for s in range(5)) / 5
    last = sum(full.losses[s] for s in range(55, 60)) / 5
    assert all(np.isfinite(v) for v in full.losses.values())
    assert last < 0.6 * first, (first, last)
    part = new_trainer(tmp_path / "part", cfg(**steps))
    part.fit(steps=30)
    resumed = new_trainer(tmp_path / "part", cfg(**steps), seed=123)
    assert resumed.resume() == 30
    assert next(resumed.model.parameters()).device.type == "cuda"
    rest = resumed.fit()
    # GPU kernels are not bit-exact run to run (atomics in the backward): the resumed run follows the
    # uninterrupted one closely, not exactly
    for step in (30, 31, 32):
        assert rest.losses[step] == pytest.approx(full.losses[step], rel=0.05, abs=1e-3), step
    saved = load_tensors(latest_checkpoint(tmp_path / "full") / "model.safetensors")
    assert all(torch.isfinite(t).all() for t in saved.values())


def test_checkpoint_trained_on_cuda_gives_the_same_chunks_on_cpu_and_cuda(tmp_path: Path) -> None:
    new_trainer(tmp_path, cfg(steps=10, device="cuda", ckpt_every=10)).fit()
    ckpt = latest_checkpoint(tmp_path)
    obs = [LineDataset(n=4, cameras=CAMS).observation(i) for i in range(4)]
    on_cpu = load_torch_policy(ckpt, device="cpu", seed=7).sample_chunk(obs)
    gpu_policy = load_torch_policy(ckpt, device="cuda", seed=7)
    assert next(gpu_policy.model.parameters()).device.type == "cuda"
    on_gpu = gpu_policy.sample_chunk(obs)
    assert on_gpu.dtype == np.float32 and on_gpu.shape == on_cpu.shape == (4, 16, 2)
    # same noise stream (the policy's numpy generator), fp32 inference on both; cuDNN's convolutions
    # may use TF32, hence the tolerance
    np.testing.assert_allclose(on_gpu, on_cpu, atol=5e-3, rtol=5e-3)
