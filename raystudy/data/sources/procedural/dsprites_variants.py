"""Locatello et al. (2019)'s dSprites variants drawn by the ``dsprites`` renderer:
``random_color_dsprites``, ``noisy_dsprites``, ``scream_dsprites``. The anti-aliased sprite's
coverage is the mask of what each variant draws over it
(:mod:`raystudy.data.domains.sprite_appearances`, which says what they are and how they differ
from disentanglement_lib's)."""

from __future__ import annotations

import os
from typing import Any

import torch

from raystudy.data.core.factors import grid_position
from raystudy.data.core.registry import register_dataset
from raystudy.data.domains.nuisance import check_nuisance
from raystudy.data.domains.sprite_appearances import sprite_appearance
from raystudy.data.sources.procedural.dsprites import DSprites


class _ProceduralVariant(DSprites):
    """The procedural dSprites sprite as the mask of the variant ``kind``'s appearance."""

    channels = 3
    kind: str
    photograph: str | os.PathLike[str] | None = None

    def __init__(self, nuisance: str = "fixed", nuisance_seed: int = 0, **options: Any) -> None:
        super().__init__(**options)  # the options of ``dsprites``
        self.nuisance, self.nuisance_seed = check_nuisance(nuisance, nuisance_seed)
        self.appearance = sprite_appearance(
            self.kind, self.nuisance, self.nuisance_seed, self.photograph, self.resolution
        )

    def _render_sim(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mask, foreground = super()._render_sim(idx)
        return self.appearance.compose(mask, grid_position(idx, self.factors.sizes)), foreground


@register_dataset("random_color_dsprites")
class RandomColorDSprites(_ProceduralVariant):
    """dSprites in a random colour per image, not a factor (Locatello et al.'s colour-dSprites).

    Options: those of ``dsprites``, ``nuisance`` (``fixed`` or ``fresh``), ``nuisance_seed``.
    """

    name = "random_color_dsprites"
    kind = "random_color"


@register_dataset("noisy_dsprites")
class NoisyDSprites(_ProceduralVariant):
    """dSprites: a white sprite on uniform noise (Locatello et al.'s noisy-dSprites).

    Options: those of ``dsprites``, ``nuisance`` (``fixed`` or ``fresh``), ``nuisance_seed``.
    """

    name = "noisy_dsprites"
    kind = "noisy"


@register_dataset("scream_dsprites")
class ScreamDSprites(_ProceduralVariant):
    """dSprites inverting a photograph's patch (Locatello et al.'s scream-dSprites; china.jpg).

    Options: those of ``dsprites``, ``photograph`` (default scikit-learn's ``china.jpg``; The
    Scream for the paper's image), ``nuisance`` (``fixed`` or ``fresh``), ``nuisance_seed``.
    """

    name = "scream_dsprites"
    kind = "scream"

    def __init__(self, photograph: str | os.PathLike[str] | None = None, **options: Any) -> None:
        self.photograph = photograph
        super().__init__(**options)
