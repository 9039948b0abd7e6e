"""The registered names of each kind a spec names (datasets, splits, objectives,
architectures, metrics, probes): what the schema checks names against, passed to it as its
validation context (`raystudy.spec.trial_config.NAMES`), and the objectives' option models
(`OPTIONS`)."""

from __future__ import annotations

from raystudy.data import DATASETS, SPLITS
from raystudy.metrics import INTERVENTION_METRICS, METRICS
from raystudy.metrics.probes import PROBES
from raystudy.models import ARCHITECTURES, OBJECTIVES
from raystudy.models.objectives import objective_options
from raystudy.spec import KnownNames, ObjectiveOptions


def known_names() -> KnownNames:
    """Each kind's registered names, as the messages list them."""
    return {
        "dataset": list(DATASETS),
        "split": list(SPLITS),
        "objective": list(OBJECTIVES),
        "architecture": list(ARCHITECTURES),
        "metric": [*METRICS, *INTERVENTION_METRICS],
        "probe": list(PROBES),
    }


def known_options() -> ObjectiveOptions:
    """Each objective's options model, which validates the options of a trial's model."""
    return objective_options()
