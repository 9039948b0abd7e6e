"""What a study needs before its Tuner, whether run or resumed: Ray's and Optuna's refusals
said as a StudyError, the code's version, each trial's resources fitted to the cluster, and the
context every trial of the study shares."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from raystudy.resources import ResourceError
from raystudy.spec import StudySpec
from raystudy.study.folder import ClusterUnavailable, StudyError, StudyInfo
from raystudy.trials.common import StudyContext
from raystudy.tune.cluster import TuneSetupError
from raystudy.tune.optuna_storage import optuna_study_exists
from raystudy.tune.probe import cluster_request

T = TypeVar("T")


def as_study_error(call: Callable[..., T], *args: Any) -> T:
    """`call(*args)`, with Ray or Tune refusing the study's set-up said as a StudyError."""
    try:
        return call(*args)
    except TuneSetupError as exc:
        raise ClusterUnavailable(str(exc)) from None


def trial_resources(spec: StudySpec) -> dict[str, float]:
    """What each trial asks for, fitted to the cluster we are connected to and the node types
    its autoscaler can launch (`raystudy.tune.probe`); StudyError when nothing can hold it."""
    want = spec.resources
    try:
        got = cluster_request(want.cpu, want.gpu, want.autoscale, spec.name)
    except ResourceError as exc:
        raise ClusterUnavailable(str(exc)) from None
    if spec.scores_on_cuda() and not got["gpu"]:
        # The GPU request was dropped (no GPU node, none launchable): every trial would
        # train on its CPU and then fail where it scores.
        raise ClusterUnavailable(
            "evaluation.device: cuda, but this cluster has no GPU node and its autoscaler "
            "can launch none, so the trials would run on CPUs; set evaluation.device to auto "
            "(score where the trial runs) or cpu, or run on a cluster with GPUs"
        )
    return got


def check_search_method(spec: StudySpec, source: str | Path, methods: Sequence[str]) -> None:
    """StudyError when the spec read from `source` searches in a way other than `methods`,
    the searches of the command given it (`optimize` runs Optuna searches only)."""
    if spec.search.method not in methods:
        raise StudyError(
            f"{source}: search.method is {spec.search.method!r}; this command runs "
            f"{' or '.join(methods)} searches"
        )


def check_optuna_study(spec: StudySpec, overwrite: bool) -> None:
    """Refuse a new study whose `search.storage` already holds an Optuna study of its name
    (left by an earlier study, in another --output): Optuna would add to it, and its best
    trial and TPE's history would include trials that are no part of this study. Under
    `overwrite` it is deleted when the study starts (`clear_optuna_study`)."""
    if spec.search.method != "optuna" or not spec.search.storage or overwrite:
        return
    if as_study_error(optuna_study_exists, spec.search.storage, spec.name):
        raise StudyError(
            f"search.storage {spec.search.storage} already holds an Optuna study named "
            f"{spec.name!r}; pass --overwrite to delete it and start again, or give this "
            "study another name"
        )


def study_context(
    spec: StudySpec, info: StudyInfo, version: str, resources: dict[str, float]
) -> StudyContext:
    """What every trial of the study shares: where it tracks, the code, its resources and the
    spec's execution switches."""
    execution = spec.execution
    return StudyContext(
        tracking_uri=info.tracking_uri,
        experiment_id=info.experiment_id,
        parent_run_id=info.parent_run_id,
        study=info.name,
        code_version=version,
        cpus=resources["cpu"],
        gpu=resources["gpu"],
        log_models=execution.log_models,
        register_models=execution.register_models,
        system_metrics=execution.system_metrics,
        log_artifacts=execution.log_artifacts,
        time_limit_s=execution.trial_time_limit_s,
    )
