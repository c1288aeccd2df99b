import pytest
import torch
from torch.utils.data import default_collate

from tests.vla.policy.conftest import small_config
from tests.vla.policy.synthetic_data import LineDataset
from vla.policy.model import VLAModel


def make(cameras: tuple[str, ...] = (), **kw: object) -> tuple[VLAModel, LineDataset]:
    data = LineDataset(n=16, cameras=cameras, **{k: v for k, v in kw.items() if k == "n_obs_steps"})
    return VLAModel(small_config(cameras, **kw), data.stats()), data


def batch_of(data: LineDataset, n: int = 8) -> dict:
    return default_collate([data[i] for i in range(n)])


@pytest.mark.parametrize("cameras", [(), ("agentview", "wrist")])
def test_loss_and_gradients_in_both_modes(cameras: tuple[str, ...]) -> None:
    model, data = make(cameras)
    loss, metrics = model.compute_loss(batch_of(data), torch.Generator().manual_seed(0))
    assert loss.ndim == 0 and torch.isfinite(loss) and metrics["loss"] == pytest.approx(float(loss.detach()))
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    assert all(g is not None for n, g in grads.items() if n.startswith(("action_out", "proprio", "lang_proj")))
    for cam in cameras:  # the vision encoder of each camera learns
        assert grads[f"vision.{cam}.proj.weight"].abs().sum() > 0


@torch.no_grad()
def test_same_generator_same_loss_and_padding_does_not_count() -> None:
    model, data = make()
    batch = batch_of(data)
    l1, _ = model.compute_loss(batch, torch.Generator().manual_seed(3))
    l2, _ = model.compute_loss(batch, torch.Generator().manual_seed(3))
    assert float(l1) == float(l2)
    # Values past the episode end (action_mask False) must not change the loss.
    assert not bool(batch["action_mask"].all())
    changed = dict(batch, action=batch["action"].clone())
    changed["action"][~batch["action_mask"]] = 1e3
    l3, _ = model.compute_loss(changed, torch.Generator().manual_seed(3))
    assert float(l3) == pytest.approx(float(l1), rel=1e-6)
    # ...whereas a valid position does.
    changed["action"][0, 0] += 5.0
    l4, _ = model.compute_loss(changed, torch.Generator().manual_seed(3))
    assert float(l4) != pytest.approx(float(l1), rel=1e-6)


@torch.no_grad()
def test_loss_weights_scale_samples_and_zero_excludes_them() -> None:
    model, data = make()
    batch = batch_of(data)
    base, _ = model.compute_loss(batch, torch.Generator().manual_seed(3))
    uniform = dict(batch, loss_weight=torch.full(batch["action_mask"].shape, 2.0))
    same, _ = model.compute_loss(uniform, torch.Generator().manual_seed(3))
    assert float(same) == pytest.approx(float(base), rel=1e-5)
    weights = torch.ones(batch["action_mask"].shape)
    weights[:4] = 0.0  # the first half of the batch is not supervised
    weighted = dict(batch, loss_weight=weights)
    l1, _ = model.compute_loss(weighted, torch.Generator().manual_seed(3))
    changed = dict(weighted, action=batch["action"].clone())
    changed["action"][:4] += 7.0
    assert float(model.compute_loss(changed, torch.Generator().manual_seed(3))[0]) == pytest.approx(float(l1), rel=1e-6)
    changed["action"][5] += 7.0
    assert float(model.compute_loss(changed, torch.Generator().manual_seed(3))[0]) != pytest.approx(float(l1), rel=1e-6)


def test_prefix_positions_get_no_loss() -> None:
    """With every sample given a clean first action, that position's velocity gets no gradient."""
    model, data = make(max_prefix=1, prefix_prob=1.0)
    batch = batch_of(data)
    captured = {}
    original = model.velocity

    def spy(*args: torch.Tensor) -> torch.Tensor:
        v = original(*args)
        v.retain_grad()
        captured["v"], captured["tau"] = v, args[1]
        return v

    model.velocity = spy  # type: ignore[method-assign]
    loss, _ = model.compute_loss(batch, torch.Generator().manual_seed(0))
    loss.backward()
    assert bool((captured["tau"][:, 0] == 1.0).all())  # prefix positions have flow time 1 (clean)
    assert float(captured["v"].grad[:, 0].abs().max()) == 0.0
    assert float(captured["v"].grad[:, 1].abs().max()) > 0.0


def test_bad_batches_are_named() -> None:
    model, data = make(("agentview",))
    batch = batch_of(data)
    with pytest.raises(KeyError, match=r"camera 'front' is not known.*agentview"):
        model.compute_loss({**batch, "images": {**batch["images"], "front": batch["images"]["agentview"]}})
    with pytest.raises(KeyError, match="lacks camera 'agentview'"):
        model.compute_loss({**batch, "images": {}})
    with pytest.raises(ValueError, match=r"batch\['state'\] has shape"):
        model.compute_loss({**batch, "state": batch["state"][..., :2]})
    with pytest.raises(ValueError, match=r"batch\['action'\] has shape"):
        model.compute_loss({**batch, "action": batch["action"][:, :4]})
    with pytest.raises(KeyError, match="action_mask"):
        model.compute_loss({k: v for k, v in batch.items() if k != "action_mask"})
    with pytest.raises(ValueError, match="instruction is empty"):
        model.compute_loss({**batch, "instruction": [""] * len(batch["instruction"])})


def test_history_padding_is_masked_out() -> None:
    """Changing a padded (obs_mask False) history frame must not change the context."""
    model, data = make(("agentview",), n_obs_steps=2)
    model.eval()
    batch = batch_of(data, 2)
    mask = torch.tensor([[False, True], [True, True]])
    images = [batch["images"]["agentview"]]
    lang = model.language_embedding(batch["instruction"])
    ctx, _ = model.encode(images, batch["state"], mask, lang)
    state2 = batch["state"].clone()
    state2[:, 0] += 10.0
    images2 = [images[0].clone()]
    images2[0][:, 0] = 255 - images2[0][:, 0]
    ctx2, _ = model.encode(images2, state2, mask, lang)
    # Sample 0 (padded first frame): the valid tokens do not change; sample 1 does.
    valid0 = torch.cat([torch.ones(1, dtype=torch.bool), mask[0], mask[0].repeat_interleave(4)])
    assert torch.allclose(ctx[0, valid0], ctx2[0, valid0], atol=1e-5)
    assert not torch.allclose(ctx[1], ctx2[1], atol=1e-3)


def test_sample_actions_shape_and_exact_prefix() -> None:
    model, data = make(("agentview",))
    model.eval()
    batch = batch_of(data, 3)
    images = [batch["images"]["agentview"]]
    lang = model.language_embedding(batch["instruction"])
    prefix = batch["action"][:, :5]
    out = model.sample_actions(images, batch["state"], batch["obs_mask"], lang, prefix=prefix,
                               generator=torch.Generator().manual_seed(0))
    assert out.shape == (3, 16, 2) and out.dtype == torch.float32
    assert torch.equal(out[:, :5], prefix)
    with pytest.raises(ValueError, match="fewer than the chunk size"):
        model.sample_actions(images, batch["state"], batch["obs_mask"], lang, prefix=batch["action"][:, :16])


def test_language_norm_centres_the_instructions_and_survives_a_checkpoint(tmp_path) -> None:
    from vla.policy.checkpoint import load_model, save_checkpoint

    model, data = make(language_norm=True)
    texts = ["put the red cube in the white zone", "put the blue cube in the white zone",
             "put the red cube in the black zone"]
    model.set_language_stats(texts * 2)  # repeats do not weigh: the distinct strings count
    e = model.language_embedding(texts)
    centred = (e - model.lang_mean) / model.lang_scale
    assert torch.allclose(centred.mean(0), torch.zeros(384), atol=1e-5)
    assert float((centred ** 2).mean()) == pytest.approx(1.0, rel=1e-4)
    # the goals now differ in the language token much more than the raw embeddings do
    raw_cos = torch.nn.functional.cosine_similarity(e[0], e[1], dim=0)
    norm_cos = torch.nn.functional.cosine_similarity(centred[0], centred[1], dim=0)
    assert norm_cos < raw_cos - 0.3
    loss, _ = model.compute_loss(batch_of(data), torch.Generator().manual_seed(0))
    assert torch.isfinite(loss)
    path = save_checkpoint(tmp_path / "ck", model, data.stats())
    back, _ = load_model(path, use_ema=False)
    assert torch.equal(back.lang_mean, model.lang_mean) and torch.equal(back.lang_scale, model.lang_scale)
    with pytest.raises(ValueError, match="at least 2 distinct"):
        model.set_language_stats(["one"] * 3)
    with pytest.raises(ValueError, match="language_norm: true"):
        make()[0].set_language_stats(texts)


def test_language_film_learns_and_keeps_old_checkpoints_loadable() -> None:
    """With `language_film` the encoders get FiLM layers that the instruction drives; every other
    tensor keeps its name and shape, so a checkpoint without FiLM still has the same layout."""
    cams = ("agentview",)
    film, data = make(cams, language_film=True, language_norm=True)
    film.set_language_stats(["put the red cube in the white zone", "put the blue cube in the white zone"])
    plain, _ = make(cams)
    plain_keys = {k: v.shape for k, v in plain.state_dict().items()}
    film_keys = {k: v.shape for k, v in film.state_dict().items()
                 if ".film" not in k and k not in ("lang_mean", "lang_scale")}
    assert film_keys == plain_keys
    loss, _ = film.compute_loss(batch_of(data), torch.Generator().manual_seed(0))
    loss.backward()
    film_grads = {n: p.grad for n, p in film.named_parameters() if ".film" in n}
    assert any(n.startswith("proprio.film") for n in film_grads) and any(n.startswith("vision.") for n in film_grads)
    assert all(g is not None and g.abs().sum() > 0 for n, g in film_grads.items() if n.endswith("proj.weight"))


def test_state_quats_make_the_model_blind_to_the_quaternion_sign_and_survive_a_checkpoint(tmp_path) -> None:
    from vla.policy.checkpoint import load_model, save_checkpoint

    data = LineDataset(n=16, state_dim=9, quat_at=3)
    batch = batch_of(data, 4)
    flipped = batch["state"].clone()
    flipped[..., 3:7] *= -1
    lang = None
    for quats, same in (((3,), True), ((), False)):
        torch.manual_seed(0)
        model = VLAModel(small_config(state_dim=9, state_quats=quats), data.stats()).eval()
        lang = model.language_embedding(batch["instruction"])
        a, _ = model.encode([], batch["state"], batch["obs_mask"], lang)
        b, _ = model.encode([], flipped, batch["obs_mask"], lang)
        assert torch.allclose(a, b, atol=1e-6) is same
    with pytest.raises(ValueError, match="state_dim is 5"):
        small_config(state_dim=5, state_quats=(3,))
    model = VLAModel(small_config(state_dim=9, state_quats=(3,)), data.stats())
    loaded = load_model(save_checkpoint(tmp_path / "ck", model, data.stats()))[0]
    assert loaded.cfg.state_quats == (3,)
    torch.testing.assert_close(loaded.encode([], flipped, batch["obs_mask"], lang)[0],
                               model.eval().encode([], batch["state"], batch["obs_mask"], lang)[0])


def test_target_clip_bounds_an_out_of_envelope_target_and_leaves_in_range_ones() -> None:
    """A target far outside the normalisation envelope (a person's correction on a dimension the
    demos barely use) dominates the loss unless clipped; targets inside the bound are untouched."""
    model, data = make()
    batch = batch_of(data)
    gen = lambda: torch.Generator().manual_seed(3)  # noqa: E731
    base, _ = model.compute_loss(batch, gen())
    inside, m_inside = model.compute_loss(batch, gen(), target_clip=50.0)
    assert float(inside) == pytest.approx(float(base), rel=1e-6) and m_inside["clipped_frac"] == 0.0
    far = {**batch, "action": batch["action"].clone()}
    scale = model.normalizer.action_scale[0]
    far["action"][0, :, 0] = model.normalizer.action_center[0] + 40.0 * scale  # 40 normalised units
    unclipped, _ = model.compute_loss(far, gen())
    clipped, metrics = model.compute_loss(far, gen(), target_clip=2.0)
    assert float(unclipped) > 10 * float(base)
    assert float(clipped) < 3 * float(base)
    assert 0.0 < metrics["clipped_frac"] < 1.0  # the one sample of eight, on its supervised positions


def test_per_dim_losses_average_to_the_loss() -> None:
    model, data = make()
    loss, metrics = model.compute_loss(batch_of(data), torch.Generator().manual_seed(3), per_dim=True)
    dims = [metrics[f"loss_dim{i}"] for i in range(model.cfg.action_dim)]
    assert sum(dims) / len(dims) == pytest.approx(float(loss.detach()), rel=1e-5)
    assert "loss_dim0" not in model.compute_loss(batch_of(data), torch.Generator().manual_seed(3))[1]


def test_future_state_head_adds_its_weighted_loss_and_trains_the_encoders(tmp_path) -> None:
    """`future_state_weight` > 0: the loss is the flow loss plus the weight times the head's MSE on
    the state the chunk led to, whose gradient reaches the camera encoder; 0 builds no head, so
    plain checkpoints keep their layout, and the head survives a checkpoint."""
    from vla.policy.checkpoint import load_model, save_checkpoint

    cams = ("agentview",)
    plain, data = make(cams)
    torch.manual_seed(0)
    aux, _ = make(cams, future_state_weight=0.5)
    assert not any(k.startswith("future_head") for k in plain.state_dict())
    assert {k for k in aux.state_dict() if not k.startswith("future_head")} == set(plain.state_dict())
    batch = batch_of(data)
    loss, metrics = aux.compute_loss(batch, torch.Generator().manual_seed(3))
    assert metrics["loss"] == pytest.approx(metrics["flow_loss"] + 0.5 * metrics["future_state_loss"], rel=1e-5)
    assert metrics["future_state_loss"] > 0
    loss.backward()
    assert aux.vision["agentview"].proj.weight.grad.abs().sum() > 0  # the aux target shapes the encoder
    assert aux.future_head[-1].weight.grad.abs().sum() > 0
    # the head reads the camera tokens before the trunk, so the trunk gets only the flow loss's gradient
    aux.zero_grad()
    kept: list = []
    aux.encode([batch["images"]["agentview"]], batch["state"], batch["obs_mask"],
               aux.language_embedding(batch["instruction"]), kept)
    tokens, mask = torch.cat(kept, 2).flatten(1, 2), batch["obs_mask"].repeat_interleave(4, dim=1)
    aux.future_state_loss(tokens, mask, batch).backward()
    assert aux.vision["agentview"].proj.weight.grad.abs().sum() > 0
    assert all(p.grad is None for n, p in aux.named_parameters() if n.startswith(("trunk", "proprio")))
    # the target is the future state: moving it changes the loss
    moved = {**batch, "future_state": batch["future_state"] + 1.0}
    with torch.no_grad():
        assert float(aux.future_state_loss(tokens, mask, moved)) > float(aux.future_state_loss(tokens, mask, batch))
    with pytest.raises(KeyError, match="lacks key 'future_state'"):
        aux.compute_loss({k: v for k, v in batch.items() if k != "future_state"})
    with pytest.raises(ValueError, match=r"batch\['future_state'\] has shape \(8, 2\)"):
        aux.compute_loss({**batch, "future_state": batch["future_state"][:, :2]})
    with pytest.raises(ValueError, match="future_state_weight must be finite and >= 0"):
        small_config(cams, future_state_weight=-1.0)
    loaded = load_model(save_checkpoint(tmp_path / "ck", aux, data.stats()), use_ema=False)[0]
    torch.testing.assert_close(loaded.future_head[-1].weight, aux.future_head[-1].weight)
    assert "future_state_loss" not in plain.compute_loss(batch)[1]
    state_only, data = make(future_state_weight=1.0)  # no cameras: the head reads the trunk's tokens
    loss, metrics = state_only.compute_loss(batch_of(data))
    loss.backward()
    assert metrics["future_state_loss"] > 0 and state_only.trunk[0].parameters().__next__().grad is not None
