"""Two CPU processes with gloo: parameters stay identical across ranks, losses are averaged, and
rank 0 alone writes the checkpoint."""

import json
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from tests.vla.policy.conftest import small_config
from tests.vla.policy.synthetic_data import LineDataset
from vla.policy.checkpoint import load_tensors
from vla.policy.model import VLAModel
from vla.train.config import TrainConfig
from vla.train.distributed import init_distributed
from vla.train.trainer import Trainer


def _worker(rank: int, out: str) -> None:
    torch.set_num_threads(1)
    init_distributed(torch.device("cpu"), init_method=f"file://{out}/rendezvous", rank=rank, world_size=2)
    torch.manual_seed(rank)  # different initial weights per rank: the broadcast must fix that
    data = LineDataset(n=32)
    cfg = TrainConfig(steps=3, batch_size=8, lr=1e-3, warmup_steps=1, ema_decay=0.9, ckpt_every=3,
                      device="cpu", progress=False, tensorboard=False)
    trainer = Trainer(VLAModel(small_config()), data, cfg, f"{out}/run", data.stats(), rank=rank, world_size=2)
    result = trainer.fit()
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in trainer.model.state_dict().items()}, f"{out}/rank{rank}.safetensors")
    Path(f"{out}/rank{rank}.json").write_text(json.dumps({str(k): v for k, v in result.losses.items()}))
    torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_two_process_gloo_training_stays_in_sync(tmp_path: Path) -> None:
    mp.spawn(_worker, args=(str(tmp_path),), nprocs=2, join=True)
    w0, w1 = (load_tensors(tmp_path / f"rank{r}.safetensors") for r in (0, 1))
    assert all(torch.equal(w0[k], w1[k]) for k in w0)
    l0, l1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert l0 == l1 and len(l0) == 3
    ckpts = list((tmp_path / "run" / "checkpoints").iterdir())
    assert [p.name for p in ckpts] == ["step_00000003"]
    saved = load_tensors(ckpts[0] / "model.safetensors")
    assert all(torch.equal(saved[k], w0[k]) for k in w0)


@pytest.mark.slow
def test_vla_train_under_torchrun_joins_one_process_group(tmp_path: Path) -> None:
    """`torchrun --nproc-per-node 2 -m vla.cli train ...`: the ranks join one gloo group (the
    checkpoint records world_size 2) and rank 0 alone writes the checkpoints."""
    import os
    import subprocess
    import sys

    from vla.data.store import EpisodeStore
    from vla.data.synthetic import default_schema, synthetic_episode

    schema = default_schema()
    store = EpisodeStore.create(tmp_path / "demos.zarr", schema)
    for seed in range(4):
        store.append_episode(synthetic_episode(schema, seed))
    store.close()
    # Loopback only: the rendezvous and gloo would otherwise pick the host's network interface.
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                          "-m", "vla.cli", "train", str(tmp_path / "demos.zarr"), "--out", str(tmp_path / "run"),
                          "--policy", "tiny", "--train", "debug"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    ckpts = sorted((tmp_path / "run" / "checkpoints").iterdir())
    assert [p.name for p in ckpts] == ["step_00000001", "step_00000002"]
    state = json.loads((ckpts[-1] / "train_state.json").read_text())
    assert state["step"] == 2 and state["world_size"] == 2
