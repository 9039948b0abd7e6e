"""The supervised encoder started from ImageNet weights: Schott et al.'s (ICLR 2022, Sec. 4)
transfer-learning models, which fine-tune an ImageNet-pretrained network on the factors.

The loss is `supervised`'s (least squares on the normalised factors, see `reference.py`;
a decoder trained on the detached code), all of the network trained. Before the first step
the encoder's network takes the weights of the file `weights` (`setup`, so a resumed trial's
checkpoint then overwrites them): a state dict as torchvision saves it,
`torch.save(torchvision.models.resnet50(weights=...).state_dict(), path)`, for the
architectures `resnet50`, `resnet101` and `densenet121` (`raystudy.models.imagenet_nets`), and
BiT's release file as it is (`BiT-M-R50x1.npz`, `BiT-M-R101x1.npz`) for `bit_resnet50` and
`bit_resnet101` (`raystudy.models.bit_resnet`); every name and shape is checked and the
classifier ignored. Nothing is downloaded
at run time: the file must exist on every machine a trial may run on, at the same absolute
path, and a spec naming one that does not exist is refused before anything runs
(`model.weights`). Without `weights` the model is `supervised` trained from scratch.

Schott et al.'s transfer models are ResNet-50 and ResNet-101 pretrained on ImageNet-21k (BiT-M,
Kolesnikov et al. 2020: `bit_resnet50`, `bit_resnet101` with BiT-M's files) and a DenseNet
pretrained on ImageNet-1k (`densenet121` with torchvision's file). Not stackable: the weights
are loaded into the one model `setup` is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import torch
from pydantic import Field, field_validator

from raystudy.models.imagenet_nets import load_imagenet_weights
from raystudy.models.objectives.base import ObjectiveParams
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.objectives.supervised import Supervised
from raystudy.models.vae import VAE


class SupervisedPretrainedParams(ObjectiveParams):
    weights: str | None = Field(
        None,
        description="absolute path of the weights the encoder starts from: a torchvision "
        "ImageNet state dict (resnet50, resnet101, densenet121) or BiT's .npz (bit_resnet50, "
        "bit_resnet101); null: from scratch",
    )

    @field_validator("weights")
    @classmethod
    def _file_exists(cls, v: str | None) -> str | None:
        if v is None:
            return v
        # Each trial runs in a working folder of its own: a relative path would mean another
        # file in each.
        if not (v.startswith("~") or Path(v).is_absolute()):
            raise ValueError(f"the weights file must be an absolute path, got {v!r}")
        path = Path(v).expanduser()
        if not path.is_file():
            raise ValueError(
                f"no weights file at {path}: give the path of an ImageNet state dict saved "
                "with torch.save, or of BiT's .npz for bit_resnet50/101 (nothing is "
                "downloaded at run time)"
            )
        return v


@OBJECTIVES.register("supervised_pretrained")
class SupervisedPretrained(Supervised):
    Params = SupervisedPretrainedParams
    stackable: ClassVar[bool] = False
    unstackable_because: ClassVar[str] = "its weights file is loaded into one model before training"
    weights: str | None

    def setup(self, model: VAE, device: torch.device) -> None:
        if self.weights is not None:
            load_imagenet_weights(model.encoder, self.weights)
