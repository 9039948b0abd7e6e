"""Input noise of Dittadi et al. (ICLR 2021), Sec. 4 / App.

The encoder sees

    x + sigma_pixel * eps_pix + sigma_grey * up_coarse(eps_grey),

eps_pix ~ N(0, 1) per sub-pixel (each channel of each pixel), eps_grey ~ N(0, 1) one greyscale
field at 1/`coarse` of the resolution (coarse = 16: a 4x4 field at 64 px), bilinearly
upsampled to full size and added to every channel alike. Both components have zero mean; by
default the result is not clipped, since clipping to [0, 1] would turn the noise on black or
white pixels into a one-sided, biased perturbation (`clip=True` clips anyway). The decoder
still reconstructs the clean image: the training loop passes the noisy image as
`Batch.inputs` and the clean one as `Batch.targets`. The paper reports that this noise makes
representations transfer better to real images. The magnitudes are raystudy's defaults (the
paper's exact values are not reproduced here) and are arguments, for a config to set.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

SIGMA_PIXEL = 0.05
SIGMA_GREY = 0.1
COARSE = 16


def add_input_noise(
    x: torch.Tensor,
    sigma_pixel: float = SIGMA_PIXEL,
    sigma_grey: float = SIGMA_GREY,
    coarse: int = COARSE,
    generator: torch.Generator | None = None,
    clip: bool = False,
) -> torch.Tensor:
    """A noisy copy of images x [B, C, H, W] (see the module doc); x is left unchanged."""
    b, _, h, w = x.shape
    pix = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)
    grey = torch.randn(
        (b, 1, max(1, h // coarse), max(1, w // coarse)),
        generator=generator,
        device=x.device,
        dtype=x.dtype,
    )
    grey = F.interpolate(grey, size=(h, w), mode="bilinear", align_corners=False)
    # In place on the fresh draws: the same sums, bit for bit, as x + s*pix + g*grey without
    # its three image-sized temporaries (the noise is the training loop's largest data cost).
    noisy = pix.mul_(sigma_pixel).add_(x).add_(grey.mul_(sigma_grey))
    return noisy.clamp_(0.0, 1.0) if clip else noisy
