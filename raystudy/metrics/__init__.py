"""Metrics of a trained representation: arrays in, ``dict[str, float]`` out.

Imports neither Ray nor MLflow, so a notebook can call them directly. Keys are short; the
caller prefixes them (``dis/``, ``transfer/<scenario>/<probe>/``). Importing this package
registers the built-in representation metrics in :data:`METRICS` and probes in
:data:`PROBES`.
"""

from raystudy.metrics._info import discretize, factor_entropy, mutual_info_matrix
from raystudy.metrics.dci import completeness, dci, disentanglement, importance_matrix
from raystudy.metrics.mig import mig, mig_per_factor
from raystudy.metrics.probes import PROBES, get_probe, register_probe
from raystudy.metrics.registry import METRICS, get_metric, register_metric
from raystudy.metrics.transfer import normalise_factors, transfer

__all__ = [
    "METRICS",
    "PROBES",
    "completeness",
    "dci",
    "discretize",
    "disentanglement",
    "factor_entropy",
    "get_metric",
    "get_probe",
    "importance_matrix",
    "mig",
    "mig_per_factor",
    "mutual_info_matrix",
    "normalise_factors",
    "register_metric",
    "register_probe",
    "transfer",
]
