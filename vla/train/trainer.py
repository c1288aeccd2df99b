"""Pretraining loop: AdamW, warm-up + cosine, EMA, gradient clipping, bf16 autocast on CUDA only,
optional torch.compile, validation loss, TensorBoard, tqdm, checkpoints, exact resume.

Exact resume: everything random in a step is seeded from (seed, step): the batch indices
(`ResumableBatchSampler`), the flow noise / times / prefix lengths (a generator passed to
`compute_loss`) and dropout (the global RNG is reseeded per step). Model, EMA and AdamW state are
restored from the checkpoint, and the learning rate is a pure function of the step. So the loss
at step s after a resume equals the loss at step s of an uninterrupted run (tested bit-exactly on
CPU; on GPU non-deterministic kernels may differ in the last bits).

Data parallel (torchrun): pass rank/world_size after `distributed.init_distributed`; each rank
takes its slice of every global batch, parameters are broadcast once and gradients averaged
after each backward (see `distributed.py` for why not the DDP wrapper). Rank 0 validates,
evaluates, logs and writes checkpoints.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from vla.data.dataset import BatchView, ThreadedBatches
from vla.data.stats import Stats
from vla.policy.checkpoint import CheckpointError, load_state_into, load_tensors, save_checkpoint
from vla.policy.model import VLAModel
from vla.train import distributed
from vla.train.augment import augment_states, history_lags, parse_augment
from vla.train.config import TrainConfig
from vla.train.ema import EMA
from vla.train.optim import lr_at, make_optimizer, optimizer_from_tensors, optimizer_to_tensors
from vla.train.sampler import ResumableBatchSampler

CKPT_DIR = "checkpoints"


@dataclass
class TrainResult:
    losses: dict[int, float] = field(default_factory=dict)  # step -> training loss
    val_losses: dict[int, float] = field(default_factory=dict)
    evals: dict[int, dict[str, float]] = field(default_factory=dict)  # step -> evaluator metrics
    last_checkpoint: Path | None = None
    steps_done: int = 0


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def step_seed(seed: int, step: int) -> int:
    return (seed * 1_000_003 + step * 7_919) % (2**63 - 1)


def latest_checkpoint(out_dir: str | Path) -> Path | None:
    root = Path(out_dir) / CKPT_DIR
    steps = sorted(p for p in root.glob("step_*") if p.is_dir() and (p / "train_state.json").exists())
    return steps[-1] if steps else None


class Trainer:
    def __init__(self, model: VLAModel, train_data: Dataset, cfg: TrainConfig, out_dir: str | Path,
                 stats: dict[str, Stats], val_data: Dataset | None = None, rank: int = 0,
                 world_size: int = 1, evaluator: Callable[[VLAModel, int], dict[str, float]] | None = None
                 ) -> None:
        """`evaluator(model, step) -> metrics` (e.g. sim success rate) runs every `eval_every`
        steps on rank 0 with the EMA weights loaded; its metrics go to TensorBoard as eval/<name>."""
        self.cfg, self.out_dir, self.stats = cfg, Path(out_dir), stats
        self.device = resolve_device(cfg.device)
        self.model = model.to(self.device)
        if not bool(self.model.normalizer.has_stats):
            self.model.normalizer.set_stats(stats)
        self.train_data, self.val_data = train_data, val_data
        self.rank, self.world_size = rank, world_size
        self.evaluator = evaluator
        if world_size > 1:
            if not torch.distributed.is_initialized():
                raise RuntimeError(f"world_size {world_size} needs an initialised process group "
                                   "(call vla.train.distributed.init_distributed first)")
            distributed.broadcast_parameters(self.model)
        # Rank 0 keeps the single-process streams, so one process reproduces a 1-rank run exactly.
        self._rank_seed = cfg.seed + 7_777 * rank
        self.opt = make_optimizer(self.model, cfg.lr, cfg.weight_decay, cfg.betas)
        self.ema = EMA(self.model, cfg.ema_decay, cfg.ema_warmup) if cfg.ema_decay > 0 else None
        self.step = 0
        self._loss_fn = functools.partial(self.model.compute_loss, target_clip=cfg.target_clip)
        self._perception = None
        self._augment = parse_augment(cfg.augment)
        if cfg.perception_frames:
            from vla.train.perception import PerceptionFrames

            self._perception = PerceptionFrames(cfg.perception_frames, list(model.cfg.cameras))
            if self._perception.dim != model.cfg.perception_dim:
                raise ValueError(f"{cfg.perception_frames}: {self._perception.dim} targets, but the policy's "
                                 f"perception_dim is {model.cfg.perception_dim}")
        if cfg.compile:
            # Compile the two graphs; compute_loss keeps its Python-side checks and metrics.
            self.model.encode = torch.compile(self.model.encode)  # type: ignore[method-assign]
            self.model.velocity = torch.compile(self.model.velocity)  # type: ignore[method-assign]

    # ----------------------------------------------------------------------------- state
    def resume(self, path: str | Path | None = None) -> int:
        """Restore from a checkpoint folder (default: the latest under out_dir); returns the step."""
        folder = Path(path) if path is not None else latest_checkpoint(self.out_dir)
        if folder is None:
            raise CheckpointError(f"no checkpoint to resume from under {self.out_dir / CKPT_DIR}")
        state_file = folder / "train_state.json"
        if not state_file.is_file():
            raise CheckpointError(f"{folder} has no train_state.json: not a training checkpoint")
        state = json.loads(state_file.read_text())
        load_state_into(self.model, load_tensors(folder / "model.safetensors"), folder / "model.safetensors")
        optimizer_from_tensors(self.opt, load_tensors(folder / "optimizer.safetensors"), state["param_groups"])
        if self.ema is not None:
            ema_file = folder / "ema.safetensors"
            self.ema.state = {k: v.to(self.device).float() if v.is_floating_point() else v.to(self.device)
                              for k, v in load_tensors(ema_file).items()}
            self.ema.updates = int(state.get("ema_updates", state["step"]))
        self.step = int(state["step"])
        return self.step

    def save(self) -> Path:
        root = self.out_dir / CKPT_DIR
        tensors, groups = optimizer_to_tensors(self.opt)
        path = save_checkpoint(
            root / f"step_{self.step:08d}", self.model, self.stats,
            ema_state=self.ema.state_for(self.model) if self.ema is not None else None,
            optimizer_tensors=tensors,
            train_state={"step": self.step, "param_groups": groups, "train_config": self.cfg.to_dict(),
                         "ema_updates": self.ema.updates if self.ema is not None else 0,
                         "world_size": self.world_size})  # how many ranks shared each global batch
        if self.cfg.keep_checkpoints > 0:
            old = sorted(p for p in root.glob("step_*") if p.is_dir())[: -self.cfg.keep_checkpoints]
            for p in old:
                shutil.rmtree(p)
        return path

    # ----------------------------------------------------------------------------- loop
    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.cfg.amp and self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _generator(self, seed: int) -> torch.Generator:
        return torch.Generator(device=self.device).manual_seed(seed)

    def train_step(self, batch: dict[str, Any]) -> dict[str, float]:
        cfg = self.cfg
        self.model.train()
        torch.manual_seed(step_seed(self._rank_seed, self.step))  # dropout
        lr = lr_at(self.step, cfg.lr, cfg.warmup_steps, cfg.steps, cfg.min_lr_ratio)
        for g in self.opt.param_groups:
            g["lr"] = lr
        if self._augment:
            batch = self._augmented(batch)
        with self._autocast():
            loss, metrics = self._loss_fn(batch, self._generator(step_seed(self._rank_seed + 1, self.step)))
            if self._perception is not None:
                loss, metrics = self._add_perception(loss, metrics)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite training loss {float(loss)} at step {self.step}")
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if self.world_size > 1:
            distributed.average_gradients(self.model, self.world_size)
            metrics["loss"] = distributed.mean_across_ranks(metrics["loss"], self.device)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(),
                                                   cfg.grad_clip if cfg.grad_clip > 0 else math.inf)
        self.opt.step()
        if self.ema is not None:
            self.ema.update(self.model)
        self.step += 1
        return {**metrics, "lr": lr, "grad_norm": float(grad_norm)}

    def _augmented(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The batch with its states' sensor errors drawn (seeded per step: a resumed run draws the same)."""
        if "task" not in batch:
            raise KeyError("train.augment: the training batch has no 'task' key (which object features to rebuild)")
        tasks = batch["task"]
        rng = np.random.default_rng(step_seed(self._rank_seed + 3, self.step))
        state = batch["state"]
        history, lags = None, history_lags(self._augment)
        if lags:
            earlier = getattr(self.train_data, "earlier_states", None)
            if earlier is None or "episode_index" not in batch:
                raise ValueError("train.augment: pose_latency / pose_dropout read earlier states, which only a "
                                 "WindowDataset's batches give")
            eps, steps = np.asarray(batch["episode_index"]), np.asarray(batch["step_index"])
            history = {k: earlier(eps, steps, k) for k in range(1, lags + 1)}
        out = augment_states(state.detach().cpu().numpy(), tasks if isinstance(tasks, str) else [str(t) for t in tasks],
                             self._augment, rng, history)
        return {**batch, "state": torch.as_tensor(out, dtype=state.dtype, device=state.device)}

    def _add_perception(self, loss: torch.Tensor, metrics: dict[str, float]) -> tuple[torch.Tensor, dict[str, float]]:
        """The flow loss plus the perception head's on a batch of labelled frames (seeded per step, so a
        resumed run draws the same frames)."""
        assert self._perception is not None
        rng = np.random.default_rng(step_seed(self._rank_seed + 2, self.step))
        images, targets = self._perception.batch(rng, self.cfg.batch_size)
        p_loss = self.model.perception_loss({c: torch.from_numpy(v).to(self.device) for c, v in images.items()},
                                            torch.from_numpy(targets).to(self.device))
        total = loss + self.cfg.perception_weight * p_loss
        # "flow_loss" may already be there (with a future-state head, "loss" then holds both)
        return total, {**metrics, "flow_loss": metrics.get("flow_loss", metrics["loss"]),
                       "perception_loss": float(p_loss.detach()),
                       "loss": float(total.detach())}

    @torch.no_grad()
    def validate(self) -> float:
        """Mean loss over `val_batches` held-out batches with fixed noise (comparable across calls);
        uses the EMA weights when EMA is on (those are the weights that get deployed)."""
        assert self.val_data is not None
        loader = DataLoader(self.val_data, batch_size=self.cfg.batch_size, shuffle=False)
        gen = self._generator(self.cfg.seed + 12_345)
        total, n = 0.0, 0
        with self.ema_weights():
            for i, batch in enumerate(loader):
                if i >= self.cfg.val_batches:
                    break
                with self._autocast():
                    loss, _ = self._loss_fn(batch, gen)
                total, n = total + float(loss), n + 1
        return total / max(n, 1)

    @contextlib.contextmanager
    def ema_weights(self) -> Any:
        """Temporarily load the EMA weights (eval mode); restores the training weights exactly."""
        self.model.eval()
        saved = None
        if self.ema is not None:
            saved = {k: v.clone() for k, v in self.model.state_dict().items()}
            self.model.load_state_dict(self.ema.state_for(self.model))
        try:
            yield self.model
        finally:
            if saved is not None:
                self.model.load_state_dict(saved)

    def fit(self, steps: int | None = None) -> TrainResult:
        """Train until `steps` (default cfg.steps) total steps, from the current step."""
        cfg = self.cfg
        end = cfg.steps if steps is None else steps
        result = TrainResult()
        weights = getattr(self.train_data, "window_weights", None)
        sampler = ResumableBatchSampler(len(self.train_data), cfg.batch_size, cfg.seed, self.step,  # type: ignore[arg-type]
                                        self.rank, self.world_size,
                                        None if weights is None else torch.from_numpy(weights))
        loader: Any
        if getattr(self.train_data, "cache", None) == "memory":
            # In-memory windows: gather in prefetch threads of this process; worker processes would
            # spend more handing batches over shared memory than gathering them.
            loader = ThreadedBatches(self.train_data, sampler, threads=max(1, cfg.num_workers))  # type: ignore[arg-type]
        elif hasattr(self.train_data, "get_batch"):
            # Whole batches in one gather (WindowDataset): the per-item collate costs more than the reads.
            loader = DataLoader(BatchView(self.train_data), sampler=sampler, batch_size=None,  # type: ignore[arg-type]
                                num_workers=cfg.num_workers, persistent_workers=cfg.num_workers > 0)
        else:
            loader = DataLoader(self.train_data, batch_sampler=sampler, num_workers=cfg.num_workers,
                                persistent_workers=cfg.num_workers > 0)
        writer = self._writer()
        from vla.progress import progress as tqdm

        bar = tqdm(total=end, initial=self.step, disable=not cfg.progress or self.rank != 0, desc="train")
        it = iter(loader)
        try:
            while self.step < end:
                metrics = self.train_step(next(it))
                result.losses[self.step - 1] = metrics["loss"]
                bar.update(1)
                if self.step % cfg.log_every == 0:
                    bar.set_postfix(loss=f"{metrics['loss']:.4f}", lr=f"{metrics['lr']:.2e}")
                    if writer is not None:
                        for k, v in metrics.items():
                            writer.add_scalar(f"train/{k}", v, self.step)
                if self.val_data is not None and self.rank == 0 and (self.step % cfg.val_every == 0
                                                                     or self.step == end):
                    result.val_losses[self.step] = val = self.validate()
                    if writer is not None:
                        writer.add_scalar("val/loss", val, self.step)
                if self.evaluator is not None and self.rank == 0 and cfg.eval_every > 0 and (
                        self.step % cfg.eval_every == 0 or self.step == end):
                    with self.ema_weights(), torch.no_grad():
                        result.evals[self.step] = scores = dict(self.evaluator(self.model, self.step))
                    if writer is not None:
                        for k, v in scores.items():
                            writer.add_scalar(f"eval/{k}", v, self.step)
                if self.rank == 0 and (self.step % cfg.ckpt_every == 0 or self.step == end):
                    result.last_checkpoint = self.save()
        finally:
            bar.close()
            if writer is not None:
                writer.close()
        if self.world_size > 1:
            torch.distributed.barrier()  # no rank leaves while rank 0 still writes the checkpoint
        result.steps_done = self.step
        return result

    def _writer(self) -> Any:
        if not self.cfg.tensorboard or self.rank != 0:
            return None
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:  # tensorboard is optional; the loop runs without it
            return None
        return SummaryWriter(str(self.out_dir / "tb"))


def train(model: VLAModel, train_data: Dataset, cfg: TrainConfig, out_dir: str | Path, stats: dict[str, Stats],
          val_data: Dataset | None = None, resume: bool | str | Path = False,
          evaluator: Callable[[VLAModel, int], dict[str, float]] | None = None) -> TrainResult:
    """Convenience entry point for `vla train`: builds a Trainer, resumes if asked, fits. Under
    torchrun (WORLD_SIZE > 1 in the environment) each process joins the process group as its rank,
    on GPU `cuda:LOCAL_RANK`; rank 0 alone evaluates and writes checkpoints."""
    rank, world_size, local_rank = distributed.env_world()
    if world_size > 1:
        device = resolve_device(cfg.device)
        if device.type == "cuda" and device.index is None:  # one GPU per rank on a multi-GPU node
            cfg = replace(cfg, device=f"cuda:{local_rank}")
            device = torch.device(cfg.device)
            torch.cuda.set_device(device)
        distributed.init_distributed(device, rank=rank, world_size=world_size)
    trainer = Trainer(model, train_data, cfg, out_dir, stats, val_data, rank=rank, world_size=world_size,
                      evaluator=evaluator)
    if resume:
        trainer.resume(None if resume is True else resume)
    return trainer.fit()
