"""World-model training: `compute_loss` (multi-step, every head) and a resumable loop.

Exact resume: the batch of step k is drawn from a generator seeded by (seed, k), and the weights,
the optimiser state and the step are saved together, so a run stopped and resumed takes the same
batches and reaches the same weights as one that never stopped. Why not the policy's `Trainer`
(vla/train/trainer.py): its step is the flow-matching loss over windows of a `WindowDataset` with
EMA, data parallelism and a periodic simulator evaluation; the world model trains multi-step
rollouts of its latent dynamics (`compute_loss`: state, success, value and consistency terms) on
whole in-memory episodes, which shares the resume rule but none of the step.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from worldmodel.checkpoint import latest_wm_checkpoint, load_checkpoint, save_checkpoint
from worldmodel.chunk_rank import ChunkSets, chunk_rank_loss, load_chunk_sets, sample_states
from worldmodel.config import WMJobConfig, WMTrainConfig
from worldmodel.data import EpisodeData, sample_batch, split_episodes, step_weights, subset
from worldmodel.losses import bce_loss, consistency_loss, disagreement, state_loss
from worldmodel.model import WorldModel


def compute_loss(model: WorldModel, batch: dict[str, torch.Tensor], tc: WMTrainConfig
                 ) -> tuple[torch.Tensor, dict[str, float]]:
    state, valid = batch["state"], batch["obs_valid"]
    z_all = model.encode(state, batch.get("images"))  # [B, H+1, L]
    pred = model.unroll(z_all[:, 0], batch["action"])  # [E, B, H, L]
    target = z_all[:, 1:].detach()
    chunk_valid = batch["chunk_valid"]
    l_cons = consistency_loss(pred, target, valid[:, 1:], tc.rho)
    l_succ = bce_loss(model.success_logit(pred), batch["success"], chunk_valid, tc.rho)
    l_val = 0.5 * (bce_loss(model.value_logit(z_all), batch["value"], valid, tc.rho)
                   + bce_loss(model.value_logit(pred), batch["value"][:, 1:], valid[:, 1:], tc.rho))
    s_norm = model.norm_state(state)
    l_state = 0.5 * (state_loss(model.state_head(z_all), s_norm, valid, tc.rho)
                     + state_loss(model.state_head(pred), s_norm[:, 1:], valid[:, 1:], tc.rho))
    loss = tc.w_consistency * l_cons + tc.w_success * l_succ + tc.w_value * l_val + tc.w_state * l_state
    with torch.no_grad():
        dis = disagreement(pred)[:, -1][valid[:, -1]].mean() if valid[:, -1].any() else torch.tensor(0.0)
    parts = {"loss": loss, "consistency": l_cons, "success": l_succ, "value": l_val, "state": l_state,
             "disagreement_last": dis}
    return loss, {k: float(v.detach()) for k, v in parts.items()}


def state_stats(data: EpisodeData) -> tuple[torch.Tensor, torch.Tensor]:
    """Robust centre and scale of each state dim: the median and half the 16-84 percentile range
    (one standard deviation for a normal). Physics glitches (a cube launched to z = 170 m, in ~2%
    of the steps of noisy-expert data) set a plain or percentile-clipped std to metres and flatten
    every ordinary state; these survive up to 16% of outliers."""
    lo, med, hi = np.percentile(data.state, [16, 50, 84], axis=0)
    return torch.from_numpy(med.astype(np.float32)), torch.from_numpy(((hi - lo) / 2).astype(np.float32))


class WMTrainer:
    def __init__(self, model: WorldModel, data: EpisodeData, job: WMJobConfig, out_dir: str | Path,
                 meta: dict[str, Any]) -> None:
        self.model, self.job, self.out_dir, self.meta = model, job, Path(out_dir), meta
        tc = job.train
        if tc.threads:
            torch.set_num_threads(tc.threads)
        train_eps, val_eps = split_episodes(len(data), tc.val_fraction, tc.split_seed)
        self.train_data = subset(data, train_eps)
        self.val_data = subset(data, val_eps) if len(val_eps) else None
        self.meta = {**meta, "val_episodes": val_eps.tolist()}
        span = job.model.chunk * job.model.horizon
        self.weights = step_weights(self.train_data, span, tc)
        self.opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, weight_decay=tc.weight_decay)
        self.step = 0
        self.chunk_sets: ChunkSets | None = None
        if tc.rank_truth:
            self.chunk_sets = load_chunk_sets(tc.rank_truth, job.model)
            self.meta["rank_truth"] = {"sets": list(tc.rank_truth), "states": len(self.chunk_sets)}

    def resume(self, path: Path | None = None) -> int:
        path = path or latest_wm_checkpoint(self.out_dir)
        if path is None:
            return 0
        model, _, _, opt_state, train_state = load_checkpoint(path, with_optimizer=True)
        self.model.load_state_dict(model.state_dict())
        if opt_state is not None:
            self.opt.load_state_dict(opt_state)
        self.step = int(train_state["step"])
        return self.step

    def save(self) -> Path:
        return save_checkpoint(self.out_dir / "checkpoints" / f"step_{self.step:08d}", self.model, self.job,
                               self.meta, self.opt, {"step": self.step}, keep=self.job.train.keep_checkpoints)

    def validate(self, batches: int = 4) -> dict[str, float]:
        if self.val_data is None:
            return {}
        w = step_weights(self.val_data, 1, WMTrainConfig(oversample_failures=1.0, oversample_success_end=1.0))
        rng = np.random.default_rng(12345)
        totals: dict[str, float] = {}
        self.model.eval()
        with torch.no_grad():
            for _ in range(batches):
                _, m = compute_loss(self.model, sample_batch(self.val_data, w, self.job.train.batch_size,
                                                             self.job.model, rng), self.job.train)
                for k, v in m.items():
                    totals[k] = totals.get(k, 0.0) + v / batches
        self.model.train()
        return totals

    def fit(self) -> dict[str, Any]:
        from vla.progress import progress as tqdm

        tc, mc = self.job.train, self.job.model
        writer = None
        if tc.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            writer = SummaryWriter(str(self.out_dir / "tb"))
        bar = tqdm(total=tc.steps, initial=self.step, desc="world model", disable=not tc.progress)
        t0, history = time.time(), []
        self.model.train()
        while self.step < tc.steps:
            rng = np.random.default_rng([tc.seed, self.step])
            batch = sample_batch(self.train_data, self.weights, tc.batch_size, mc, rng)
            loss, metrics = compute_loss(self.model, batch, tc)
            if self.chunk_sets is not None:
                pairwise, pointwise = chunk_rank_loss(self.model, sample_states(self.chunk_sets, tc.rank_states, rng))
                loss = loss + tc.w_rank * pairwise + tc.w_rank_value * pointwise
                metrics.update(rank_pairwise=float(pairwise.detach()), rank_value=float(pointwise.detach()),
                               loss=float(loss.detach()))
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), tc.grad_clip)
            self.opt.step()
            self.step += 1
            bar.update(1)
            if self.step % tc.log_every == 0 or self.step == tc.steps:
                bar.set_postfix(loss=f"{metrics['loss']:.3f}")
                if writer is not None:
                    for k, v in metrics.items():
                        writer.add_scalar(f"train/{k}", v, self.step)
                history.append({"step": self.step, **metrics})
            if self.step % tc.ckpt_every == 0 or self.step == tc.steps:
                val = self.validate()
                if writer is not None:
                    for k, v in val.items():
                        writer.add_scalar(f"val/{k}", v, self.step)
                self.save()
        bar.close()
        if writer is not None:
            writer.close()
        result = {"steps": self.step, "seconds": time.time() - t0, "last": history[-1] if history else {},
                  "val": self.validate()}
        (self.out_dir / "train_summary.json").write_text(json.dumps(result, indent=1))
        return result


def train_world_model(stores: list[str], out_dir: str | Path, job: WMJobConfig, task: str = "",
                      resume: bool = False) -> dict[str, Any]:
    """Train (or resume) a world model on the episodes of `stores`; returns the training summary."""
    from vla.data.store import EpisodeStore
    from worldmodel.data import load_episodes

    out_dir = Path(out_dir)
    first = EpisodeStore.open(stores[0]) if EpisodeStore.exists(stores[0]) else None
    if first is not None:
        job.model.state_dim = job.model.state_dim or first.schema.state_dim
        job.model.action_dim = job.model.action_dim or first.schema.action_dim
        fps = first.schema.fps
        first.close()
    else:
        fps = 20.0
    job.validate()
    data = load_episodes(stores, job.model, task=task)
    torch.manual_seed(job.train.seed)  # the initial weights, so a run is reproducible
    model = WorldModel(job.model)
    model.set_stats(*state_stats(data))
    meta = {"task": data.task, "stores": [str(s) for s in stores], "fps": fps, "episodes": len(data),
            "steps": int(data.lengths.sum()), "successes": int(data.success.sum()),
            "instructions": sorted(set(data.instructions))}
    trainer = WMTrainer(model, data, job, out_dir, meta)
    if resume:
        trainer.resume()
    return trainer.fit()
