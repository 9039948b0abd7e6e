"""From a study's MLflow runs to tables, figures and a report. Never trains.

`load(study)` gives the results table (one row per trial) for a notebook;
`analyze_study(study_dir)` is what `raystudy analyze` runs.

Its stages, each importing only those below it: `core` (the results table: loading it, its
columns, cells and groups), `stats` (tests, bootstrap, the design held fixed), `tables`,
`findings` and `figures` (both read the tables), then `report`, `pipeline` and `summary`.
"""

from raystudy.analysis.core.results import load, load_results
from raystudy.analysis.pipeline import Settings, analyze_study, compute, write_analysis
from raystudy.analysis.tables.correlations import correlation_table, spearman_table
from raystudy.analysis.tables.selection import selection_table

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
