from pathlib import Path

import pytest
import torch

from tests.vla.policy.conftest import small_config
from tests.vla.policy.synthetic_data import LineDataset
from vla.policy.checkpoint import CheckpointError, load_tensors
from vla.policy.model import VLAModel
from vla.policy.policy import load_torch_policy
from vla.train.config import TrainConfig, load_train_config
from vla.train.sampler import ResumableBatchSampler
from vla.train.trainer import Trainer, latest_checkpoint

CAMS = ("agentview",)


def new_trainer(out: Path, cfg: TrainConfig, seed: int = 0) -> Trainer:
    torch.manual_seed(seed)  # same initial weights for every trainer built with the same seed
    data = LineDataset(n=32, cameras=CAMS, image_hw=16, instructions=("a", "b"))
    model = VLAModel(small_config(CAMS, dropout=0.1))
    return Trainer(model, data, cfg, out, data.stats(), val_data=LineDataset(n=8, cameras=CAMS, seed=1))


def cfg(**kw: object) -> TrainConfig:
    base = dict(steps=5, batch_size=4, lr=1e-3, warmup_steps=2, ema_decay=0.9, log_every=1, val_every=2,
                val_batches=1, ckpt_every=100, device="cpu", progress=False, tensorboard=False)
    base.update(kw)
    return TrainConfig(**base)


def test_resume_continues_exactly(tmp_path: Path) -> None:
    full = new_trainer(tmp_path / "full", cfg()).fit()
    part = new_trainer(tmp_path / "part", cfg(ckpt_every=3))
    first = part.fit(steps=3)
    assert first.last_checkpoint is not None and first.last_checkpoint.name == "step_00000003"
    resumed = new_trainer(tmp_path / "part", cfg(), seed=123)  # different init: resume must overwrite it
    assert resumed.resume() == 3
    rest = resumed.fit()
    for step in (3, 4):
        assert rest.losses[step] == full.losses[step], step  # bit-exact on CPU
    assert rest.val_losses[5] == full.val_losses[5]
    ema_full = load_tensors(full.last_checkpoint / "ema.safetensors")
    ema_resumed = load_tensors(rest.last_checkpoint / "ema.safetensors")
    assert all(torch.equal(ema_full[k], ema_resumed[k]) for k in ema_full)


def test_debug_preset_trains_two_steps_and_resumes(tmp_path: Path) -> None:
    debug = load_train_config("debug", tensorboard=True)
    assert debug.steps == 2
    result = new_trainer(tmp_path, debug).fit()
    assert sorted(result.losses) == [0, 1] and set(result.val_losses) == {1, 2}
    assert latest_checkpoint(tmp_path).name == "step_00000002"
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))
    again = new_trainer(tmp_path, debug)
    again.resume(tmp_path / "checkpoints" / "step_00000001")
    assert again.fit().losses == {1: result.losses[1]}
    policy = load_torch_policy(latest_checkpoint(tmp_path))  # the training checkpoint is a policy checkpoint
    assert policy.sample_chunk([LineDataset(n=1, cameras=CAMS).observation(0)]).shape == (1, 16, 2)


@pytest.mark.slow
def test_training_reduces_the_loss(tmp_path: Path) -> None:
    trainer = new_trainer(tmp_path, cfg(steps=60, lr=3e-3, warmup_steps=5, ema_decay=0.0, val_every=60))
    result = trainer.fit()
    first = sum(result.losses[s] for s in range(5)) / 5
    last = sum(result.losses[s] for s in range(55, 60)) / 5
    assert last < 0.6 * first


def test_resume_without_checkpoint_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint to resume from"):
        new_trainer(tmp_path, cfg()).resume()


def test_sampler_is_a_function_of_seed_and_step() -> None:
    a = ResumableBatchSampler(10, 3, seed=1)
    batches = [b for _, b in zip(range(7), a, strict=False)]
    b = ResumableBatchSampler(10, 3, seed=1, start_step=4)
    assert [x for _, x in zip(range(3), b, strict=False)] == batches[4:]
    epoch0 = [i for b in batches[:3] for i in b]
    assert len(set(epoch0)) == 9  # no repeats within an epoch
    halves = [ResumableBatchSampler(10, 4, seed=1, rank=r, world_size=2).batch_at(2) for r in (0, 1)]
    assert halves[0] + halves[1] == ResumableBatchSampler(10, 4, seed=1).batch_at(2)
    with pytest.raises(ValueError, match="fewer than one batch"):
        ResumableBatchSampler(2, 3)


def test_lr_schedule_and_config_errors() -> None:
    from vla.train.optim import lr_at

    assert lr_at(0, 1.0, 10, 100, 0.1) == pytest.approx(0.1)
    assert lr_at(9, 1.0, 10, 100, 0.1) == pytest.approx(1.0)
    assert lr_at(100, 1.0, 10, 100, 0.1) == pytest.approx(0.1)
    assert lr_at(55, 1.0, 10, 100, 0.1) == pytest.approx(0.55)
    with pytest.raises(ValueError, match=r"unknown key 'stepz'.*steps"):
        load_train_config("debug", stepz=3)
    with pytest.raises(FileNotFoundError, match="unknown train preset"):
        load_train_config("nope")
    for bad in (0.5, -1.0, float("nan")):
        with pytest.raises(ValueError, match="target_clip must be 0"):
            load_train_config("debug", target_clip=bad)


def test_target_clip_reaches_the_loss_and_is_logged(tmp_path: Path) -> None:
    """train.target_clip is passed to the model's loss: its clipped_frac metric appears in the step's
    metrics (0 here: LineDataset's targets sit inside the bound)."""
    t = new_trainer(tmp_path, cfg(target_clip=2.0))
    batch = next(iter(torch.utils.data.DataLoader(t.train_data, batch_size=4)))
    metrics = t.train_step(batch)
    assert metrics["clipped_frac"] == 0.0
    assert "clipped_frac" not in new_trainer(tmp_path / "off", cfg()).train_step(batch)


def test_evaluator_runs_on_ema_weights_and_restores(tmp_path: Path) -> None:
    calls: list[int] = []
    trainer = new_trainer(tmp_path, cfg(eval_every=2, ema_decay=0.5))

    def evaluator(model: VLAModel, step: int) -> dict[str, float]:
        calls.append(step)
        assert not model.training
        ema = trainer.ema.state_for(model)
        assert all(torch.equal(v, ema[k]) for k, v in model.state_dict().items())
        return {"success": step / 10}

    trainer.evaluator = evaluator
    result = trainer.fit()
    assert calls == [2, 4, 5] and result.evals[4] == {"success": 0.4}
    # After evaluation the training weights are back (they differ from the EMA weights).
    ema = trainer.ema.state_for(trainer.model)
    assert not all(torch.equal(v, ema[k]) for k, v in trainer.model.state_dict().items())


def test_weighted_sampler_draws_only_weighted_samples_and_resumes_exactly() -> None:
    w = torch.tensor([0.0, 1.0, 0.0, 3.0])
    a = ResumableBatchSampler(4, 2, seed=5, weights=w)
    drawn = [i for s in range(500) for i in a.batch_at(s)]
    assert set(drawn) == {1, 3}
    assert 0.7 < drawn.count(3) / len(drawn) < 0.8  # 3:1
    assert ResumableBatchSampler(4, 2, seed=5, start_step=7, weights=w).batch_at(7) == a.batch_at(7)
    with pytest.raises(ValueError, match="weights"):
        ResumableBatchSampler(4, 2, weights=torch.zeros(4))
