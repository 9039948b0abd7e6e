"""`composition_trials.png` (composition models): reference, transform, target and the
model's output for training triples and triples with a held-out target (Montero et al. 2021,
Fig. 6a)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from numpy.typing import NDArray

from raystudy.artifacts.grids import grid_figure
from raystudy.artifacts.subject import Subject
from raystudy.data import GroundTruthDataset
from raystudy.data.splits.composition import HELDOUT_ROLES, TRAIN_ROLES, Triples, sample_triples
from raystudy.metrics.composition import triple_batch
from raystudy.models import VAE
from raystudy.models.objectives.composition import compose

#: Triples of each kind (training, held-out target) `composition_trials.png` shows.
COMPOSITION_TRIALS = 6


@torch.no_grad()
def composed(
    model: VAE, dataset: GroundTruthDataset, triples: Triples, device: torch.device
) -> NDArray:
    """Images (4, N, C, H, W): each triple's reference, transform and target, and the
    model's output (the decoder mean of the composed posterior means)."""
    batch = triple_batch(dataset, triples, device)
    logits, _, _ = compose(model, batch, noise=False)
    assert batch.inputs2 is not None
    shown = [batch.inputs, batch.inputs2, batch.targets, torch.sigmoid(logits)]
    return torch.stack(shown).cpu().numpy()


def draw_composition_trials(folder: Path, subject: Subject) -> Path | None:
    """`composition_trials.png` (module doc); None for a model that does not compose."""
    model, dataset, split = subject.model, subject.dataset, subject.split
    if model.transform is None:
        return None
    kinds = [("train", TRAIN_ROLES)]
    if "heldout" in split.roles:
        kinds.append(("test", HELDOUT_ROLES))
    grids, labels = [], []
    for i, (kind, roles) in enumerate(kinds):
        rng = np.random.default_rng([subject.seed, 10, i])
        triples = sample_triples(split, COMPOSITION_TRIALS, rng, roles)
        grids.append(composed(model, dataset, triples, subject.device))
        labels += [f"{kind}: {dataset.factors.names[a]}" for a in triples.action]
    path = folder / "composition_trials.png"
    grid_figure(
        np.concatenate(grids, axis=1),
        ["reference", "transform", "target", "output"],
        labels,
        f"{split.name}: composition trials (training, then held-out targets)",
        xlabel="which trials, and the factor the action takes from the transform",
    ).savefig(path, dpi=110)
    return path
