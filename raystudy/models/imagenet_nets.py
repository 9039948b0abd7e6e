"""The ImageNet networks of Schott et al. (ICLR 2022, Sec. 4): ResNet-50 and ResNet-101 (He et
al., CVPR 2016, "Deep Residual Learning for Image Recognition", Table 1) and DenseNet-121
(Huang et al., CVPR 2017, "Densely Connected Convolutional Networks", Table 1), as encoders,
trained from scratch or started from a user's ImageNet weights file.

Each network is written in plain torch with torchvision's module names and shapes
(`torchvision.models.resnet50`, `resnet101`, `densenet121`: v1.5 bottlenecks with the stride on
the 3x3 convolution; DenseNet growth 32, blocks 6-12-24-16, bottleneck width 4x growth, 64
initial features), so that a state dict torchvision saves loads into `Encoder.backbone` key for
key (`load_imagenet_weights`). Nothing is downloaded: torchvision is not a dependency, and a
trial may run where nothing can be reached. The ImageNet classifier (`fc` / `classifier`) is
left out; the encoder's own heads map the pooled features to (mu, logvar).

Inputs in [0, 1] are normalised by ImageNet's channel means and sds, which the weights expect;
a grey image is repeated to three channels, so the first convolution keeps ImageNet's shape
whatever the dataset. The images keep the dataset's resolution (64 px: the last stage sees a
2x2 map), where ImageNet models were trained at 224 px. Initial weights follow torchvision's
(Kaiming-normal fan-out convolutions, batch-norm weight 1 and bias 0).

The decoder (for eval/* and the reconstructions figure only; Schott et al.'s models have
none) is the `vanilla_cnn` one.

The ImageNet-21k ResNets of Schott et al.'s transfer models (BiT-M, Kolesnikov et al. 2020)
are another network, pre-activation ResNet-v2s with group normalisation and weight
standardisation: `bit_resnet50` and `bit_resnet101` (`raystudy.models.bit_resnet`), which load
BiT's own release files; `load_imagenet_weights` takes either kind of file for its network.
"""

from __future__ import annotations

import pickle
import re
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from raystudy.models.bit_resnet import BIT_LAYERS, BiTBackbone, load_bit_weights

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: Blocks per stage (He et al., Table 1).
RESNET_LAYERS = {"resnet50": (3, 4, 6, 3), "resnet101": (3, 4, 23, 3)}
DENSENET121_BLOCKS = (6, 12, 24, 16)
DENSENET_GROWTH = 32
DENSENET_BN_SIZE = 4
DENSENET_INIT_FEATURES = 64

#: Keys of the ImageNet classifier, which these encoders replace with their own heads.
_CLASSIFIER = re.compile(r"^(fc|classifier)\.")
#: Old torchvision DenseNet files name a dense layer's parts "norm.1" where the module is
#: "norm1" (torchvision's own loader renames them the same way).
_OLD_DENSE_KEY = re.compile(
    r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$"
)


class Bottleneck(nn.Module):
    """torchvision's ResNet v1.5 bottleneck: 1x1, 3x3 (stride here), 1x1 x4, identity or a
    strided 1x1 projection added before the last ReLU."""

    expansion = 4

    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        c_out = width * self.expansion
        self.conv1 = nn.Conv2d(c_in, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, c_out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU()
        self.downsample: nn.Module | None = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        h = self.relu(self.bn1(self.conv1(x)))
        h = self.relu(self.bn2(self.conv2(h)))
        return self.relu(self.bn3(self.conv3(h)) + identity)


class ResNetBackbone(nn.Module):
    """torchvision's ResNet without `fc`: images -> pooled features [B, 2048]."""

    def __init__(self, layers: tuple[int, int, int, int]) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        c_in = 64
        for i, (blocks, width) in enumerate(zip(layers, (64, 128, 256, 512), strict=True)):
            stage = []
            for j in range(blocks):
                stage.append(Bottleneck(c_in, width, stride=2 if i > 0 and j == 0 else 1))
                c_in = width * Bottleneck.expansion
            setattr(self, f"layer{i + 1}", nn.Sequential(*stage))
        self.out_features = c_in
        _torchvision_init(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        h = self.layer4(self.layer3(self.layer2(self.layer1(h))))
        return torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)


class DenseLayer(nn.Module):
    """BN-ReLU-1x1 (4x growth) - BN-ReLU-3x3 (growth): the new features of one layer."""

    def __init__(self, c_in: int) -> None:
        super().__init__()
        width = DENSENET_BN_SIZE * DENSENET_GROWTH
        self.norm1 = nn.BatchNorm2d(c_in)
        self.relu1 = nn.ReLU()
        self.conv1 = nn.Conv2d(c_in, width, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(width)
        self.relu2 = nn.ReLU()
        self.conv2 = nn.Conv2d(width, DENSENET_GROWTH, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(self.relu1(self.norm1(x)))
        return self.conv2(self.relu2(self.norm2(h)))


class DenseBlock(nn.ModuleDict):
    """Layers named denselayer1.., each reading every earlier output, concatenated."""

    def __init__(self, layers: int, c_in: int) -> None:
        super().__init__()
        for i in range(layers):
            self[f"denselayer{i + 1}"] = DenseLayer(c_in + i * DENSENET_GROWTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.values():
            features.append(layer(torch.cat(features, dim=1)))
        return torch.cat(features, dim=1)


class DenseNetBackbone(nn.Module):
    """torchvision's DenseNet-121 without `classifier`: images -> pooled features [B, 1024]."""

    def __init__(self) -> None:
        super().__init__()
        c = DENSENET_INIT_FEATURES
        parts: list[tuple[str, nn.Module]] = [
            ("conv0", nn.Conv2d(3, c, 7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(c)),
            ("relu0", nn.ReLU()),
            ("pool0", nn.MaxPool2d(3, stride=2, padding=1)),
        ]
        for i, layers in enumerate(DENSENET121_BLOCKS):
            parts.append((f"denseblock{i + 1}", DenseBlock(layers, c)))
            c += layers * DENSENET_GROWTH
            if i < len(DENSENET121_BLOCKS) - 1:
                transition = nn.Sequential(
                    OrderedDict(
                        norm=nn.BatchNorm2d(c),
                        relu=nn.ReLU(),
                        conv=nn.Conv2d(c, c // 2, 1, bias=False),
                        pool=nn.AvgPool2d(2, stride=2),
                    )
                )
                parts.append((f"transition{i + 1}", transition))
                c //= 2
        parts.append(("norm5", nn.BatchNorm2d(c)))
        self.features = nn.Sequential(OrderedDict(parts))
        self.out_features = c
        _torchvision_init(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.features(x))
        return torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)


def _torchvision_init(module: nn.Module) -> None:
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


class ImageNetEncoder(nn.Module):
    """[0, 1] images (1 or 3 channels) -> ImageNet normalisation -> backbone -> (mu, logvar)."""

    def __init__(self, backbone: nn.Module, channels: int, latent_dim: int) -> None:
        super().__init__()
        if channels not in (1, 3):
            raise ValueError(
                f"the ImageNet networks take 1- or 3-channel images, got {channels} channels"
            )
        self.channels = channels
        self.backbone = backbone
        features = int(backbone.out_features)
        self.mean = nn.Linear(features, latent_dim)
        self.logvar = nn.Linear(features, latent_dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.channels == 1:
            x = x.expand(-1, 3, -1, -1)
        # Constants made here, not buffers: the model's state (checkpoints, the stacked
        # trainer's stacked buffers) holds only what trains or tracks statistics.
        # Each network's own input scaling (ImageNet's statistics, BiT's [-1, 1]).
        mean_rgb = getattr(self.backbone, "input_mean", IMAGENET_MEAN)
        std_rgb = getattr(self.backbone, "input_std", IMAGENET_STD)
        mean = torch.tensor(mean_rgb, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
        std = torch.tensor(std_rgb, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
        h = self.backbone((x - mean) / std)
        return self.mean(h), self.logvar(h)


def resnet_encoder(name: str, channels: int, latent_dim: int) -> ImageNetEncoder:
    """`resnet50` or `resnet101` as an encoder."""
    return ImageNetEncoder(ResNetBackbone(RESNET_LAYERS[name]), channels, latent_dim)


def densenet121_encoder(channels: int, latent_dim: int) -> ImageNetEncoder:
    return ImageNetEncoder(DenseNetBackbone(), channels, latent_dim)


def bit_encoder(name: str, channels: int, latent_dim: int) -> ImageNetEncoder:
    """`bit_resnet50` or `bit_resnet101` as an encoder."""
    return ImageNetEncoder(BiTBackbone(BIT_LAYERS[name]), channels, latent_dim)


def _backbone_state(raw: object, path: Path) -> dict[str, torch.Tensor]:
    """The backbone's entries of a torchvision state dict: the classifier dropped, a
    DataParallel "module." prefix and old DenseNet names undone."""
    if not isinstance(raw, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in raw.items()
    ):
        raise ValueError(
            f"weights file {path}: expected a state dict (names -> tensors, as "
            "torch.save(model.state_dict(), path) writes), got "
            f"{type(raw).__name__}"
        )
    state: dict[str, torch.Tensor] = {}
    for key, value in raw.items():
        key = key.removeprefix("module.")
        if _CLASSIFIER.match(key):
            continue
        state[_OLD_DENSE_KEY.sub(r"\1\2", key)] = value
    return state


def load_imagenet_weights(encoder: nn.Module, path: str | Path) -> None:
    """Load a torchvision state dict (`torch.save(torchvision_model.state_dict(), path)`) of
    the encoder's network into `encoder.backbone`, or for the BiT networks BiT's release file
    (`load_bit_weights`), every name and shape checked: ValueError naming the file and the
    first names that differ. The classifier's weights are ignored."""
    path = Path(path).expanduser()
    backbone = getattr(encoder, "backbone", None)
    if not isinstance(encoder, ImageNetEncoder) or backbone is None:
        raise ValueError(
            f"weights file {path}: only the ImageNet architectures (resnet50, resnet101, "
            f"densenet121, bit_resnet50, bit_resnet101) load ImageNet weights, not "
            f"{type(encoder).__name__}"
        )
    if not path.is_file():
        raise ValueError(f"weights file {path} does not exist (nothing is downloaded)")
    if isinstance(backbone, BiTBackbone):
        load_bit_weights(backbone, path)
        return
    try:
        raw = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, OSError, EOFError, pickle.UnpicklingError) as exc:
        raise ValueError(
            f"weights file {path}: not a file torch.save wrote ({type(exc).__name__}); "
            f"{type(backbone).__name__} takes a torchvision state dict (BiT's .npz files are "
            "for bit_resnet50 and bit_resnet101)"
        ) from None
    state = _backbone_state(raw, path)
    own = backbone.state_dict()
    for key in set(own) - set(state):
        # Files saved before batch norm counted its batches have no count: keep the network's.
        if key.endswith(".num_batches_tracked"):
            state[key] = own[key]
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise ValueError(
            f"weights file {path} is not a torchvision {type(backbone).__name__} state dict: "
            f"{len(missing)} names missing (e.g. {missing[:3]}), {len(unexpected)} unexpected "
            f"(e.g. {unexpected[:3]})"
        )
    wrong = [k for k in own if own[k].shape != state[k].shape]
    if wrong:
        k = wrong[0]
        raise ValueError(
            f"weights file {path}: {len(wrong)} tensors of another shape, e.g. {k} "
            f"{tuple(state[k].shape)} where the network has {tuple(own[k].shape)}"
        )
    backbone.load_state_dict(state)
