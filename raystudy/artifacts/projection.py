"""`latent_projection.png`: training and held-out codes on the code dimensions tied to the
factors a held-out set excludes (Montero et al. 2022, `raystudy.latent_projection`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from raystudy.artifacts.subject import Subject
from raystudy.latent_projection import projected_factors, projection_figure, tied_dimensions
from raystudy.scoring import encode_means

#: Draws of each set the latent projection plots.
PROJECTION_DRAWS = 300


def draw_latent_projection(folder: Path, subject: Subject) -> Path | None:
    """Training and held-out codes (posterior means) on the code dimensions tied to the
    factors the held-out set excludes; None for a split without a held-out set."""
    model, dataset, split, device = subject.model, subject.dataset, subject.split, subject.device
    if "heldout" not in split.roles:
        return None
    rng = np.random.default_rng([subject.seed, 7])
    train = split.sample("encoder", PROJECTION_DRAWS, rng)
    held = split.sample("heldout", PROJECTION_DRAWS, rng)
    factors = projected_factors(held, dataset.factors.sizes)
    if not factors:
        return None
    train_codes = encode_means(model, dataset, train, device)
    held_codes = encode_means(model, dataset, held, device)
    dims = tied_dimensions(train_codes, train, factors)
    names = dataset.factors.names
    labels = [f"z{d} (tied to {names[k]})" for d, k in zip(dims, factors, strict=True)]
    path = folder / "latent_projection.png"
    projection_figure(
        train_codes, held_codes, dims, labels, f"{split.name}: codes of seen and held-out inputs"
    ).savefig(path, dpi=110)
    return path
