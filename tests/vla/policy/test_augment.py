"""vla.policy.augment: random shifts and photometric draws of a sample's frames, and where the model applies them."""

from __future__ import annotations

import pytest
import torch

from vla.policy.augment import parse_photometric, photometric, random_shift


def _frames(b: int = 3, to: int = 2, h: int = 8, w: int = 8) -> torch.Tensor:
    # a distinct value per pixel, the same image in every observation step and channel
    img = torch.arange(h * w, dtype=torch.float32).view(h, w)
    return img[None, None, :, :, None].expand(b, to, h, w, 3).clone()


def test_a_shift_moves_whole_frames_and_fills_the_border_from_the_edge() -> None:
    x = _frames()
    out = random_shift(x, 2, torch.Generator().manual_seed(0))
    assert out.shape == x.shape and out.dtype == torch.float32
    img = x[0, 0, :, :, 0]
    padded = torch.nn.functional.pad(img[None, None], (2, 2, 2, 2), mode="replicate")[0, 0]
    for b in range(3):
        crops = {(dy, dx) for dy in range(5) for dx in range(5)
                 if torch.equal(out[b, 0, :, :, 0], padded[dy:dy + 8, dx:dx + 8])}
        assert len(crops) == 1  # one offset in [-2, 2] per axis explains the sample
        for t in range(2):
            for c in range(3):  # the same offset for every step and channel of a sample
                assert torch.equal(out[b, t, :, :, c], out[b, 0, :, :, 0])


def test_offsets_follow_the_generator_and_differ_between_samples() -> None:
    x = _frames(b=16)
    a = random_shift(x, 3, torch.Generator().manual_seed(5))
    assert torch.equal(a, random_shift(x, 3, torch.Generator().manual_seed(5)))
    assert not torch.equal(a, random_shift(x, 3, torch.Generator().manual_seed(6)))
    assert len({a[i].sum().item() for i in range(16)}) > 1


def test_no_pad_is_the_identity_and_bad_input_is_named() -> None:
    x = _frames().to(torch.uint8)
    assert torch.equal(random_shift(x, 0), x.float())
    with pytest.raises(ValueError, match="pad must be >= 0"):
        random_shift(x, -1)
    with pytest.raises(ValueError, match=r"expected \(B, To, H, W, C\)"):
        random_shift(x[0], 2)


def test_photometric_gains_hold_per_sample_within_the_suites_ranges() -> None:
    x = torch.full((64, 2, 4, 4, 3), 100.0)
    out = photometric(x, {"lighting": 0.2, "colour": 0.05}, torch.Generator().manual_seed(0))
    assert out.shape == x.shape and out.dtype == torch.float32
    gains = out / 100.0  # one gain per sample and channel: the same in every pixel and observation step
    assert torch.allclose(gains, gains[:, :1, :1, :1, :].expand_as(gains))
    g = gains[:, 0, 0, 0, :]
    assert g.min() >= 0.8 * 0.95 - 1e-5 and g.max() <= 1.2 * 1.05 + 1e-5
    assert g.mean(dim=1).max() > 1.1 and g.mean(dim=1).min() < 0.9  # the range is used, both ways
    spread = g / g.mean(dim=1, keepdim=True)  # the white balance: channels differ within a sample
    assert (spread.max(dim=1).values - spread.min(dim=1).values).max() > 0.03
    assert torch.equal(out, photometric(x, {"lighting": 0.2, "colour": 0.05}, torch.Generator().manual_seed(0)))


def test_photometric_noise_is_drawn_up_to_its_severity_and_clipped_to_pixel_range() -> None:
    x = torch.full((200, 1, 16, 16, 3), 128.0)
    out = photometric(x, {"pixel_noise": 8}, torch.Generator().manual_seed(1))
    std = (out - 128.0).flatten(1).std(dim=1)
    assert std.max() < 8 * 1.15 and std.min() < 1.0 and std.max() > 6.0  # from about 0 to the severity
    bright = photometric(torch.full((4, 1, 8, 8, 3), 250.0), {"lighting": 0.5, "pixel_noise": 20},
                         torch.Generator().manual_seed(2))
    assert bright.max() <= 255.0 and bright.min() >= 0.0
    assert torch.equal(photometric(x.to(torch.uint8), {}), x)  # nothing asked: the frames as floats


def test_photometric_spec_takes_the_suites_names_and_names_what_it_refuses() -> None:
    assert parse_photometric("lighting:0.2,colour:0.05,pixel_noise:3") == {"lighting": 0.2, "colour": 0.05,
                                                                           "pixel_noise": 3.0}
    assert parse_photometric("") == {}
    with pytest.raises(ValueError, match="'camera_shift' is not drawn in training"):
        parse_photometric("lighting:0.2,camera_shift:10")
    with pytest.raises(ValueError, match=r"'lightng' is not a perturbation kind.*did you mean 'lighting'"):
        parse_photometric("lightng:0.2")
    with pytest.raises(ValueError, match="augment_photometric: 'lighting' needs a severity"):
        parse_photometric("lighting")
    with pytest.raises(ValueError, match="'realistic' is not a perturbation kind"):
        parse_photometric("realistic")  # presets mix kinds training cannot draw: names only
    with pytest.raises(ValueError, match="severity of 'lighting' must be finite"):
        parse_photometric("lighting:nan")


@pytest.mark.parametrize("augment", [{"augment_shift": 3}, {"augment_photometric": "lighting:0.3,pixel_noise:5"}])
@torch.no_grad()
def test_the_model_augments_frames_in_training_only(augment: dict) -> None:
    from torch.utils.data import default_collate

    from tests.vla.policy.conftest import small_config
    from tests.vla.policy.synthetic_data import LineDataset
    from vla.policy.model import VLAModel

    cams = ("agentview", "wrist")
    data = LineDataset(n=8, cameras=cams)
    batch = default_collate([data[i] for i in range(8)])
    torch.manual_seed(0)
    plain = VLAModel(small_config(cams), data.stats())
    augmented = VLAModel(small_config(cams, **augment), data.stats())
    augmented.load_state_dict(plain.state_dict())

    def loss(model: VLAModel) -> float:
        return float(model.compute_loss(batch, torch.Generator().manual_seed(1))[0])

    plain.eval()
    augmented.eval()
    assert loss(augmented) == loss(plain)  # validation and analysis see the frames as they are
    plain.train()
    augmented.train()
    assert loss(augmented) != loss(plain)


def test_bad_augmentation_settings_are_named() -> None:
    from tests.vla.policy.conftest import small_config

    with pytest.raises(ValueError, match="augment_shift must be an integer >= 0"):
        small_config(("agentview",), augment_shift=-1)
    with pytest.raises(ValueError, match="PolicyConfig: augment_photometric: 'blur' is not drawn in training"):
        small_config(("agentview",), augment_photometric="blur:0.5")
    with pytest.raises(ValueError, match=r"augment_photometric: '0\.2' is not a perturbation kind"):
        small_config(("agentview",), augment_photometric=0.2)  # a number where a kind belongs
