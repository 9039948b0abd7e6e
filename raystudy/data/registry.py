"""Datasets by name, so a study YAML can say ``dataset: {name: color_dsprites}``."""

from __future__ import annotations

import inspect
from typing import Any

from raystudy.data.base import GroundTruthDataset
from raystudy.registry import Registry, unknown_name_message

DATASETS: Registry[type[GroundTruthDataset]] = Registry("dataset")

#: Class decorator: make the dataset available as ``get_dataset(name)``.
register_dataset = DATASETS.register


def get_dataset(name: str, **options: Any) -> GroundTruthDataset:
    """Instantiate a registered dataset; unknown names list the known ones, and an unknown or
    missing option is a ValueError naming the dataset's options."""
    cls = DATASETS.get(name)
    params = {
        p.name: p
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    for key in options:
        if key not in params:
            known = list(params) or ["(none)"]
            raise ValueError(f"dataset {name!r}: " + unknown_name_message("option", key, known))
    missing = [k for k, p in params.items() if p.default is p.empty and k not in options]
    if missing:
        raise ValueError(
            f"dataset {name!r} needs option(s) {', '.join(missing)} "
            f"(e.g. dataset: {{name: {name}, {missing[0]}: ...}})"
        )
    return cls(**options)
