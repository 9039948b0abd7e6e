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

# The dataset and paper-split modules register themselves on import.
from raystudy.data import builtin_splits as _builtin_splits  # noqa: F401
from raystudy.data import cars3d_file as _cars3d_file  # noqa: F401
from raystudy.data import circles as _circles  # noqa: F401
from raystudy.data import dsprites as _dsprites  # noqa: F401
from raystudy.data import dsprites_file as _dsprites_file  # noqa: F401
from raystudy.data import dsprites_variants as _dsprites_variants  # noqa: F401
from raystudy.data import finger as _finger  # noqa: F401
from raystudy.data import montero as _montero  # noqa: F401
from raystudy.data import montero2022 as _montero2022  # noqa: F401
from raystudy.data import mpi3d as _mpi3d  # noqa: F401
from raystudy.data import mpi3d_file as _mpi3d_file  # noqa: F401
from raystudy.data import schott as _schott  # noqa: F401
from raystudy.data import shapes3d as _shapes3d  # noqa: F401
from raystudy.data import shapes3d_file as _shapes3d_file  # noqa: F401
from raystudy.data import smallnorb_file as _smallnorb_file  # noqa: F401
from raystudy.data.base import GroundTruthDataset
from raystudy.data.factors import Factor, FactorSpace
from raystudy.data.file_arrays import DatasetFileError
from raystudy.data.registry import DATASETS, get_dataset, register_dataset
from raystudy.data.selectors import SelectorError
from raystudy.data.split_registry import SPLITS, get_split, register_split, split_from_spec
from raystudy.data.splits import Scenario, Split

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
