"""The metrics a search or ASHA names must be ones the trials report: a `search.metric` no
trial reports leaves Optuna learning nothing, an ASHA metric missing from the training reports
turns early stopping off, both silently."""

from __future__ import annotations

import functools
from typing import Any

import torch

from raystudy.data.check import DataChecker
from raystudy.data.splits.registry import split_tag
from raystudy.keys import TRAIN, train_key
from raystudy.metrics.probes import probe_applies
from raystudy.metrics.reported import reported_metrics
from raystudy.models import OBJECTIVES, build
from raystudy.models.factory import example_batch
from raystudy.spec import ModelConfig, StudySpec, TrialConfig


def search_metric_problems(
    spec: StudySpec, trials: list[TrialConfig], checker: DataChecker
) -> list[tuple[str, str]]:
    """A `search.metric` no trial reports leaves Optuna learning nothing (each trial ends
    pruned), and an ASHA metric missing from the training reports turns early stopping off:
    both silently, so both are refused here."""
    search = spec.search
    named: list[tuple[str, str]] = []
    if search.method == "optuna" and search.metric is not None:
        metrics = search.metric if isinstance(search.metric, list) else [search.metric]
        many = isinstance(search.metric, list)
        named = [
            (f"search.metric[{i}]" if many else "search.metric", m) for i, m in enumerate(metrics)
        ]
    if search.asha is not None:
        named.append(("search.asha.metric", search.asha.metric))
    problems: list[tuple[str, str]] = []
    for field, metric in named:
        final = not metric.startswith(TRAIN)
        if final and field == "search.asha.metric":
            problems.append(
                (
                    field,
                    f"{metric!r} is not reported while training; ASHA compares trials at their "
                    "training reports: use a train/* metric (train/loss, train/recon, train/kl "
                    "or an objective's own train/* term)",
                )
            )
            continue
        if metric in (train_key("loss"), train_key("recon"), train_key("kl")):
            continue  # every objective reports these
        terms: dict[str, frozenset[str]] = {}  # the names depend on the objective alone
        for trial in trials:
            ds = checker.dataset(trial.dataset.name, trial.dataset.options)
            if final:
                built = checker.split(trial.dataset.name, trial.dataset.options, trial.split)
                reported = reported_metrics(trial, built, ds.factors.names)  # type: ignore[union-attr,arg-type]
                what = (
                    f"with evaluation.metrics {trial.evaluation.metrics}, probes "
                    f"{trial.evaluation.probes} and split {split_tag(trial.split)}"
                )
                shown = sorted(m for m in reported if m.count("/") <= 3)
                per_factor = " and the per-factor transfer/<scenario>/<probe>/mae/<factor>"
                listed = ", ".join(shown) + (per_factor if trial.evaluation.probes else "")
            else:
                objective = trial.model.objective
                if objective not in terms:
                    terms[objective] = _train_terms(trial.model, ds)
                reported = terms[objective]
                what, listed = f"objective {trial.model.objective}", ", ".join(sorted(reported))
            if reported and metric not in reported:
                problems.append(
                    (
                        field,
                        f"{metric!r} is not reported by the trials ({what}); they report: {listed}",
                    )
                )
                break
    return problems


@functools.cache
def _train_terms_of(
    model: ModelConfig, channels: int, resolution: int, factors: int
) -> frozenset[str]:
    """The train/* names an objective reports, from one step on the meta device (shapes
    only: nothing is computed or allocated); empty if that cannot be run."""
    try:
        with torch.device("meta"):
            net, objective = build(model, channels, resolution, factors)
            batch = example_batch(
                channels,
                resolution,
                factors,
                4,
                objective.pairs,
                torch.device("meta"),
                objective.triples,
            )
            terms = objective(net, batch, step=0)
    except Exception:  # an objective that needs real values: its names stay unchecked
        return frozenset()
    return frozenset(train_key(k) for k in terms.scalars())


def _train_terms(model: ModelConfig, ds: Any) -> frozenset[str]:
    return _train_terms_of(model, ds.channels, ds.resolution, ds.factors.num_factors)


#: The most parameters a model may have (weights, gradients and Adam's two moments of 2**31
#: float32 parameters are 34 GB): beyond it, a resolution typo behind an `mlp` would only


def readout_problems(trials: list[TrialConfig]) -> list[tuple[str, str]]:
    """A readout that reads the code as the factors (`own`) scores only models with one code
    dimension per factor; a study with none of them would list it and report nothing."""
    sized = [t for t in trials if OBJECTIVES.get(t.model.objective).code_is_factor_sized]
    named = {p for t in trials for p in t.evaluation.probes}
    problems = []
    for probe in sorted(named):
        if not sized and not probe_applies(probe, code_is_factor_sized=False):
            factor_sized = [n for n in OBJECTIVES.names() if OBJECTIVES.get(n).code_is_factor_sized]
            problems.append(
                (
                    "evaluation.probes",
                    f"{probe!r} scores the code as the factors, so only models with one code "
                    f"dimension per factor ({', '.join(factor_sized)}); no model of this study "
                    "has one: add one to the grid or remove the probe",
                )
            )
    return problems
