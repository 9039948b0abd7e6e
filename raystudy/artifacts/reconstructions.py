"""`reconstructions.png` (inputs of the encoder's training distribution over their
reconstructions) and `heldout_reconstructions*.png` (inputs the encoder never trained on,
their reconstructions and the nearest combination it did train on; package doc)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from numpy.typing import NDArray

from raystudy.artifacts.grids import grid_figure
from raystudy.artifacts.subject import Subject
from raystudy.data import GroundTruthDataset
from raystudy.data.splits.heldout import (
    TRAIN_DOMAIN,
    HeldoutSet,
    differences,
    draw_unseen,
    heldout_sets,
    nearest_seen,
)
from raystudy.models import VAE
from raystudy.models.vae import reconstruction_logits
from raystudy.scoring import encode_means

HELDOUT_IMAGES = 8
#: Encoder-set draws the nearest seen combination may come from (see `nearest_seen`).
NEAREST_POOL = 2048


@torch.no_grad()
def reconstruct(
    model: VAE, dataset: GroundTruthDataset, idx: np.ndarray, device: torch.device, domain: str
) -> tuple[NDArray, NDArray]:
    """The images of `idx` rendered in `domain` and the decoder means of the code scoring
    uses (the posterior means, or gt_decoder's true factors), as numpy (N, C, H, W)."""
    x = dataset.render(torch.from_numpy(idx).to(device), domain=domain)
    code = torch.from_numpy(encode_means(model, dataset, idx, device, domain)).to(x)
    recon = torch.sigmoid(reconstruction_logits(model, code, x))
    return x.cpu().numpy(), recon.cpu().numpy()


def reconstruction_strip(subject: Subject, idx: np.ndarray) -> NDArray:
    """(2, N, C, H, W): the images of `idx` (in `sim`) over their reconstructions."""
    x, recon = reconstruct(subject.model, subject.dataset, idx, subject.device, "sim")
    return np.stack([x, recon])


def draw_reconstructions(folder: Path, strip: NDArray) -> Path:
    """`reconstructions.png` of a `reconstruction_strip`."""
    path = folder / "reconstructions.png"
    grid_figure(
        strip,
        ["input", "reconstruction"],
        [""] * strip.shape[1],
        "inputs of the encoder's training set and their reconstructions "
        "(decoder mean of the posterior mean)",
    ).savefig(path, dpi=110)
    return path


def heldout_file(held: HeldoutSet, several: bool) -> str:
    return f"heldout_reconstructions_{held.name}.png" if several else "heldout_reconstructions.png"


def draw_heldout_reconstructions(folder: Path, subject: Subject) -> list[Path]:
    """One figure per held-out set of the split (none for a split without one): rows are the
    unseen inputs, their reconstructions and the nearest seen combination; the draws are
    fixed by the subject's seed, so every model of a study shows the same inputs."""
    model, dataset, split, device = subject.model, subject.dataset, subject.split, subject.device
    sets = heldout_sets(split)
    paths = []
    for i, held in enumerate(sets):
        rng = np.random.default_rng([subject.seed, 6, i])
        idx = draw_unseen(split, held, HELDOUT_IMAGES, rng)
        pool = split.sample("encoder", NEAREST_POOL, rng)
        seen = nearest_seen(idx, dataset.factors.sizes, lambda c: split.mask("encoder", c), pool)
        x, recon = reconstruct(model, dataset, idx, device, held.domain)
        seen_x = dataset.render(torch.from_numpy(seen).to(device)).cpu().numpy()
        labels = [differences(q, s, dataset.factors.names) for q, s in zip(idx, seen, strict=True)]
        if held.shifts_domain:
            labels = [f"{held.domain}→{TRAIN_DOMAIN}\n{label}".strip() for label in labels]
        what = f"{held.domain} domain" if held.shifts_domain else "held-out combinations"
        path = folder / heldout_file(held, len(sets) > 1)
        grid_figure(
            np.stack([x, recon, seen_x]),
            ["unseen input", "reconstruction", f"nearest seen ({TRAIN_DOMAIN})"],
            labels,
            f"{split.name} / {held.name}: {what} the encoder never trained on",
            xlabel="how the nearest seen combination differs",
        ).savefig(path, dpi=110)
        paths.append(path)
    return paths
