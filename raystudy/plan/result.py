"""What `make_plan` returns: a study's size and placement on a cluster (`Plan`), the cost of
each kind of its trials, and how that cost was found (calibrated, cached, or measured by the
study's own finished runs, `Measured`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from raystudy.plan.calibrate import FitTiming, TrainingTiming
from raystudy.plan.extrapolate import TrialCost
from raystudy.plan.groups import EvaluationGroup, TrainingGroup

#: A finished run of the study as `plan` reads it: its MLflow params (as logged, strings)
#: and its `time/*` metrics (`raystudy.phases`).
MeasuredRun = tuple[Mapping[str, str], Mapping[str, float]]


@dataclass(frozen=True)
class Measured:
    """What one kind of trial took in the study's own finished runs: their mean
    `time/total/wall_s` and of it the training (`train`, `render` and `report`)."""

    runs: int
    seconds: float
    training: float


@dataclass
class Plan:
    num_trials: int
    cpu: float
    gpu: float
    cluster_cpus: float
    cluster_gpus: float
    concurrent: int
    trials_per_gpu: int | None
    kinds: Counter[str] = field(default_factory=Counter)
    costs: dict[str, TrialCost] = field(default_factory=dict)
    training: dict[TrainingGroup, TrainingTiming] = field(default_factory=dict)
    evaluation: dict[EvaluationGroup, FitTiming] = field(default_factory=dict)
    #: Groups not calibrated -> the calibrated group each was costed from.
    costed_from: dict[str, str] = field(default_factory=dict)
    #: Groups not calibrated -> why (the group cap, or the time budget and what was left).
    not_timed: dict[str, str] = field(default_factory=dict)
    device: str | None = None  # what the calibration ran on
    gpus_asked: bool = False
    threads: int = 1  # a trial's threads
    timed_threads: int = 1  # the calibration's (`calibration_threads`)
    #: Groups whose timing was read from the cache -> when it was taken.
    cached: dict[str, str] = field(default_factory=dict)
    budget_s: float = 0.0
    calibration_seconds: float = 0.0
    #: Kinds the study's finished runs measured (their phase timings), and where they were.
    measured: dict[str, Measured] = field(default_factory=dict)
    measured_from: str | None = None

    @property
    def trial_seconds(self) -> dict[str, float]:
        return {kind: cost.seconds for kind, cost in self.costs.items()}

    @property
    def measured_trial_hours(self) -> float | None:
        """Trial-hours with each kind's measured seconds where the study's runs measured it
        and the calibrated cost elsewhere; None when a kind has neither."""
        seconds = 0.0
        for kind, n in self.kinds.items():
            if kind in self.measured:
                seconds += self.measured[kind].seconds * n
            elif kind in self.costs:
                seconds += self.costs[kind].seconds * n
            else:
                return None
        return seconds / 3600

    @property
    def total_trial_hours(self) -> float:
        return sum(self.trial_seconds[k] * n for k, n in self.kinds.items()) / 3600

    @property
    def wall_hours(self) -> float:
        return self.total_trial_hours / max(1, self.concurrent)
