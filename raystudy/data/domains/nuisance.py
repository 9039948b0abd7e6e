"""Per-image nuisance draws: what an image shows beyond its factors.

Some of Locatello et al. (2019, "Challenging Common Assumptions in the Unsupervised Learning
of Disentangled Representations")'s datasets draw part of each image at random, independently
of the factors: noisy-dSprites' background noise, scream-dSprites' photograph patch and colour
shift, colour-dSprites' sprite colour, SmallNORB's object instance. disentanglement_lib draws
them anew every time an image is sampled. A dataset here takes them as uniforms in [0, 1) from
:func:`nuisance_uniforms`, in one of two modes (the dataset option ``nuisance``):

- ``fixed`` (default): each uniform is a hash of the image's row-major grid position, its
  column and ``nuisance_seed``, ``u = (mix32(mix32(p xor s) xor c_k) >> 8) / 2^24`` with
  ``s = mix32(seed)`` and ``c_k = (k + 1) * 0x9E3779B9 mod 2^32`` (the golden-ratio salt of
  :func:`raystudy.data.domains.camera.uniforms`). The same indices always give the same image, as
  for every other dataset: every model of a study is scored on the same images, and a stacked
  model sees the images its lone trial would. The nuisance stays independent of the factors,
  but each factor combination keeps one draw.
- ``fresh``: uniforms from torch's generator on the indices' device, new at every render, as
  disentanglement_lib samples them. The trial's seed fixes them (``torch.manual_seed``) and a
  checkpoint restores the generator, but the images a model is scored on then differ from
  model to model, and a stacked model's from its lone trial's.

The top 24 bits of a 32-bit hash make a float32 exactly, so a ``fixed`` uniform is a multiple
of 2^-24 in [0, 1 - 2^-24].
"""

from __future__ import annotations

import torch

from raystudy.data.core.registry import DatasetOptionError
from raystudy.data.domains.camera import mix32

#: The values of the ``nuisance`` option (see the module docstring).
NUISANCE_MODES = ("fixed", "fresh")
_GOLDEN32 = 0x9E3779B9
_MASK32 = 0xFFFFFFFF


def check_nuisance(mode: str, seed: int) -> tuple[str, int]:
    """The options ``nuisance`` and ``nuisance_seed``, refused unless a mode of
    :data:`NUISANCE_MODES` and a seed in 0..2**32-1."""
    if mode not in NUISANCE_MODES:
        raise DatasetOptionError(
            f"nuisance must be one of {', '.join(NUISANCE_MODES)} (fixed: one draw per factor "
            f"combination; fresh: a new draw at every render), got {mode!r}",
            "nuisance",
        )
    if not 0 <= seed <= _MASK32:
        raise DatasetOptionError(
            f"nuisance_seed must be in 0..{_MASK32}, got {seed}", "nuisance_seed"
        )
    return mode, seed


def nuisance_uniforms(position: torch.Tensor, count: int, mode: str, seed: int) -> torch.Tensor:
    """``[B, count]`` float32 uniforms in [0, 1) on the device of ``position`` (``[B]``
    int64 row-major grid positions): a hash of position, column and seed (``fixed``), or
    torch's generator (``fresh``). Formula in the module docstring."""
    if mode == "fresh":
        return torch.rand((position.shape[0], count), device=position.device)
    salt = int(mix32(torch.tensor([seed], dtype=torch.int64))[0])
    base = mix32(position.long() ^ salt)
    columns = torch.arange(1, count + 1, dtype=torch.int64, device=position.device)
    columns = (columns * _GOLDEN32) & _MASK32
    hashed = _mix32_(base.unsqueeze(1) ^ columns.unsqueeze(0))
    return hashed.bitwise_right_shift_(8).to(torch.float32).mul_(2.0**-24)


def _mix32_(x: torch.Tensor) -> torch.Tensor:
    """:func:`raystudy.data.domains.camera.mix32` of a non-negative int64 tensor below 2^32, in
    place: a noise image hashes ``3 H W`` values per image, and temporaries of that size
    would cost more than the hash itself."""
    for _ in range(2):
        x.bitwise_xor_(x >> 16).mul_(0x45D9F3B).bitwise_and_(_MASK32)
    return x.bitwise_xor_(x >> 16)
