"""MLflow over a real PostgreSQL server (tests/postgres.py): what raystudy says when the
database is missing, refuses or is stopped. Whole studies on it, with the server stopped
mid-study, are in tests/reliability/test_faults_tracking.py."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import mlflow
import pytest
from mlflow_server import MlflowServer, free_port

from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable, check_reachable
from raystudy.tracking.study_run import StudyTracker
from raystudy.tracking.trial_run import TrialRun


def test_a_database_that_answers_refuses_and_one_that_does_not_is_unreachable(postgres) -> None:
    uri = postgres.create_database("reach")
    check_reachable(uri)  # answers: nothing raised
    with pytest.raises(TrackingRejected, match='database "absent" does not exist'):
        check_reachable(postgres.uri("absent"))
    nobody = f"postgresql+psycopg2://raystudy:secret@127.0.0.1:{free_port()}/db"
    started = time.monotonic()
    with pytest.raises(TrackingUnreachable, match="Connection refused") as caught:
        check_reachable(nobody)
    assert time.monotonic() - started < 5  # not after MLflow's ~100 s of engine retries
    assert "secret" not in str(caught.value) and "raystudy:***@" in str(caught.value)


def test_a_trial_run_opened_while_the_database_is_stopped_goes_offline_at_once(
    postgres,
) -> None:
    uri = postgres.create_database("offline")
    experiment_id = mlflow.MlflowClient(uri).create_experiment("offline")
    postgres.stop("fast")
    try:
        started = time.monotonic()
        run = TrialRun.open(uri, experiment_id, "t0", "trial0", {"a": 1}, {})
        assert run.offline is not None and "is unreachable" in run.offline, run.offline
        assert time.monotonic() - started < 10
        run.log_metrics({"train/loss": 1.0}, step=1)  # skipped, not raised
    finally:
        postgres.start()
    # Back up: a trial opened now logs, and nothing else was written meanwhile.
    run = TrialRun.open(uri, experiment_id, "t1", "trial1", {"a": 1}, {})
    assert run.offline is None
    run.log_metrics({"train/loss": 2.0}, step=1)
    runs = mlflow.MlflowClient(uri).search_runs([experiment_id])
    assert [r.info.run_name for r in runs] == ["trial1"]
    assert runs[0].data.metrics == {"train/loss": 2.0}


@pytest.mark.heavy  # trials through Tune to a server over PostgreSQL: the fault tier
def test_mlflow_server_over_postgres_as_the_cluster_head_runs_it(postgres, tmp_path: Path) -> None:
    """cluster.yaml's head: `mlflow server` over a host-less postgresql+psycopg2:///mlflow (the
    local socket, port 5432); here the socket folder and port are named (a server of its own)."""
    postgres.create_database("served")
    backend = (
        f"postgresql+psycopg2:///served?host={postgres.root}&port={postgres.port}"
        f"&user={postgres.user}"
    )
    server = MlflowServer(tmp_path, backend=backend).start()
    try:
        client = mlflow.MlflowClient(server.url)
        run = client.create_run(client.create_experiment("served"))
        client.log_metric(run.info.run_id, "train/loss", 0.5, step=3)
    finally:
        server.stop()
    # What the server wrote is in PostgreSQL, read without it.
    direct = mlflow.MlflowClient(postgres.uri("served"))
    history = direct.get_metric_history(run.info.run_id, "train/loss")
    assert [(m.step, m.value) for m in history] == [(3, 0.5)]


def test_a_deleted_experiment_is_refused_with_commands_that_hide_the_password(postgres) -> None:
    # The message is for pasting into a shell and into issues: never the store's password.
    uri = postgres.create_database("gone").replace("@", ":secret@", 1)  # trust: not checked
    client = mlflow.MlflowClient(uri)
    client.delete_experiment(client.create_experiment("s"))
    with pytest.raises(TrackingRejected, match="deleted") as caught:
        StudyTracker.check(uri, "s")
    said = str(caught.value)
    assert "secret" not in said and ":***@" in said and "experiments restore" in said, said


def _log_dataset_at_once(runs: list[TrialRun]) -> list[BaseException]:
    """Each run logs the same dataset from a thread of its own, released together."""
    start = threading.Barrier(len(runs))
    failed: list[BaseException] = []

    def log(run: TrialRun) -> None:
        start.wait()
        try:
            run.log_dataset("dsprites", "d1g3st", {"name": "dsprites"}, {"images": 10})
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=log, args=(run,)) for run in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return failed


def test_trials_logging_the_same_new_dataset_at_once_all_link_it(postgres) -> None:
    """The store looks a dataset up before inserting it: trials that log the same new dataset
    at the same moment race to insert it (bench.store_writes saw PostgreSQL's `dataset_pk`
    refuse one). Every run must still link the dataset, not lose it to the race."""
    uri = postgres.create_database("datasets")
    client = mlflow.MlflowClient(uri)
    for r in range(4):  # each round a new experiment: the dataset is new to it
        experiment_id = client.create_experiment(f"race{r}")
        runs = [
            TrialRun.open(uri, experiment_id, f"t{i}", f"trial{i}", {"a": i}, {}) for i in range(8)
        ]
        assert _log_dataset_at_once(runs) == []
        for run in runs:
            inputs = client.get_run(run.run_id).inputs.dataset_inputs
            assert [(i.dataset.name, i.dataset.digest) for i in inputs] == [("dsprites", "d1g3st")]
