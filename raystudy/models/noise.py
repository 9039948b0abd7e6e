"""Input noise of Dittadi et al. (ICLR 2021), Sec. 4 / App. A.

The encoder sees x + sigma_pix * eps_pix + sigma_grey * up(eps_grey), where eps_pix is Gaussian
per sub-pixel and eps_grey is one Gaussian greyscale field at 1/`coarse` of the resolution,
bilinearly upsampled and shared by all channels; the result is clipped to [0, 1]. The decoder
still reconstructs the clean image. The paper reports that this noise makes representations
transfer better to real images; the magnitudes here are raystudy's defaults (the paper's exact
values were lost from the seed text) and are configurable.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F


def add_input_noise(
    x: torch.Tensor,
    sigma_pixel: float = 0.05,
    sigma_grey: float = 0.1,
    coarse: int = 8,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    b, _, h, w = x.shape
    pix = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)
    grey = torch.randn(
        (b, 1, max(1, h // coarse), max(1, w // coarse)),
        generator=generator,
        device=x.device,
        dtype=x.dtype,
    )
    grey = F.interpolate(grey, size=(h, w), mode="bilinear", align_corners=False)
    return (x + sigma_pixel * pix + sigma_grey * grey).clamp_(0.0, 1.0)
