"""Datasets by name, so a study YAML can say ``dataset: {name: color_dsprites}``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from raystudy.data.base import GroundTruthDataset
from raystudy.data.factors import unknown_name_message

DATASETS: dict[str, type[GroundTruthDataset]] = {}

_D = TypeVar("_D", bound=type[GroundTruthDataset])


def register_dataset(name: str) -> Callable[[_D], _D]:
    """Class decorator: make the dataset available as ``get_dataset(name)``."""

    def decorate(cls: _D) -> _D:
        if name in DATASETS and DATASETS[name] is not cls:
            raise ValueError(f"dataset {name!r} is already registered to {DATASETS[name]}")
        DATASETS[name] = cls
        return cls

    return decorate


def get_dataset(name: str, **options: Any) -> GroundTruthDataset:
    """Instantiate a registered dataset; unknown names list the known ones."""
    if name not in DATASETS:
        raise ValueError(unknown_name_message("dataset", name, sorted(DATASETS)))
    return DATASETS[name](**options)
