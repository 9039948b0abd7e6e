"""Checks of a study spec that need more than its schema: names against the registries,
datasets and splits built, models sized on their data, search metrics against what trials
report, stacking. `load_spec` runs them all before Ray starts."""

from raystudy.checks.load import load_spec, validate_spec

__all__ = ["load_spec", "validate_spec"]
