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
