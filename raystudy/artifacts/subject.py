"""What a trial's figures show: its trained model, with what it is shown on."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from raystudy.data import GroundTruthDataset, Split
from raystudy.models import VAE


@dataclass(frozen=True)
class Subject:
    """A trained model as its figures show it: with the dataset and split it trained on, the
    device it runs on, and `seed` (`evaluation.seed`), which fixes every draw, so every model
    of a study shows the same inputs."""

    model: VAE
    dataset: GroundTruthDataset
    split: Split
    device: torch.device
    seed: int
