"""Datasets by name, so a study YAML can say ``dataset: {name: color_dsprites}``."""

from __future__ import annotations

from typing import Any

from raystudy.data.base import GroundTruthDataset
from raystudy.registry import Registry

DATASETS: Registry[type[GroundTruthDataset]] = Registry("dataset")

#: Class decorator: make the dataset available as ``get_dataset(name)``.
register_dataset = DATASETS.register


def get_dataset(name: str, **options: Any) -> GroundTruthDataset:
    """Instantiate a registered dataset; unknown names list the known ones."""
    return DATASETS.get(name)(**options)
