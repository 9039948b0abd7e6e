"""What Locatello et al. (2019)'s dSprites variants draw over the sprite: colour-dSprites,
noisy-dSprites, scream-dSprites.

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

Each comes procedural (:mod:`raystudy.data.sources.procedural.dsprites_variants`: the
``dsprites`` renderer and options; 3 channels, domains ``sim``, ``real`` and ``photo``) and from
the official dSprites file (:mod:`raystudy.data.sources.files.dsprites_variants_file`: ``*_file``,
as ``dsprites_file``, whose 0/1 images make ``m`` exactly disentanglement_lib's mask); this
module is what both draw over the sprite. What
differs from disentanglement_lib, and why:

- the procedural sprite is anti-aliased, coverage ``m`` in [0, 1]; the formulas above are
  applied to it as written (scream: ``x = b + m (1 - 2 b)``), equal to disentanglement_lib's
  where ``m`` is 0 or 1;
- the nuisance is ``fixed`` per factor combination by default, not drawn anew at every
  sample; ``nuisance: fresh`` draws it anew (:mod:`raystudy.data.domains.nuisance` says what each
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

from raystudy.data.core.files import DatasetFileError, require_file
from raystudy.data.domains.nuisance import nuisance_uniforms

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


#: The variants, by the kind their datasets name: what each draws over the sprite.
KINDS = ("random_color", "noisy", "scream")


def sprite_appearance(
    kind: str,
    nuisance: str,
    seed: int,
    photograph: str | os.PathLike[str] | None = None,
    resolution: int = 64,
) -> Appearance:
    """The :class:`Appearance` of variant ``kind`` (:data:`KINDS`); ``photograph`` and
    ``resolution`` choose and fit scream-dSprites' photograph."""
    if kind == "random_color":
        return RandomColour(nuisance, seed)
    if kind == "noisy":
        return UniformNoise(nuisance, seed)
    if kind == "scream":
        return PhotographPatch(fitted_photograph(photograph, resolution), nuisance, seed)
    raise ValueError(f"unknown dSprites variant {kind!r}; allowed: {', '.join(KINDS)}")
