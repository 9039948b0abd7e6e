"""Ground-truth factor datasets, selectors and OOD splits (DESIGN.md sections 3-4).

Importable without Ray or MLflow, so a notebook can render, sample and split directly::

    ds = get_dataset("color_dsprites")
    split = get_split("dittadi_hues", ds)
    images = ds.render(split.sample("encoder", 64, rng=0))
"""

# The dataset modules register themselves on import.
from raystudy.data import dsprites as _dsprites  # noqa: F401
from raystudy.data.base import GroundTruthDataset
from raystudy.data.factors import Factor, FactorSpace
from raystudy.data.registry import DATASETS, get_dataset, register_dataset
from raystudy.data.selectors import SelectorError
from raystudy.data.splits import (
    SPLITS,
    Scenario,
    Split,
    get_split,
    register_split,
    split_from_spec,
)

__all__ = [
    "DATASETS",
    "SPLITS",
    "Factor",
    "FactorSpace",
    "GroundTruthDataset",
    "Scenario",
    "SelectorError",
    "Split",
    "get_dataset",
    "get_split",
    "register_dataset",
    "register_split",
    "split_from_spec",
]
