"""Locatello et al. (2019)'s dSprites variants from the official dSprites file:
``random_color_dsprites_file``, ``noisy_dsprites_file``, ``scream_dsprites_file``. The file's
0/1 image is the mask of what each variant draws over it
(:mod:`raystudy.data.domains.sprite_appearances`, which says what they are)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from raystudy.data.core.factors import grid_position
from raystudy.data.core.registry import register_dataset
from raystudy.data.domains.nuisance import check_nuisance
from raystudy.data.domains.sprite_appearances import sprite_appearance
from raystudy.data.sources.files.dsprites_file import DSpritesFile


class _FileVariant(DSpritesFile):
    """The official dSprites file's 0/1 image as the mask of the variant ``kind``'s
    appearance."""

    channels = 3
    kind: str
    photograph: str | os.PathLike[str] | None = None

    def __init__(self, nuisance: str = "fixed", nuisance_seed: int = 0, **options: Any) -> None:
        super().__init__(**options)  # the options of ``dsprites_file``
        self.channels = 3  # the file's mask has one; the appearance makes three
        self.nuisance, self.nuisance_seed = check_nuisance(nuisance, nuisance_seed)
        self.appearance = sprite_appearance(
            self.kind, self.nuisance, self.nuisance_seed, self.photograph, self.resolution
        )

    def render(self, indices: torch.Tensor | np.ndarray, domain: str = "sim") -> torch.Tensor:
        mask = super().render(indices, domain)
        idx = self.as_index_tensor(indices).to(mask.device)
        return self.appearance.compose(mask, grid_position(idx, self.factors.sizes))


@register_dataset("random_color_dsprites_file")
class RandomColorDSpritesFile(_FileVariant):
    """colour-dSprites from the official ``.npz``; options ``path`` (required), ``cache_dir``,
    ``nuisance``, ``nuisance_seed``."""

    name = "random_color_dsprites_file"
    kind = "random_color"


@register_dataset("noisy_dsprites_file")
class NoisyDSpritesFile(_FileVariant):
    """noisy-dSprites from the official ``.npz``; options ``path`` (required), ``cache_dir``,
    ``nuisance``, ``nuisance_seed``."""

    name = "noisy_dsprites_file"
    kind = "noisy"


@register_dataset("scream_dsprites_file")
class ScreamDSpritesFile(_FileVariant):
    """scream-dSprites from the official ``.npz``; options ``path`` (required), ``cache_dir``,
    ``photograph`` (default china.jpg), ``nuisance``, ``nuisance_seed``."""

    name = "scream_dsprites_file"
    kind = "scream"

    def __init__(self, photograph: str | os.PathLike[str] | None = None, **options: Any) -> None:
        self.photograph = photograph
        super().__init__(**options)
