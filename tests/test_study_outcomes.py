"""How a study counts its trials, without Ray: finished, stopped early by the scheduler (ASHA),
unfinished (Ctrl-C, a time budget) or failed; what `run`/`resume` then say and record, what
`status` reads from Tune's storage; and the Optuna study that `--overwrite` starts afresh.

The Tune state written here has the form Ray Tune writes (checked against the studies of a
real ASHA-pruned `raystudy optimize` and a Ctrl-C'd one): a trial the scheduler stopped is
TERMINATED with `done` on its last result and no `evaluated`; one a Ctrl-C cut short is
RUNNING without `done`.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import mlflow
import optuna
import pytest
from tiny import LIGHT, SMOKE, tiny

from raystudy.checks import load_spec
from raystudy.keys import EVALUATED
from raystudy.study.folder import StudyError, StudyInfo
from raystudy.study.outcome import StudyOutcome, _finish
from raystudy.study.report import WARNING, outcome_report
from raystudy.study.setup import check_optuna_study
from raystudy.study.status import study_status
from raystudy.tags import ROLE_TAG, STOPPED_TAG, TRIAL_ID_TAG, TRIAL_ROLE, equals
from raystudy.tracking.study_run import StudyTracker, default_uri
from raystudy.tune.adapter import make_searcher
from raystudy.tune.state import FINISHED, TUNE_DIR, fit_outcomes, trial_outcome
from raystudy.tune.stopping import time_budget

FINISHED_RESULT = {"trial_id": "a", "step": 16.0, EVALUATED: 1.0, "done": True}
ASHA_RESULT = {"trial_id": "b", "step": 4.0, "train/loss": 9.0, "done": True}
CUT_RESULT = {"trial_id": "c", "step": 8.0, "train/loss": 9.0, "done": False}


def test_trial_state_tells_the_scheduler_from_an_interruption() -> None:
    assert trial_outcome(FINISHED_RESULT, failed=False) == FINISHED
    assert trial_outcome(ASHA_RESULT, failed=False) == "STOPPED"
    assert trial_outcome(CUT_RESULT, failed=False) == "UNFINISHED"
    assert trial_outcome({}, failed=False) == "UNFINISHED"  # never started
    assert trial_outcome(ASHA_RESULT, failed=True) == "ERROR"
    assert trial_outcome(FINISHED_RESULT, failed=True) == "ERROR"


def results(*rows: tuple[dict, bool]) -> list[SimpleNamespace]:
    return [SimpleNamespace(metrics=dict(m), error=RuntimeError() if e else None) for m, e in rows]


def test_states_count_stopped_trials_apart_and_name_them() -> None:
    grid = results(
        (FINISHED_RESULT, False), (ASHA_RESULT, False), ({**ASHA_RESULT, "trial_id": "d"}, False)
    )
    states, stopped = fit_outcomes(grid)
    assert states == {FINISHED: 1, "STOPPED": 2}
    assert stopped == ["b", "d"]
    states, stopped = fit_outcomes(results((CUT_RESULT, False), (ASHA_RESULT, True), ({}, False)))
    assert states == {"UNFINISHED": 2, "ERROR": 1} and stopped == []


def info_of(study_dir: Path, num_trials: int) -> StudyInfo:
    return StudyInfo("s", study_dir, f"sqlite:///{study_dir / 'unused.db'}", "0", "r", num_trials)


def outcome(states: dict[str, int], num_trials: int, tmp_path: Path) -> StudyOutcome:
    return StudyOutcome(info_of(tmp_path, num_trials), states, 3.0)


def test_a_study_of_finished_and_stopped_trials_is_ok_and_offers_no_resume(
    tmp_path: Path,
) -> None:
    done = outcome({FINISHED: 2, "STOPPED": 2}, 4, tmp_path)
    assert done.ok and done.done == 4
    report = outcome_report(done, tmp_path)
    assert report.exit_code == 0  # the command exits 0
    said = " ".join(" ".join(line.text for line in report.lines).split())
    assert "2 finished, 2 stopped early" in said, said
    assert "2 trials were stopped early by the scheduler (ASHA)" in said, said
    assert STOPPED_TAG in said and "did not finish" not in said and "raystudy resume" not in said

    cut = outcome({FINISHED: 1, "STOPPED": 1, "UNFINISHED": 1, "ERROR": 1}, 4, tmp_path)
    assert not cut.ok
    report = outcome_report(cut, tmp_path)
    assert report.exit_code == 1
    last = report.lines[-1]
    assert last.style == WARNING
    said = " ".join(last.text.split())
    assert "2 of 4 trials did not finish" in said, said  # the stopped one is not among them
    assert f"raystudy resume s --output {tmp_path} --restart-errored" in said, said


def test_optimize_refuses_a_grid_study_before_anything_starts(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from raystudy.cli import app

    refused = CliRunner().invoke(app, ["optimize", str(SMOKE), "--output", str(tmp_path)])
    assert refused.exit_code == 2
    assert "search.method is 'grid'; this command runs optuna searches" in refused.output
    assert not (tmp_path / "smoke").exists()


def experiment_state(tune_dir: Path, trials: list[tuple[str, str, dict]]) -> None:
    """An experiment state as Tune writes it: per trial its JSON state and its run metadata."""
    tune_dir.mkdir(parents=True)
    data = {
        "trial_data": [
            (json.dumps({"trial_id": tid, "status": status}), json.dumps({"last_result": last}))
            for tid, status, last in trials
        ]
    }
    (tune_dir / "experiment_state-2026-11-22_13-11-08.json").write_text(json.dumps(data))


def test_status_counts_stopped_trials_apart_from_done_and_unfinished(tmp_path: Path) -> None:
    info_of(tmp_path, 6).write()
    experiment_state(
        tmp_path / TUNE_DIR,
        [
            ("a", "TERMINATED", FINISHED_RESULT),
            ("b", "TERMINATED", ASHA_RESULT),
            ("c", "RUNNING", CUT_RESULT),  # Ctrl-C: what `resume` continues
            ("d", "TERMINATED", {**CUT_RESULT, "trial_id": "d"}),  # a time budget ended it
            ("e", "ERROR", {}),
        ],
    )
    assert study_status(tmp_path) == {
        FINISHED: 1,
        "STOPPED": 1,
        "RUNNING": 1,
        "UNFINISHED": 1,
        "ERROR": 1,
        "PENDING": 1,
    }


def test_the_study_end_tags_stopped_runs_and_finishes_the_parent(tmp_path: Path) -> None:
    """`_finish` after a study whose trials finished or were stopped by ASHA: the parent run
    FINISHED, the stopped trials' runs KILLED and tagged, a Ctrl-C'd run KILLED untagged."""
    uri = default_uri(tmp_path)
    tracker = StudyTracker.start(uri, "s", tmp_path / "mlartifacts", tags={})
    client = mlflow.MlflowClient(uri)

    def trial_run(trial_id: str, status: str) -> str:
        tags = {ROLE_TAG: TRIAL_ROLE, TRIAL_ID_TAG: trial_id}
        run = client.create_run(tracker.experiment_id, tags=tags, run_name=trial_id)
        if status != "RUNNING":
            client.set_terminated(run.info.run_id, status=status)
        return run.info.run_id

    finished = trial_run("a", "FINISHED")
    stopped = trial_run("b", "KILLED")  # closed by the trial itself (SystemExit)
    stopped_mid_eval = trial_run("d", "RUNNING")  # closed at the study's end
    stacked = [trial_run("e/seed=0", "KILLED"), trial_run("e/seed=1", "FAILED")]  # 1 diverged
    cut = trial_run("c", "KILLED")
    info = StudyInfo("s", tmp_path, uri, tracker.experiment_id, tracker.parent_run_id, 4)
    states = {FINISHED: 1, "STOPPED": 3}
    end = _finish(tracker, info, states, 0.0, ["b", "d", "e"])
    assert end.ok and end.tracking_error is None

    def run(run_id: str) -> mlflow.entities.Run:
        return client.get_run(run_id)

    parent = run(tracker.parent_run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.metrics["study/trials_finished"] == 1
    assert parent.data.metrics["study/trials_stopped"] == 3
    for run_id in (stopped, stopped_mid_eval, stacked[0]):
        assert run(run_id).info.status == "KILLED"
        assert run(run_id).data.tags[STOPPED_TAG] == "asha"
    for run_id in (finished, stacked[1], cut):
        assert STOPPED_TAG not in run(run_id).data.tags
    assert run(cut).info.status == "KILLED"
    tagged = client.search_runs([tracker.experiment_id], equals(STOPPED_TAG, "asha"))
    assert len(tagged) == 3  # what a user filters on


def optuna_spec(name: str, storage: str):
    return load_spec(
        SMOKE,
        tiny(
            name,
            LIGHT,
            "grid={}",
            "search.method=optuna",
            "search.num_samples=2",
            "search.space={model: {beta: {uniform: [1, 8]}}}",
            "search.metric=dis/mig",
            "search.mode=max",
            f"search.storage={storage}",
        ),
        check_data=False,
    )


def test_overwrite_starts_the_optuna_study_in_search_storage_afresh(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'ext_optuna.db'}"
    spec = optuna_spec("ext", storage)
    check_optuna_study(spec, overwrite=False)  # no such storage yet: nothing to refuse
    assert not (tmp_path / "ext_optuna.db").exists()  # ... and none is created by looking
    old = optuna.create_study(study_name="ext", storage=storage, direction="maximize")
    for value in (0.1, 0.2):
        old.tell(old.ask(), value)
    other = optuna.create_study(study_name="other", storage=storage)
    other.tell(other.ask(), 1.0)

    # A new study of that name (another --output) would add to the old one's trials.
    with pytest.raises(StudyError, match=r"already holds an Optuna study named 'ext'.*--overwrite"):
        check_optuna_study(spec, overwrite=False)
    check_optuna_study(spec, overwrite=True)

    study_dir = tmp_path / "studies" / "ext"
    study_dir.mkdir(parents=True)
    searcher, _, _ = make_searcher(spec, study_dir, overwrite=True)
    assert searcher is not None
    assert optuna.load_study(study_name="ext", storage=storage).trials == []
    assert len(optuna.load_study(study_name="other", storage=storage).trials) == 1
    make_searcher(spec, study_dir, overwrite=True)  # an empty study is deleted as well
    assert optuna.load_study(study_name="ext", storage=storage).trials == []


def test_the_time_budget_ends_the_run_as_ctrl_c_does(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tune's handler (installed by tune.run on SIGINT and SIGUSR1) sets an event that ends
    # the run with its trials saved as running, which `resume` continues; Tune's own
    # time_budget_s marked them TERMINATED and a resume skipped them. A stand-in handler:
    ended = threading.Event()
    previous = signal.signal(signal.SIGUSR1, lambda *_: ended.set())
    try:
        started = time.monotonic()
        with time_budget(0.3):
            # Like Tune's loop: handlers run on the main thread between its steps.
            while not ended.is_set() and time.monotonic() - started < 10:
                time.sleep(0.05)
            assert ended.is_set(), "the budget sent no signal"
        assert 0.3 <= time.monotonic() - started < 5
        ended.clear()
        with time_budget(30):  # the run ends first: nothing is sent afterwards
            pass
        with time_budget(None):
            pass
        time.sleep(0.2)
        assert not ended.is_set()
    finally:
        signal.signal(signal.SIGUSR1, previous)
