"""Hue to RGB at full saturation and value (the HSV hexcone model, Smith 1978,
"Color gamut transform pairs")."""

from __future__ import annotations

import torch


def hue_to_rgb(hue: torch.Tensor) -> torch.Tensor:
    """RGB in [0, 1] of hues in [0, 1) (0 = red, 1/3 = green, 2/3 = blue), shape ``[..., 3]``.

    With S = V = 1 each channel is a trapezoid in hue: it is 1 over a third of the circle,
    0 over another third, and ramps linearly over the two sixths between.
    """
    h6 = (hue % 1.0) * 6.0
    r = (h6 - 3.0).abs() - 1.0
    g = 2.0 - (h6 - 2.0).abs()
    b = 2.0 - (h6 - 4.0).abs()
    return torch.stack([r, g, b], dim=-1).clamp(0.0, 1.0)
