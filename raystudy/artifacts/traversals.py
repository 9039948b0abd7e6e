"""`traversals.png` and `traversals.gif`: one code dimension varied at a time, the others held
at one image's code (package doc)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from numpy.typing import NDArray

from raystudy.artifacts.grids import grid_figure, save_gif
from raystudy.artifacts.subject import Subject
from raystudy.scoring import encode_means

TRAVERSAL_STEPS = 7


def traversal_codes(code: NDArray[np.floating], values: NDArray[np.floating]) -> NDArray:
    """(D * S, D): `code` repeated, dimension d set to each of the S `values` in block d."""
    d, s = code.shape[0], values.shape[0]
    codes = np.tile(code, (d * s, 1))
    for dim in range(d):
        codes[dim * s : (dim + 1) * s, dim] = values
    return codes


@torch.no_grad()
def decode_images(model: torch.nn.Module, codes: NDArray, device: torch.device) -> NDArray:
    """Bernoulli means (sigmoid of the decoder's logits) of `codes`, as numpy (N, C, H, W)."""
    z = torch.as_tensor(codes, dtype=torch.float32, device=device)
    return torch.sigmoid(model.decode(z)).cpu().numpy()


def traversal_images(
    subject: Subject, idx: np.ndarray
) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
    """(D, S, C, H, W) images, code dimension d set to each of the S values, the rest at the
    code of the first image of `idx`; and the S values."""
    model, device = subject.model, subject.device
    code = encode_means(model, subject.dataset, idx[:1], device)[0]
    # A ground-truth code lives in [0, 1] (normalised factors); a VAE code under its prior.
    low, high = (0.0, 1.0) if model.code_is_ground_truth else (-2.0, 2.0)
    values = np.linspace(low, high, TRAVERSAL_STEPS)
    images = decode_images(model, traversal_codes(code, values), device)
    return images.reshape(code.shape[0], values.size, *images.shape[1:]), values


def draw_traversals(folder: Path, subject: Subject, idx: np.ndarray) -> Path:
    """One row per code dimension, traversed from the code of the first image of `idx`."""
    grid, values = traversal_images(subject, idx)
    path = folder / "traversals.png"
    grid_figure(
        grid,
        [f"z{j}" for j in range(grid.shape[0])],
        [f"{v:+.2f}" for v in values],
        "latent traversals: row j sets z_j to each value, the rest at one image's code",
        xlabel="value of z_j",
    ).savefig(path, dpi=110)
    return path


def draw_traversal_gif(folder: Path, subject: Subject, idx: np.ndarray) -> Path:
    """`traversals.png` as an animation: frame s shows every code dimension at once, each
    cell with its own dimension set to the s-th value (disentanglement_lib's
    `visualize_model` animations), so a disentangled code moves one factor per cell."""
    grid, values = traversal_images(subject, idx)
    path = folder / "traversals.gif"
    save_gif(np.moveaxis(grid, 1, 0), path, [f"cell j: z_j = {v:+.2f}" for v in values])
    return path
