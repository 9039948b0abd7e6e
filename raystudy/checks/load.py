"""Loading a study spec for running it: read the file, apply `--set`s, validate the schema
with the registered names, then check what needs the datasets, models and metrics, all before
Ray starts. The CLI, the study driver, `plan` and notebooks load specs through here.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from raystudy.checks.composition import composition_problems
from raystudy.checks.data import data_problems
from raystudy.checks.decoder_rebalance import decoder_test_problems
from raystudy.checks.metrics import readout_problems, search_metric_problems
from raystudy.checks.model_options import foreign_option_problems
from raystudy.checks.names import known_names, known_options
from raystudy.checks.stacking import check_stackable
from raystudy.data.check import DataChecker
from raystudy.spec import SpecError, StudySpec
from raystudy.spec.problems import distinct
from raystudy.spec.validate import refuse_repeats, refuse_shadowed, validate_schema
from raystudy.spec.yaml_io import apply_overrides, read_spec_file


def validate_spec(raw: Any, source: str = "<spec>", check_data: bool = True) -> StudySpec:
    """A validated StudySpec, or SpecError naming every problem with file and field.

    `check_data` also builds each distinct dataset and split the trials use (opening dataset
    files): what a study needs before it starts, not what reading a finished one needs.
    """
    expanded = validate_schema(raw, source, known_names(), known_options())
    spec, trials, points, label = expanded.spec, expanded.trials, expanded.points, expanded.label
    corner_trials, corners = expanded.corner_trials, expanded.corners
    problems = foreign_option_problems(spec, trials, points, label)
    problems += foreign_option_problems(spec, corner_trials, corners, "search.space corner")
    if problems:
        raise SpecError(source, distinct(problems))
    if check_data:
        checker = DataChecker()
        problems = data_problems(spec, corner_trials, corners, "search.space corner", checker)
        problems += data_problems(spec, trials, points, label, checker)
        if problems:
            raise SpecError(source, distinct(problems))
        problems = search_metric_problems(spec, trials, checker) + readout_problems(trials)
        problems += composition_problems(spec, trials, points, label)
        problems += decoder_test_problems(trials, points, label, checker)
        if problems:
            raise SpecError(source, problems)
    if spec.execution.seeds_per_trial > 1:
        check_stackable(spec, source)
        for stack in spec.stacks():
            # Equal models of one stack would share one MLflow run (random draws can repeat).
            refuse_repeats(trials, points, stack, label, "execution.seeds_per_trial", source)
    elif spec.execution.stack_over:
        raise SpecError(
            source,
            [
                (
                    "execution.stack_over",
                    "has no effect while execution.seeds_per_trial is 1: set seeds_per_trial "
                    "to how many models one trial trains",
                )
            ],
        )
    return spec


def load_spec(
    path: str | Path, overrides: Iterable[str] = (), check_data: bool = True
) -> StudySpec:
    """Read, override and validate a study YAML; raise `SpecError` naming file and field
    (`check_data`: see `validate_spec`)."""
    source = str(Path(path))
    raw = read_spec_file(path)
    overrides = list(overrides)
    merged = apply_overrides(raw, overrides, source)
    spec = validate_spec(merged, source, check_data)
    refuse_shadowed(spec, merged, overrides, source)
    return spec
