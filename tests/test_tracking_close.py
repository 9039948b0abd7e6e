"""Trial runs a dead trial left open are closed when the study ends, and reopened on resume."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient

from raystudy.tags import CLOSED_TAG, EARLIER_ERROR_TAG, ERROR_TAG
from raystudy.tracking.study_run import StudyTracker, default_uri
from raystudy.tracking.trial_run import TrialRun
from raystudy.trials.common import closing_runs_on_exit


def test_runs_left_running_are_killed_at_study_end_and_reopen_clean(tmp_path: Path) -> None:
    uri = default_uri(tmp_path)
    tracker = StudyTracker.start(uri, "s", tmp_path / "mlartifacts", tags={})

    def trial(trial_id: str) -> TrialRun:
        return TrialRun.open(
            uri, tracker.experiment_id, trial_id, f"t_{trial_id}", {"seed": 1}, {}, None
        )

    done, dead, failed = trial("a"), trial("b"), trial("c")
    done.finish("FINISHED")
    failed.finish("FAILED")
    # "b" never closes its run: its process was stopped mid-evaluation.
    assert tracker.close_running_trials() == 1
    client = MlflowClient(uri)
    statuses = tracker.trial_statuses()
    assert statuses == {"t_a": "FINISHED", "t_b": "KILLED", "t_c": "FAILED"}
    assert client.get_run(dead.run_id).data.tags[CLOSED_TAG] == "study_end"
    assert CLOSED_TAG not in client.get_run(done.run_id).data.tags
    assert tracker.close_running_trials() == 0

    # Resumed, the trial finds its run again: running, and no longer marked closed.
    again = trial("b")
    assert again.run_id == dead.run_id
    run = client.get_run(dead.run_id)
    assert run.info.status == "RUNNING" and CLOSED_TAG not in run.data.tags


def test_a_retry_that_succeeds_carries_no_error_and_keeps_the_earlier_one(tmp_path: Path) -> None:
    uri = default_uri(tmp_path)
    tracker = StudyTracker.start(uri, "s", tmp_path / "mlartifacts", tags={})
    first = TrialRun.open(uri, tracker.experiment_id, "t", "t", {"seed": 1}, {}, None)
    first.set_tags({ERROR_TAG: "OSError: the node went away"})
    first.finish("FAILED")
    # Tune retries the trial (max_failures): it finds its run again, and this time succeeds.
    again = TrialRun.open(uri, tracker.experiment_id, "t", "t", {"seed": 1}, {}, None)
    assert again.run_id == first.run_id
    again.finish("FINISHED")
    run = MlflowClient(uri).get_run(first.run_id)
    assert run.info.status == "FINISHED"
    assert ERROR_TAG not in run.data.tags
    assert run.data.tags[EARLIER_ERROR_TAG] == "OSError: the node went away"


def test_an_interrupt_kills_the_run_without_an_error_and_a_failure_fails_it(tmp_path: Path) -> None:
    uri = default_uri(tmp_path)
    tracker = StudyTracker.start(uri, "s", tmp_path / "mlartifacts", tags={})
    client = MlflowClient(uri)
    for trial_id, raised, status in (
        ("ctrl-c", KeyboardInterrupt(), "KILLED"),
        ("stopped", SystemExit(), "KILLED"),
        ("broken", ValueError("bad batch"), "FAILED"),
    ):
        run = TrialRun.open(uri, tracker.experiment_id, trial_id, trial_id, {}, {}, None)
        try:
            with closing_runs_on_exit(lambda run=run: [run]):
                raise raised
        except BaseException as exc:  # re-raised as it came
            assert exc is raised
        got = client.get_run(run.run_id)
        assert got.info.status == status, trial_id
        assert (ERROR_TAG in got.data.tags) == (status == "FAILED"), trial_id
    assert client.get_run(run.run_id).data.tags[ERROR_TAG] == "ValueError: bad batch"
