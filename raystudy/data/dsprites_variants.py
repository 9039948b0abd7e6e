"""Locatello et al. (2019)'s dSprites variants: colour-dSprites, noisy-dSprites, scream-dSprites.

"Challenging Common Assumptions in the Unsupervised Learning of Disentangled
Representations" (ICML 2019) trains on dSprites and three variants of it whose factors are
dSprites' own but whose images carry a nuisance drawn per image. Definitions as in
disentanglement_lib's ``data/ground_truth/dsprites.py`` (``ColorDSprites``, ``NoisyDSprites``,
``ScreamDSprites``), with ``m`` the sprite mask, ``u ~ U[0, 1)`` and images in [0, 1]:

- colour-dSprites (``random_color_dsprites``): ``x = m * c``, one colour ``c`` per image,
  each channel uniform in [0.5, 1) (``c = 0.5 + 0.5 u``), on black. Not a factor. (raystudy's
  ``color_dsprites`` is Dittadi et al.'s: 12 hues, hue *is* a factor.)
- noisy-dSprites (``noisy_dsprites``): ``x = min(m + n, 1)``, ``n`` uniform per pixel and
  channel: a white sprite on uniform noise.
- scream-dSprites (``scream_dsprites``): a photograph fitted inside 350 x 274 pixels keeping
  its aspect (disentanglement_lib's ``thumbnail((350, 274))``); per image a patch at a
  uniform offset, top in ``0..h - 65`` and left in ``0..w - 65`` (its ``randint(0, h - 64)``),
  and a colour shift ``s`` (each channel uniform): ``b = (patch + s) / 2``; the sprite's pixels
  are inverted, ``x = 1 - b`` where ``m = 1``, ``x = b`` elsewhere.

Each comes procedural (:class:`raystudy.data.dsprites.DSprites`' renderer and options; 3
channels, domains ``sim`` and ``real``) and from the official dSprites file (``*_file``, as
``dsprites_file``, whose 0/1 images make ``m`` exactly disentanglement_lib's mask). What
differs from disentanglement_lib, and why:

- the procedural sprite is anti-aliased, coverage ``m`` in [0, 1]; the formulas above are
  applied to it as written (scream: ``x = b + m (1 - 2 b)``), equal to disentanglement_lib's
  where ``m`` is 0 or 1;
- the nuisance is ``fixed`` per factor combination by default, not drawn anew at every
  sample; ``nuisance: fresh`` draws it anew (:mod:`raystudy.data.nuisance` says what each
  mode keeps);
- The Scream is not shipped with raystudy (nor with disentanglement_lib, which reads
  ``scream/scream.jpg`` from its data folder): by default the photograph is scikit-learn's
  bundled ``china.jpg`` (a Chinese temple; 640 x 427, fitted to 350 x 234), so the background
  is of another photograph than the paper's. Give The Scream as ``photograph: /path/scream.jpg``
  for the paper's image. At a resolution ``R`` other than 64 the fitting box is scaled by
  ``R / 64``, so a patch covers the same part of the photograph.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from raystudy.data.dsprites import DSprites
from raystudy.data.dsprites_file import DSpritesFile
from raystudy.data.file_arrays import DatasetFileError, require_file
from raystudy.data.nuisance import check_nuisance, nuisance_uniforms
from raystudy.data.procedural import grid_position
from raystudy.data.registry import register_dataset

#: disentanglement_lib's thumbnail box for The Scream at 64 px: (width, height).
PHOTOGRAPH_BOX = (350, 274)
PHOTOGRAPH_EXPECTED = "a colour photograph PIL can read (JPEG, PNG, ...), e.g. scream.jpg"


# --- pure functions of the images ----------------------------------------------------------


def random_colour_sprite(mask: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """colour-dSprites: ``x = m * (0.5 + 0.5 u)`` for a mask ``[B, 1, H, W]`` and ``[B, 3]``
    uniforms (disentanglement_lib's ``ColorDSprites``: ``uniform(0.5, 1)`` per channel)."""
    colour = uniforms.mul(0.5).add_(0.5)
    return mask * colour.view(-1, 3, 1, 1)


def noisy_sprite(mask: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """noisy-dSprites: ``x = min(m + n, 1)`` for a mask ``[B, 1, H, W]`` and noise
    ``[B, 3, H, W]`` (disentanglement_lib's ``NoisyDSprites``)."""
    return (mask + noise).clamp_(max=1.0)


def scream_sprite(mask: torch.Tensor, patch: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """scream-dSprites: ``b = (patch + s) / 2``, ``x = b + m (1 - 2 b)`` for a mask
    ``[B, 1, H, W]``, a patch ``[B, 3, H, W]`` and a shift ``[B, 3]``: the background inverted
    where ``m = 1`` (disentanglement_lib's ``ScreamDSprites``)."""
    background = (patch + shift.view(-1, 3, 1, 1)).mul_(0.5)
    return background + mask * (1.0 - 2.0 * background)


def photograph_patches(photo: torch.Tensor, uniforms: torch.Tensor, size: int) -> torch.Tensor:
    """``[B, 3, size, size]`` patches in [0, 1] of a ``[3, h, w]`` uint8 photograph, the top
    left corner of each at ``(floor(u0 (h - size)), floor(u1 (w - size)))`` for ``[B, 2]``
    uniforms in [0, 1): uniform over ``0..h - size - 1`` as ``randint(0, h - size)``."""
    _, h, w = photo.shape
    top = (uniforms[:, 0] * (h - size)).long().clamp_(max=h - size - 1)
    left = (uniforms[:, 1] * (w - size)).long().clamp_(max=w - size - 1)
    offsets = torch.arange(size, device=photo.device)
    rows = (top.unsqueeze(1) + offsets).view(-1, size, 1)
    cols = (left.unsqueeze(1) + offsets).view(-1, 1, size)
    return photo[:, rows, cols].permute(1, 0, 2, 3).float().div_(255.0)


def fit_photograph(photo: np.ndarray, resolution: int) -> np.ndarray:
    """The uint8 ``[h, w, 3]`` photograph scaled, aspect kept, to fit inside
    ``PHOTOGRAPH_BOX * resolution / 64`` (disentanglement_lib's ``thumbnail((350, 274))`` at
    64 px; bicubic, PIL's thumbnail filter; enlarged when smaller, unlike a thumbnail)."""
    from PIL import Image

    height, width = photo.shape[:2]
    scale = min(
        PHOTOGRAPH_BOX[0] * resolution / 64 / width, PHOTOGRAPH_BOX[1] * resolution / 64 / height
    )
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    resized = Image.fromarray(photo).resize(size, Image.Resampling.BICUBIC)
    return np.asarray(resized, dtype=np.uint8)


def bundled_photograph() -> Path:
    """scikit-learn's ``china.jpg``, the file ``sklearn.datasets.load_sample_image`` reads,
    found without importing scikit-learn (its datasets module takes seconds to import, and
    ``raystudy datasets`` builds every procedural dataset)."""
    spec = importlib.util.find_spec("sklearn")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / "datasets" / "images" / "china.jpg"
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"scikit-learn's sample image china.jpg not found (in {folders}); give the "
        f"option photograph: {PHOTOGRAPH_EXPECTED}"
    )


def load_photograph(path: str | os.PathLike[str] | None) -> np.ndarray:
    """A uint8 ``[h, w, 3]`` RGB photograph: the file ``path``, or scikit-learn's bundled
    ``china.jpg`` when None (The Scream is not bundled anywhere raystudy can read it)."""
    from PIL import Image, UnidentifiedImageError

    p = bundled_photograph() if path is None else require_file(path, PHOTOGRAPH_EXPECTED)
    try:
        with Image.open(p) as image:
            return np.asarray(image.convert("RGB"), dtype=np.uint8)
    except (UnidentifiedImageError, OSError) as exc:
        raise DatasetFileError(
            f"{str(p)!r} is not a readable image ({exc}); expected {PHOTOGRAPH_EXPECTED}"
        ) from None


# --- what each variant draws over the sprite ----------------------------------------------


class Appearance(Protocol):
    def compose(self, mask: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """The 3-channel images of sprite masks ``[B, 1, H, W]`` at grid positions ``[B]``."""
        ...


@dataclass(frozen=True)
class RandomColour:
    nuisance: str
    seed: int

    def compose(self, mask: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        return random_colour_sprite(mask, nuisance_uniforms(position, 3, self.nuisance, self.seed))


@dataclass(frozen=True)
class UniformNoise:
    nuisance: str
    seed: int

    def compose(self, mask: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        shape = (mask.shape[0], 3, mask.shape[2], mask.shape[3])
        noise = nuisance_uniforms(
            position, shape[1] * shape[2] * shape[3], self.nuisance, self.seed
        )
        return noisy_sprite(mask, noise.view(shape))


@dataclass
class PhotographPatch:
    photo: np.ndarray  # uint8 [h, w, 3], already fitted to the resolution
    nuisance: str
    seed: int
    _on_device: dict[torch.device, torch.Tensor] = field(default_factory=dict, repr=False)

    def compose(self, mask: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        photo = self._on_device.get(mask.device)
        if photo is None:
            # Kept as uint8 on the device: a quarter of the memory of floats.
            photo = torch.from_numpy(np.ascontiguousarray(self.photo.transpose(2, 0, 1)))
            photo = self._on_device.setdefault(mask.device, photo.to(mask.device))
        u = nuisance_uniforms(position, 5, self.nuisance, self.seed)
        return scream_sprite(mask, photograph_patches(photo, u[:, :2], mask.shape[-1]), u[:, 2:])


def fitted_photograph(path: str | os.PathLike[str] | None, resolution: int) -> np.ndarray:
    """:func:`load_photograph` then :func:`fit_photograph`; an error naming the file when it
    is too small for a patch of ``resolution`` pixels."""
    photo = fit_photograph(load_photograph(path), resolution)
    if min(photo.shape[:2]) <= resolution:
        source = "china.jpg" if path is None else repr(str(path))
        raise DatasetFileError(
            f"photograph {source} fitted into {PHOTOGRAPH_BOX[0] * resolution // 64} x "
            f"{PHOTOGRAPH_BOX[1] * resolution // 64} pixels is {photo.shape[1]} x "
            f"{photo.shape[0]}, too small for {resolution} x {resolution} patches; expected "
            f"{PHOTOGRAPH_EXPECTED} whose shorter side fills the box"
        )
    return photo


# --- the registered datasets ----------------------------------------------------------------


class _ProceduralVariant(DSprites):
    """The procedural dSprites sprite as the mask of an :class:`Appearance`."""

    channels = 3

    def __init__(
        self,
        resolution: int = 64,
        orientation_bins: int | None = None,
        real_seed: int = 0,
        orientation_grid: str = "open",
        nuisance: str = "fixed",
        nuisance_seed: int = 0,
    ) -> None:
        super().__init__(resolution, orientation_bins, real_seed, orientation_grid)
        self.nuisance, self.nuisance_seed = check_nuisance(nuisance, nuisance_seed)
        self.appearance = self._appearance()

    def _appearance(self) -> Appearance:
        raise NotImplementedError

    def _render_sim(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mask, foreground = super()._render_sim(idx)
        return self.appearance.compose(mask, grid_position(idx, self.factors.sizes)), foreground


@register_dataset("random_color_dsprites")
class RandomColorDSprites(_ProceduralVariant):
    """dSprites in a random colour per image, not a factor (Locatello et al.'s colour-dSprites).

    Options: those of ``dsprites``, ``nuisance`` (``fixed`` or ``fresh``), ``nuisance_seed``.
    """

    name = "random_color_dsprites"

    def _appearance(self) -> Appearance:
        return RandomColour(self.nuisance, self.nuisance_seed)


@register_dataset("noisy_dsprites")
class NoisyDSprites(_ProceduralVariant):
    """dSprites: a white sprite on uniform noise (Locatello et al.'s noisy-dSprites).

    Options: those of ``dsprites``, ``nuisance`` (``fixed`` or ``fresh``), ``nuisance_seed``.
    """

    name = "noisy_dsprites"

    def _appearance(self) -> Appearance:
        return UniformNoise(self.nuisance, self.nuisance_seed)


@register_dataset("scream_dsprites")
class ScreamDSprites(_ProceduralVariant):
    """dSprites inverting a photograph's patch (Locatello et al.'s scream-dSprites; china.jpg).

    Options: those of ``dsprites``, ``photograph`` (default scikit-learn's ``china.jpg``; The
    Scream for the paper's image), ``nuisance`` (``fixed`` or ``fresh``), ``nuisance_seed``.
    """

    name = "scream_dsprites"

    def __init__(
        self,
        resolution: int = 64,
        orientation_bins: int | None = None,
        real_seed: int = 0,
        orientation_grid: str = "open",
        nuisance: str = "fixed",
        nuisance_seed: int = 0,
        photograph: str | os.PathLike[str] | None = None,
    ) -> None:
        self.photograph = photograph
        super().__init__(
            resolution, orientation_bins, real_seed, orientation_grid, nuisance, nuisance_seed
        )

    def _appearance(self) -> Appearance:
        photo = fitted_photograph(self.photograph, self.resolution)
        return PhotographPatch(photo, self.nuisance, self.nuisance_seed)


class _FileVariant(DSpritesFile):
    """The official dSprites file's 0/1 image as the mask of an :class:`Appearance`."""

    channels = 3

    def __init__(
        self,
        path: str | os.PathLike[str],
        cache_dir: str | os.PathLike[str] | None = None,
        nuisance: str = "fixed",
        nuisance_seed: int = 0,
    ) -> None:
        super().__init__(path, cache_dir)
        self.channels = 3  # the file's mask has one; the appearance makes three
        self.nuisance, self.nuisance_seed = check_nuisance(nuisance, nuisance_seed)
        self.appearance = self._appearance()

    def _appearance(self) -> Appearance:
        raise NotImplementedError

    def render(self, indices: torch.Tensor | np.ndarray, domain: str = "sim") -> torch.Tensor:
        mask = super().render(indices, domain)
        idx = self.as_index_tensor(indices).to(mask.device)
        return self.appearance.compose(mask, grid_position(idx, self.factors.sizes))


@register_dataset("random_color_dsprites_file")
class RandomColorDSpritesFile(_FileVariant):
    """colour-dSprites from the official ``.npz``; options ``path`` (required), ``cache_dir``,
    ``nuisance``, ``nuisance_seed``."""

    name = "random_color_dsprites_file"

    def _appearance(self) -> Appearance:
        return RandomColour(self.nuisance, self.nuisance_seed)


@register_dataset("noisy_dsprites_file")
class NoisyDSpritesFile(_FileVariant):
    """noisy-dSprites from the official ``.npz``; options ``path`` (required), ``cache_dir``,
    ``nuisance``, ``nuisance_seed``."""

    name = "noisy_dsprites_file"

    def _appearance(self) -> Appearance:
        return UniformNoise(self.nuisance, self.nuisance_seed)


@register_dataset("scream_dsprites_file")
class ScreamDSpritesFile(_FileVariant):
    """scream-dSprites from the official ``.npz``; options ``path`` (required), ``cache_dir``,
    ``photograph`` (default china.jpg), ``nuisance``, ``nuisance_seed``."""

    name = "scream_dsprites_file"

    def __init__(
        self,
        path: str | os.PathLike[str],
        cache_dir: str | os.PathLike[str] | None = None,
        nuisance: str = "fixed",
        nuisance_seed: int = 0,
        photograph: str | os.PathLike[str] | None = None,
    ) -> None:
        self.photograph = photograph
        super().__init__(path, cache_dir, nuisance, nuisance_seed)

    def _appearance(self) -> Appearance:
        photo = fitted_photograph(self.photograph, self.resolution)
        return PhotographPatch(photo, self.nuisance, self.nuisance_seed)
