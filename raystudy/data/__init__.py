"""Ground-truth factor datasets, selectors and OOD splits (docs/architecture/data.md).

Datasets: ``dsprites``, ``color_dsprites``, ``shapes3d``, ``mpi3d``, ``finger``, ``circles``,
``simple``, and Locatello et al. (2019)'s ``random_color_dsprites``, ``noisy_dsprites``,
``scream_dsprites`` (procedural, domains ``sim``, ``real`` and ``photo``) and
``dsprites_file``, ``shapes3d_file``, ``mpi3d_file``, the three variants' ``*_file``,
``smallnorb_file``, ``cars3d_file`` (official files). Splits: ``iid``, ``dittadi_hues``,
``schott_{random,composition,interpolation,extrapolation}``,
``montero_{element,range,extrapolation}``, ``montero2022_<condition>``, or one written in the
study YAML.

Importable without Ray or MLflow, so a notebook can render, sample and split directly::

    ds = get_dataset("color_dsprites")
    split = get_split("dittadi_hues", ds)
    images = ds.render(split.sample("encoder", 64, rng=0))
"""

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.core.factors import Factor, FactorSpace
from raystudy.data.core.files import DatasetFileError
from raystudy.data.core.registry import DATASETS, get_dataset, register_dataset

# Every dataset and built-in split registers itself when its package is imported.
from raystudy.data.sources import files as _files  # noqa: F401
from raystudy.data.sources import procedural as _procedural  # noqa: F401
from raystudy.data.splits import iid as _iid  # noqa: F401
from raystudy.data.splits import papers as _papers  # noqa: F401
from raystudy.data.splits.registry import SPLITS, get_split, register_split, split_from_spec
from raystudy.data.splits.selectors import SelectorError
from raystudy.data.splits.split import Scenario, Split

__all__ = [
    "DATASETS",
    "SPLITS",
    "DatasetFileError",
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
