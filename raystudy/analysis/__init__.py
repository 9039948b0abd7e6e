"""From a study's MLflow runs to tables and correlations. Never trains."""

from raystudy.analysis.correlations import spearman_table
from raystudy.analysis.results import load_results

__all__ = ["load_results", "spearman_table"]
