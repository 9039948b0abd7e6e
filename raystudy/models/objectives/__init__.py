"""Training objectives of the VAE family; one file each, registered by name.

Every module of this package is imported here, and each objective module registers its
objective on import: a new objective is one new file (its options model, its loss, its
`@OBJECTIVES.register`), listed nowhere else.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Any

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams, PairK
from raystudy.models.objectives.registry import OBJECTIVES

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

if TYPE_CHECKING:
    from raystudy.spec import ModelConfig


def get_objective(name: str, **options: Any) -> Objective:
    """The objective `name` with the given options (only those it reads; ValueError naming
    the objective for any other)."""
    cls = OBJECTIVES.get(name)
    unknown = sorted(set(options) - set(cls.hyperparameters))
    if unknown:
        reads = ", ".join(cls.hyperparameters) or "none"
        raise ValueError(f"objective {name!r} has no option {unknown}; it reads: {reads}")
    return cls(**options)


def objective_from_config(config: ModelConfig) -> Objective:
    """The objective of a `ModelConfig` with its own options; the options of other
    objectives (shared defaults of a grid's base `model` section) are not its to read."""
    cls = OBJECTIVES.get(config.objective)
    return cls(**{k: v for k, v in config.options.items() if k in cls.hyperparameters})


def objective_options() -> dict[str, type[ObjectiveParams]]:
    """Each registered objective's options model, for validating specs
    (`raystudy.spec.OPTIONS`)."""
    return {name: cls.Params for name, cls in OBJECTIVES.items()}


__all__ = [
    "OBJECTIVES",
    "Batch",
    "LossTerms",
    "Objective",
    "ObjectiveParams",
    "PairK",
    "get_objective",
    "objective_from_config",
    "objective_options",
]
