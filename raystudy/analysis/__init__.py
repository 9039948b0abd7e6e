"""From a study's MLflow runs to tables, figures and a report. Never trains.

`load(study)` gives the results table (one row per trial) for a notebook;
`analyze_study(study_dir)` is what `raystudy analyze` runs.

Its stages, each importing only those below it: `core` (the results table: loading it, its
columns, cells and groups), `stats` (tests, bootstrap, the design held fixed), `tables`,
`findings` and `figures` (both read the tables), then `report`, `pipeline` and `summary`.

The names below are imported on first use: `raystudy claims` and the other commands that need
one small part (`analysis.claims`) would otherwise pay for matplotlib, scipy, MLflow and torch
(seconds at every start of the command).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from raystudy.analysis.core.results import load, load_results
    from raystudy.analysis.pipeline import Settings, analyze_study, compute, write_analysis
    from raystudy.analysis.tables.correlations import correlation_table, spearman_table
    from raystudy.analysis.tables.selection import selection_table

_HOMES = {
    "load": "raystudy.analysis.core.results",
    "load_results": "raystudy.analysis.core.results",
    "Settings": "raystudy.analysis.pipeline",
    "analyze_study": "raystudy.analysis.pipeline",
    "compute": "raystudy.analysis.pipeline",
    "write_analysis": "raystudy.analysis.pipeline",
    "correlation_table": "raystudy.analysis.tables.correlations",
    "spearman_table": "raystudy.analysis.tables.correlations",
    "selection_table": "raystudy.analysis.tables.selection",
}

__all__ = [
    "Settings",
    "analyze_study",
    "compute",
    "correlation_table",
    "load",
    "load_results",
    "selection_table",
    "spearman_table",
    "write_analysis",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'raystudy.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
