"""BiT's ResNet-v2 (Kolesnikov et al., ECCV 2020, "Big Transfer (BiT): General Visual
Representation Learning", Sec. 2.1 and 4.1): the ImageNet-21k networks of Schott et al.'s (ICLR
2022, Sec. 4) transfer models, as encoders started from a user's BiT weights file.

The network is He et al.'s pre-activation ResNet (ECCV 2016, "Identity Mappings in Deep
Residual Networks"), its bottleneck units GroupNorm(32)-ReLU before each convolution and the
projection shortcut taken from the first unit's normalised input, with every batch norm
replaced by group norm and every convolution weight-standardised (Qiao et al. 2019):
``w' = (w - mean(w)) / sqrt(var(w) + 1e-10)`` over each output filter. Stem: 7x7/2 convolution,
zero padding of 1, 3x3/2 max pool; stages of 3-4-6-3 (R50) or 3-4-23-3 (R101) units at width
factor 1 (bottleneck widths 64-128-256-512, outputs 4x that), the stride on the 3x3 convolution
of each stage's first unit after the first; then GroupNorm-ReLU and global average pooling
(the BiT-M classifier is left out). Images are scaled to [-1, 1], as BiT's own pipeline does.

The weights load from BiT's released files as they are (``BiT-M-R50x1.npz``,
``BiT-M-R101x1.npz``: TensorFlow names under ``resnet/``, kernels height-width-in-out),
checked name by name and shape by shape (`load_bit_weights`); nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

#: Units per stage of BiT's R50x1 and R101x1 (He et al. 2016, Table 1).
BIT_LAYERS = {"bit_resnet50": (3, 4, 6, 3), "bit_resnet101": (3, 4, 23, 3)}
#: Weight standardisation's epsilon and group norm's groups, as BiT's release has them.
WS_EPS = 1e-10
GROUPS = 32
#: [0, 1] -> [-1, 1]: BiT's input normalisation, as (x - mean) / std.
BIT_MEAN = (0.5, 0.5, 0.5)
BIT_STD = (0.5, 0.5, 0.5)
#: Where BiT's files keep the network, and its classifier (ignored).
PREFIX = "resnet/"
HEAD = f"{PREFIX}head/"


class StdConv2d(nn.Conv2d):
    """A convolution whose weights are standardised per output filter at every call."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var, mean = torch.var_mean(self.weight, dim=(1, 2, 3), keepdim=True, unbiased=False)
        weight = (self.weight - mean) / torch.sqrt(var + WS_EPS)
        return F.conv2d(x, weight, self.bias, self.stride, self.padding)


class PreActUnit(nn.Module):
    """GN-ReLU-1x1, GN-ReLU-3x3 (stride), GN-ReLU-1x1 x4, added to the input or to a strided
    1x1 projection of the first GN-ReLU's output."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        mid = c_out // 4
        self.gn1 = nn.GroupNorm(GROUPS, c_in)
        self.conv1 = StdConv2d(c_in, mid, 1, bias=False)
        self.gn2 = nn.GroupNorm(GROUPS, mid)
        self.conv2 = StdConv2d(mid, mid, 3, stride=stride, padding=1, bias=False)
        self.gn3 = nn.GroupNorm(GROUPS, mid)
        self.conv3 = StdConv2d(mid, c_out, 1, bias=False)
        self.downsample: nn.Module | None = None
        if stride != 1 or c_in != c_out:
            self.downsample = StdConv2d(c_in, c_out, 1, stride=stride, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre = F.relu(self.gn1(x))
        shortcut = x if self.downsample is None else self.downsample(pre)
        h = self.conv1(pre)
        h = self.conv2(F.relu(self.gn2(h)))
        h = self.conv3(F.relu(self.gn3(h)))
        return h + shortcut


class BiTBackbone(nn.Module):
    """BiT's ResNet-v2 at width 1 without its classifier: images -> pooled features [B, 2048]."""

    input_mean = BIT_MEAN
    input_std = BIT_STD

    def __init__(self, layers: tuple[int, int, int, int]) -> None:
        super().__init__()
        self.stem = StdConv2d(3, 64, 7, stride=2, padding=3, bias=False)
        c_in = 64
        stages = []
        for i, (units, width) in enumerate(zip(layers, (64, 128, 256, 512), strict=True)):
            c_out = width * 4
            stage = nn.ModuleDict()
            for j in range(units):
                stride = 2 if i > 0 and j == 0 else 1
                stage[f"unit{j + 1:02d}"] = PreActUnit(c_in, c_out, stride)
                c_in = c_out
            stages.append(stage)
        self.stages = nn.ModuleList(stages)
        self.norm = nn.GroupNorm(GROUPS, c_in)
        self.out_features = c_in

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.max_pool2d(F.pad(self.stem(x), (1, 1, 1, 1)), 3, stride=2)
        for stage in self.stages:
            for unit in stage.values():
                h = unit(h)
        h = F.relu(self.norm(h))
        return torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)


def bit_names(backbone: BiTBackbone) -> dict[str, str]:
    """Each parameter of the backbone -> its name in BiT's files."""
    names = {
        "stem.weight": f"{PREFIX}root_block/standardized_conv2d/kernel",
        "norm.weight": f"{PREFIX}group_norm/gamma",
        "norm.bias": f"{PREFIX}group_norm/beta",
    }
    for i, stage in enumerate(backbone.stages):
        for unit_name, unit in stage.items():
            ours, theirs = f"stages.{i}.{unit_name}.", f"{PREFIX}block{i + 1}/{unit_name}/"
            for k, part in enumerate("abc", start=1):
                names[f"{ours}conv{k}.weight"] = f"{theirs}{part}/standardized_conv2d/kernel"
                names[f"{ours}gn{k}.weight"] = f"{theirs}{part}/group_norm/gamma"
                names[f"{ours}gn{k}.bias"] = f"{theirs}{part}/group_norm/beta"
            if unit.downsample is not None:
                names[f"{ours}downsample.weight"] = f"{theirs}a/proj/standardized_conv2d/kernel"
    return names


def load_bit_weights(backbone: BiTBackbone, path: Path) -> None:
    """Load a BiT release file (``np.load``-able, TensorFlow names, HWIO kernels) into
    `backbone`, every name and shape checked: ValueError naming the file and what differs.
    The classifier (``resnet/head/...``) is ignored."""
    try:
        with np.load(path, allow_pickle=False) as file:
            arrays = {k: file[k] for k in file.files}
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"weights file {path}: not a BiT .npz file (such as BiT-M-R50x1.npz): {exc}"
        ) from None
    if not any(k.startswith(PREFIX) for k in arrays):
        raise ValueError(
            f"weights file {path}: not a BiT .npz file (such as BiT-M-R50x1.npz): nothing "
            f"under {PREFIX!r} (torchvision's state dicts are for resnet50, resnet101, "
            "densenet121)"
        )
    names = bit_names(backbone)
    missing = sorted(v for v in names.values() if v not in arrays)
    # A deeper network's file holds every name of a shallower one: its extra units must not
    # be dropped in silence.
    expected = set(names.values())
    unexpected = sorted(k for k in arrays if k not in expected and not k.startswith(HEAD))
    if missing or unexpected:
        raise ValueError(
            f"weights file {path} is not a BiT file of this network ({len(names)} tensors "
            f"under {PREFIX!r}): {len(missing)} missing (e.g. {missing[:3]}), "
            f"{len(unexpected)} unexpected (e.g. {unexpected[:3]}; another depth?)"
        )
    state = backbone.state_dict()
    loaded: dict[str, torch.Tensor] = {}
    for ours, theirs in names.items():
        array = arrays[theirs]
        if array.ndim == 4:  # height, width, in, out -> out, in, height, width
            array = array.transpose(3, 2, 0, 1)
        if tuple(array.shape) != tuple(state[ours].shape):
            raise ValueError(
                f"weights file {path}: {theirs} has shape {tuple(arrays[theirs].shape)}, where "
                f"the network's {ours} is {tuple(state[ours].shape)} (another depth or width?)"
            )
        loaded[ours] = torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))
    backbone.load_state_dict(loaded)
