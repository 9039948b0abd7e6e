"""Metrics of a trained representation: arrays in, ``dict[str, float]`` out.

Imports neither Ray nor MLflow (nor torch, until an intervention metric or ``unsupervised``
runs), so a notebook can call them directly. Keys are short; the caller prefixes them
(``dis/``, ``down/``, ``eval/``, ``transfer/<scenario>/<probe>/``). Importing this package
registers the built-in metrics in :data:`METRICS` (fixed-sample: ``dci``, ``dci_lasso``,
``dci_lasso_paper``, ``gbt10000``, ``mig``, ``modularity``, ``sap``) and
:data:`INTERVENTION_METRICS` (``beta_vae``, ``factor_vae``), and the probes in :data:`PROBES`.

    evaluate("mig", codes, factors)                      # -> {"mig": ...}
    evaluate_intervention("factor_vae", dataset, encode) # -> {"factor_vae": ..., ...}
"""

from raystudy.metrics._checks import MetricWarning
from raystudy.metrics._info import discretize, factor_entropy, mutual_info_matrix
from raystudy.metrics._intervention import CodePool, FeasibleSampler, draw_pool
from raystudy.metrics.api import evaluate, evaluate_intervention
from raystudy.metrics.beta_vae import beta_vae
from raystudy.metrics.dci import completeness, dci, disentanglement, importance_matrix
from raystudy.metrics.dci_lasso import dci_lasso, dci_lasso_paper
from raystudy.metrics.downstream import downstream_gbt
from raystudy.metrics.factor_vae import factor_vae
from raystudy.metrics.mig import mig, mig_per_factor
from raystudy.metrics.modularity import explicitness_per_factor, modularity, modularity_score
from raystudy.metrics.probes import PROBES, get_probe, register_probe
from raystudy.metrics.registry import (
    INTERVENTION_METRICS,
    METRICS,
    get_metric,
    register_intervention_metric,
    register_metric,
)
from raystudy.metrics.sap import sap, sap_score_matrix
from raystudy.metrics.transfer import normalise_factors, transfer

__all__ = [
    "INTERVENTION_METRICS",
    "METRICS",
    "PROBES",
    "CodePool",
    "FeasibleSampler",
    "MetricWarning",
    "beta_vae",
    "completeness",
    "dci",
    "dci_lasso",
    "dci_lasso_paper",
    "discretize",
    "disentanglement",
    "downstream_gbt",
    "draw_pool",
    "evaluate",
    "evaluate_intervention",
    "explicitness_per_factor",
    "factor_entropy",
    "factor_vae",
    "get_metric",
    "get_probe",
    "importance_matrix",
    "mig",
    "mig_per_factor",
    "modularity",
    "modularity_score",
    "mutual_info_matrix",
    "normalise_factors",
    "register_intervention_metric",
    "register_metric",
    "register_probe",
    "sap",
    "sap_score_matrix",
    "transfer",
]
