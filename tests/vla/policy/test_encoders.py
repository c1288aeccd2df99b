from pathlib import Path

import pytest
import torch

from tests.vla.policy.conftest import small_config
from vla.policy.encoders import SmallCNN, VisionEncoder, spatial_soft_argmax
from vla.policy.model import VLAModel


def test_cnn_encoder_gives_pooled_tokens_per_image() -> None:
    cfg = small_config(("cam",), vision_tokens=4, image_size=(32, 24))
    enc = VisionEncoder(cfg)
    tokens = enc(torch.randn(5, 3, 32, 24))
    assert tokens.shape == (5, 4, cfg.d_model)
    # Tokens are spatial: content in one corner does not change all tokens alike.
    x = torch.zeros(1, 3, 32, 24)
    y = x.clone()
    y[..., :8, :6] = 3.0
    delta = (enc(y) - enc(x)).norm(dim=-1)[0]
    assert float(delta.max()) > 0 and float(delta.max() - delta.min()) > 1e-3 * float(delta.max())
    assert SmallCNN((8, 16, 32)).out_channels == 32


def test_missing_backbone_weights_are_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="vision_weights folder not found"):
        VLAModel(small_config(("cam",), vision_backbone="hf", vision_weights=str(tmp_path / "none")))
    with pytest.raises(FileNotFoundError, match="vision_weights file not found"):
        VLAModel(small_config(("cam",), vision_backbone="torchvision", vision_arch="resnet18",
                              vision_weights=str(tmp_path / "r18.safetensors")))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["resnet", "vit"])
def test_local_hugging_face_backbone(tmp_path: Path, kind: str) -> None:
    """A pretrained HF backbone loads from a local folder (nothing downloaded) and gives tokens."""
    transformers = pytest.importorskip("transformers")
    if kind == "resnet":
        hf = transformers.ResNetModel(transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16],
                                                                depths=[1, 1]))
    else:
        hf = transformers.ViTModel(transformers.ViTConfig(hidden_size=16, num_hidden_layers=1,
                                                          num_attention_heads=2, intermediate_size=32,
                                                          image_size=16, patch_size=4), add_pooling_layer=False)
    hf.save_pretrained(tmp_path / kind)
    model = VLAModel(small_config(("cam",), vision_backbone="hf", vision_weights=str(tmp_path / kind),
                                  image_size=(16, 16)))
    first = next(iter(hf.state_dict().values()))
    loaded = next(iter(model.vision["cam"].backbone.model.state_dict().values()))
    assert torch.equal(first, loaded)  # the saved weights, not a fresh initialisation
    ctx, mask = model.encode([torch.zeros(2, 1, 16, 16, 3, dtype=torch.uint8)], torch.zeros(2, 1, 3),
                             torch.ones(2, 1, dtype=torch.bool), torch.zeros(2, 384))
    assert ctx.shape == (2, 1 + 1 + 4, 32) and bool(mask.all())


def test_film_starts_as_identity_and_then_modulates_each_sample_by_its_own_condition() -> None:
    from vla.policy.encoders import FiLM, ProprioEncoder

    torch.manual_seed(0)
    cnn, proprio = SmallCNN((8, 16), cond_dim=5), ProprioEncoder(7, 16, cond_dim=5)
    x, s, cond = torch.randn(3, 3, 16, 16), torch.randn(3, 2, 7), torch.randn(3, 5)
    # zero-initialised: a new model is the unconditioned one
    assert torch.equal(cnn(x, cond), cnn(x)) and torch.equal(proprio(s, cond), proprio(s))
    for m in (*cnn.modules(), *proprio.modules()):
        if isinstance(m, FiLM):
            torch.nn.init.normal_(m.proj.weight, std=0.5)
    for enc, inp in ((cnn, x), (proprio, s)):
        out = enc(inp, cond)
        assert not torch.allclose(out, enc(inp)), "a trained FiLM changes the features"
        other = cond.clone()
        other[1] = torch.randn(5)
        changed = (enc(inp, other) - out).flatten(1).abs().amax(dim=1)
        assert changed[1] > 1e-3 and changed[0] == 0 and changed[2] == 0, "each row follows its own condition"


def test_spatial_soft_argmax_finds_a_peak_between_and_at_cells() -> None:
    logits = torch.zeros(1, 3, 5, 9)
    logits[0, 0, 4, 0] = 50.0  # bottom-left cell
    logits[0, 1, 1, 2] = logits[0, 1, 1, 3] = 50.0  # two cells in one row: between them
    kp = spatial_soft_argmax(logits)
    assert torch.allclose(kp[0, 0], torch.tensor([-1.0, 1.0]), atol=1e-4)
    assert torch.allclose(kp[0, 1], torch.tensor([-0.375, -0.5]), atol=1e-4)  # x = (-0.5 - 0.25) / 2
    assert torch.allclose(kp[0, 2], torch.zeros(2), atol=1e-6)  # a flat map: the centre
    # a higher temperature pulls a peak towards the centre
    assert float(spatial_soft_argmax(logits, 100.0)[0, 0].abs().max()) < 0.5


def test_keypoints_tell_where_a_dot_is_inside_one_pooled_quadrant() -> None:
    """A 2-pixel dot moved within one quadrant: the keypoint encoder's tokens follow it, as the
    keypoint (x, y) do; the tokens are as many as without keypoints."""
    torch.manual_seed(0)
    cfg = small_config(("cam",), vision_tokens=4, image_size=(32, 32), vision_keypoints=8)
    enc = VisionEncoder(cfg)
    with torch.no_grad():
        enc.keypoints.weight.zero_()
        enc.keypoints.bias.zero_()
        enc.keypoints.weight[0, :, 0, 0] = 1.0  # keypoint 0 follows the sum of the last features

    def image(r: int, c: int) -> torch.Tensor:
        x = torch.zeros(1, 3, 32, 32)
        x[..., r:r + 2, c:c + 2] = 5.0
        return x

    def kp(x: torch.Tensor) -> torch.Tensor:
        return spatial_soft_argmax(enc.keypoints(enc.backbone(x)), enc.log_temperature.exp())[0, 0]

    a, b = image(2, 2), image(12, 12)  # both in the top-left quadrant of a 2x2 pooled grid
    assert enc(a).shape == (1, 4, cfg.d_model)
    assert float((kp(b) - kp(a)).min()) > 0  # the keypoint moved right and down with the dot
    assert float((enc(b) - enc(a)).norm()) > 0
    assert "kp_proj.weight" in dict(enc.named_parameters())
    assert "kp_proj.weight" not in dict(VisionEncoder(small_config(("cam",))).named_parameters())
