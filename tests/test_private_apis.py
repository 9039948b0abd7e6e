"""The private parts of Ray, Optuna and MLflow that raystudy leans on (docs/architecture/scale.md,
"Private APIs"), each checked against the installed release: after an upgrade, a failure here
names what moved before a study finds out."""

from __future__ import annotations

import inspect

import optuna
import ray
from ray.tune.search.optuna import OptunaSearch

from raystudy.tune.adapter import FinalMetricOptunaSearch


def test_rays_cluster_config_reader_is_where_the_probe_reads_it(ray_local) -> None:
    """raystudy.tune.probe.find_autoscaler reads a launcher cluster's node types from the GCS
    (falling back to the monitor's files when this is gone)."""
    from ray._private.state import state

    config = state.get_cluster_config()  # a local cluster has none: None or an empty config
    assert config is None or hasattr(config, "node_group_configs")
    assert ray.is_initialized()


def test_optuna_searchs_trial_records_are_those_the_resumed_searcher_reads() -> None:
    """FinalMetricOptunaSearch._told_already reads OptunaSearch's `_ot_trials`,
    `_completed_trials` and `_ot_study`, and an Optuna trial's `_trial_id` in its storage."""
    space = {"x": optuna.distributions.FloatDistribution(0.0, 1.0)}
    searcher = FinalMetricOptunaSearch(space=space, metric="m", mode="min", seed=0)
    assert isinstance(searcher, OptunaSearch)
    suggested = searcher.suggest("t0")
    assert suggested is not None and 0.0 <= suggested["x"] <= 1.0
    ot_trial = searcher._ot_trials["t0"]
    assert isinstance(searcher._completed_trials, set)
    frozen = searcher._ot_study._storage.get_trial(ot_trial._trial_id)
    assert not frozen.state.is_finished()
    searcher.on_trial_complete("t0", {"m": 0.5})
    frozen = searcher._ot_study._storage.get_trial(ot_trial._trial_id)
    assert frozen.state.is_finished() and frozen.value == 0.5
    # Told again (a restored searcher): taken as told, not refused by Optuna.
    searcher.on_trial_complete("t0", {"m": 0.5})
    assert "t0" in searcher._completed_trials


def test_mlflows_code_dataset_source_type_and_pickle_switch() -> None:
    """tracking/trial_run.py names a run's datasets with CodeDatasetSource's source type;
    tracking/models.py turns MLflow's unpickling off through the variable its pytorch loader
    reads."""
    import mlflow.pytorch
    from mlflow.data.code_dataset_source import CodeDatasetSource

    assert CodeDatasetSource._get_source_type() == "code"
    from raystudy.tracking.models import ALLOW_PICKLE, _no_pickle

    with _no_pickle():
        assert not mlflow.pytorch._is_pickle_deserialization_allowed()
    assert "_load_by_pickle_check" in inspect.getsource(mlflow.pytorch._load_model)
    assert ALLOW_PICKLE == "MLFLOW_ALLOW_PICKLE_DESERIALIZATION"


def test_rays_local_only_switch_names_a_study_s_local_node_loopback(ray_local) -> None:
    """tune/cluster.py's start_local turns `ray_constants.ENABLE_RAY_CLUSTER` off while a
    private local Ray starts, so the node (and every server of it) is on 127.0.0.1, and puts
    it back for a later join of a real cluster."""
    from ray._private import ray_constants

    from raystudy.tune.cluster import _loopback_node

    assert ray.util.get_node_ip_address() == "127.0.0.1"  # ray_local came from start_local
    before = ray_constants.ENABLE_RAY_CLUSTER
    assert isinstance(before, bool)
    with _loopback_node():
        assert ray_constants.ENABLE_RAY_CLUSTER is False
    assert ray_constants.ENABLE_RAY_CLUSTER is before
