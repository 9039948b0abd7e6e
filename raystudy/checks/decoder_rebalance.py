"""What the decoder test (Montero et al. 2022; `evaluation.decoder_test_*`) cannot run with,
refused before Ray starts: shape-balanced draws (`decoder_test_rebalance`) on a dataset
without a shape factor to balance (`raystudy.training.balanced`), which would otherwise fail
in every trial after its training.
"""

from __future__ import annotations

from typing import Any

from raystudy.data.check import DataChecker, DataProblem
from raystudy.spec import TrialConfig
from raystudy.spec.grid import flatten
from raystudy.spec.problems import point_label
from raystudy.training.balanced import shape_factor


def decoder_test_problems(
    trials: list[TrialConfig], points: list[dict[str, Any]], label: str, checker: DataChecker
) -> list[tuple[str, str]]:
    """(field, message) for the first trial that rebalances its decoder test by shape on a
    dataset that has no shape factor (module doc)."""
    for i, (trial, point) in enumerate(zip(trials, points, strict=True)):
        ev = trial.evaluation
        if not (ev.decoder_test_steps and ev.decoder_test_rebalance):
            continue
        ds = checker.dataset(trial.dataset.name, trial.dataset.options)
        if isinstance(ds, DataProblem):
            continue  # the data's own problem is reported with the data
        try:
            shape_factor(ds.factors.names)
        except ValueError as err:
            field = "evaluation.decoder_test_rebalance"
            where = (
                f"{point_label(label, i, point)} -> {field}" if field in flatten(point) else field
            )
            return [
                (
                    where,
                    f"is true, but dataset {trial.dataset.name!r} has no shape to balance: {err}",
                )
            ]
    return []
