"""What the study's own finished runs measured: the mean phase timings of each kind of trial
they ran, which `make_plan` uses instead of calibrating that kind."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from raystudy.models.params import trial_params
from raystudy.phases import TOTAL, TRAINING_PHASES, WALL, phase_table
from raystudy.plan.result import Measured, MeasuredRun
from raystudy.spec import TrialConfig


def _param_key(params: Mapping[str, Any], names: Iterable[str]) -> frozenset[tuple[str, str]]:
    return frozenset((k, str(params.get(k))) for k in names)


def measured_kinds(
    trials: list[TrialConfig],
    kinds: list[str],
    runs: Sequence[MeasuredRun],
) -> dict[str, Measured]:
    """The mean phase timings of `runs` by the kind (`kinds`, one per trial) of the trial
    each ran: a run is the trial whose every param (`trial_params`) it logged with the same
    value. Runs without `time/total/wall_s` (from before timings were logged) or of no trial
    here are left out."""
    if not runs:
        return {}
    by_key: dict[frozenset[tuple[str, str]], str] = {}
    names: set[tuple[str, ...]] = set()
    for trial, kind in zip(trials, kinds, strict=True):
        params = trial_params(trial)
        names.add(tuple(sorted(params)))
        by_key[_param_key(params, params)] = kind
    found: dict[str, list[tuple[float, float]]] = {}
    for params, metrics in runs:
        table = phase_table(metrics)
        if TOTAL not in table or WALL not in table[TOTAL]:
            continue
        keys = (_param_key(params, n) for n in names)
        kind = next((by_key[k] for k in keys if k in by_key), None)
        if kind is None:
            continue
        training = sum(table.get(p, {}).get(WALL, 0.0) for p in TRAINING_PHASES)
        found.setdefault(kind, []).append((table[TOTAL][WALL], training))
    return {
        kind: Measured(
            len(rows), statistics.fmean(r[0] for r in rows), statistics.fmean(r[1] for r in rows)
        )
        for kind, rows in found.items()
    }
