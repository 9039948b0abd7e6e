"""Baseline JPEG compression and decompression in torch, on any device (ITU-T T.81; Wallace
1992, "The JPEG still picture compression standard").

``jpeg_roundtrip(x, quality)`` returns what a JFIF encoder followed by a decoder would give,
without the entropy coding (which is lossless):

1. 8-bit levels ``v = round(255 x)``; for colour, JFIF's full-range BT.601 transform
   ``Y = 0.299 R + 0.587 G + 0.114 B``, ``Cb = 128 - 0.168736 R - 0.331264 G + 0.5 B``,
   ``Cr = 128 + 0.5 R - 0.418688 G - 0.081312 B``, each rounded to an integer;
2. 4:2:0 chroma subsampling: the mean of each 2x2 block of Cb and Cr;
3. level shift by -128, and per 8x8 block the orthonormal 2-D DCT-II
   ``F(u, v) = C(u) C(v) / 4 sum_xy f(x, y) cos((2x + 1) u pi / 16) cos((2y + 1) v pi / 16)``
   (``C(0) = 1 / sqrt 2``, else 1), i.e. ``F = K f`` with ``K`` the Kronecker square of the
   8-point DCT matrix;
4. quantisation ``F_q = Q round(F / Q)`` with T.81 Annex K's luminance (K.1) and chrominance
   (K.2) tables scaled as the IJG library does for a quality ``q``: ``s = 5000 / q`` below 50,
   else ``200 - 2 q``, ``Q = clip(floor((Q_K s + 50) / 100), 1, 255)``;
5. the inverse DCT, chroma upsampled by the triangle filter of the IJG decoder's "fancy"
   upsampling (weights 3/4, 1/4 per axis: bilinear at half-pixel centres), back to RGB and
   to 8-bit levels ``clip(round(.), 0, 255) / 255``.

Planes are padded to whole blocks (16 px for colour) by repeating the last row and column, as
encoders do. A one-channel image is coded as greyscale (luminance table only).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

#: ITU-T T.81 Annex K, Table K.1 (luminance) in natural (row-major) order.
LUMINANCE_TABLE = (
    (16, 11, 10, 16, 24, 40, 51, 61),
    (12, 12, 14, 19, 26, 58, 60, 55),
    (14, 13, 16, 24, 40, 57, 69, 56),
    (14, 17, 22, 29, 51, 87, 80, 62),
    (18, 22, 37, 56, 68, 109, 103, 77),
    (24, 35, 55, 64, 81, 104, 113, 92),
    (49, 64, 78, 87, 103, 121, 120, 101),
    (72, 92, 95, 98, 112, 100, 103, 99),
)
#: ITU-T T.81 Annex K, Table K.2 (chrominance).
CHROMINANCE_TABLE = (
    (17, 18, 24, 47, 99, 99, 99, 99),
    (18, 21, 26, 66, 99, 99, 99, 99),
    (24, 26, 56, 99, 99, 99, 99, 99),
    (47, 66, 99, 99, 99, 99, 99, 99),
    *((99,) * 8 for _ in range(4)),
)

_TO_YCC = ((0.299, 0.587, 0.114), (-0.168736, -0.331264, 0.5), (0.5, -0.418688, -0.081312))
_TO_RGB = ((1.0, 0.0, 1.402), (1.0, -0.344136, -0.714136), (1.0, 1.772, 0.0))


def quality_table(base: tuple[tuple[int, ...], ...], quality: int) -> torch.Tensor:
    """The IJG scaling of a T.81 table to ``quality`` in 1..100 (baseline: entries in
    1..255), as 64 floats in natural order."""
    if not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality must be in 1..100, got {quality}")
    scale = 5000 // quality if quality < 50 else 200 - 2 * quality
    flat = [min(max((q * scale + 50) // 100, 1), 255) for row in base for q in row]
    return torch.tensor(flat, dtype=torch.float32)


def dct_matrix() -> torch.Tensor:
    """``K`` ``[64, 64]``: the orthonormal 8x8 2-D DCT-II on row-major blocks, ``F = K f``."""
    n = torch.arange(8, dtype=torch.float64)
    d = torch.cos((2 * n[None, :] + 1) * n[:, None] * math.pi / 16) * 0.5
    d[0] /= math.sqrt(2.0)
    return torch.kron(d, d).float()


class JpegCodec:
    """Tables for :func:`jpeg_roundtrip` on one device, for qualities ``lowest..highest``."""

    def __init__(self, lowest: int, highest: int, device: torch.device | str = "cpu") -> None:
        self.lowest = lowest
        qualities = range(lowest, highest + 1)
        self.luminance = torch.stack([quality_table(LUMINANCE_TABLE, q) for q in qualities])
        self.chrominance = torch.stack([quality_table(CHROMINANCE_TABLE, q) for q in qualities])
        self.luminance, self.chrominance = self.luminance.to(device), self.chrominance.to(device)
        self.dct = dct_matrix().to(device)
        self.to_ycc = torch.tensor(_TO_YCC, device=device)
        self.to_rgb = torch.tensor(_TO_RGB, device=device)

    def roundtrip(self, x: torch.Tensor, quality: torch.Tensor) -> torch.Tensor:
        """``x`` ``[B, C, H, W]`` in [0, 1] (C is 1 or 3), ``quality`` ``[B]`` integers in the
        codec's range: the decoded images, new memory."""
        c, h, w = x.shape[1:]
        q = quality.long() - self.lowest  # no range check here: it would sync a GPU
        levels = x.mul(255.0).round_()
        if c == 1:
            y = self._code(_pad_to(levels - 128.0, 8), self.luminance[q])
            return y[:, :, :h, :w].add_(128.0).round_().clamp_(0.0, 255.0).div_(255.0)
        if c != 3:
            raise ValueError(f"JPEG codes 1 or 3 channels, got {c}")
        ycc = torch.einsum("kc,bchw->bkhw", self.to_ycc, levels).round_()
        ycc = _pad_to(ycc, 16)
        y = self._code(ycc[:, :1] - 128.0, self.luminance[q])
        # The matrix leaves Cb and Cr centred on 0: their +128 and the level shift cancel.
        chroma = self._code(F.avg_pool2d(ycc[:, 1:], 2), self.chrominance[q])
        chroma = F.interpolate(chroma, scale_factor=2, mode="bilinear", align_corners=False)
        ycc = torch.cat([y.add_(128.0), chroma], dim=1)[:, :, :h, :w]
        rgb = torch.einsum("ck,bkhw->bchw", self.to_rgb, ycc)
        return rgb.round_().clamp_(0.0, 255.0).div_(255.0)

    def _code(self, plane: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """Blockwise DCT, quantisation by ``table`` ``[B, 64]`` and inverse DCT of level-shifted
        planes ``[B, P, H, W]`` (H, W multiples of 8)."""
        b, p, h, w = plane.shape
        blocks = plane.reshape(b, p, h // 8, 8, w // 8, 8).permute(0, 1, 2, 4, 3, 5)
        blocks = blocks.reshape(b, -1, 64)
        coef = blocks @ self.dct.T
        steps = table[:, None, :]
        coef = coef.div_(steps).round_().mul_(steps)
        rec = (coef @ self.dct).reshape(b, p, h // 8, w // 8, 8, 8).permute(0, 1, 2, 4, 3, 5)
        return rec.reshape(b, p, h, w)


def jpeg_roundtrip(x: torch.Tensor, quality: int | torch.Tensor) -> torch.Tensor:
    """One-off :meth:`JpegCodec.roundtrip` at one quality (or one per image)."""
    q = torch.as_tensor(quality, device=x.device).long().expand(x.shape[0])
    lo, hi = int(q.min()), int(q.max())
    return JpegCodec(lo, hi, x.device).roundtrip(x, q)


def _pad_to(x: torch.Tensor, multiple: int) -> torch.Tensor:
    """Repeat the last row and column until both sides are multiples of ``multiple``."""
    h, w = x.shape[-2:]
    ph, pw = -h % multiple, -w % multiple
    return F.pad(x, (0, pw, 0, ph), mode="replicate") if ph or pw else x
