"""vla.policy.augment: random shifts of a sample's frames, and where the model applies them."""

from __future__ import annotations

import pytest
import torch

from vla.policy.augment import random_shift


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


@torch.no_grad()
def test_the_model_shifts_frames_in_training_only() -> None:
    from torch.utils.data import default_collate

    from tests.vla.policy.conftest import small_config
    from tests.vla.policy.synthetic_data import LineDataset
    from vla.policy.model import VLAModel

    cams = ("agentview", "wrist")
    data = LineDataset(n=8, cameras=cams)
    batch = default_collate([data[i] for i in range(8)])
    torch.manual_seed(0)
    plain = VLAModel(small_config(cams), data.stats())
    shifted = VLAModel(small_config(cams, augment_shift=3), data.stats())
    shifted.load_state_dict(plain.state_dict())

    def loss(model: VLAModel) -> float:
        return float(model.compute_loss(batch, torch.Generator().manual_seed(1))[0])

    plain.eval()
    shifted.eval()
    assert loss(shifted) == loss(plain)  # validation and analysis see the frames as they are
    plain.train()
    shifted.train()
    assert loss(shifted) != loss(plain)
    with pytest.raises(ValueError, match="augment_shift must be an integer >= 0"):
        small_config(cams, augment_shift=-1)
