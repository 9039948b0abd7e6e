"""Interrupt a real Optuna-guided study (Ctrl-C to `raystudy optimize`) and resume it (once
from a relocated copy of its folder, the original left in place).

What must survive the interruption: Tune's trial count (num_samples, none lost or doubled),
the finished trials (not run again), the Optuna storage (every trial with its final value) and
the sampler's state, so that the trials drawn after the resume are the ones an uninterrupted
search would have drawn given the earlier results.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import mlflow
import optuna
import pytest
from reliability.faults import start_driver, wait_for_a_finished_trial
from test_study_resume import cli, interrupt_once_a_trial_finishes, trial_runs
from tiny import LIGHT, SMOKE, tiny

from raystudy.checks import load_spec
from raystudy.spec.search_space import define_by_run
from raystudy.study.folder import StudyInfo
from raystudy.study.relocate import relocate_study
from raystudy.study.resume import resume_study
from raystudy.study.status import study_status
from raystudy.tags import AT_STUDY_END, CLOSED_TAG, STOPPED_TAG, TRIAL_ID_TAG
from raystudy.tune.state import FINISHED

NUM_SAMPLES = 4
SPACE = {"model": {"beta": {"uniform": [1, 8]}}}
OVERRIDES = tiny(
    "optresume",
    "train.steps=16",
    LIGHT,
    "grid={}",
    "search.method=optuna",
    f"search.num_samples={NUM_SAMPLES}",
    "search.space={model: {beta: {uniform: [1, 8]}}}",
    "search.metric=dis/mig",
    "search.mode=max",
    "execution.max_concurrent_trials=1",  # one at a time: the interrupt lands mid-study
)


def optuna_trials(study_dir: Path) -> list[optuna.trial.FrozenTrial]:
    storage = f"sqlite:///{study_dir / 'optuna.db'}"
    return optuna.load_study(study_name="optresume", storage=storage).trials


def replayed_params(values: list[float], seed: int) -> list[dict]:
    """The draws of an uninterrupted search: the study's sampler, asked and told in order.

    Trials run one at a time, so trial n is asked after trials 0..n-1 were told their values.
    A sampler rebuilt from scratch on resume would start its random stream again and repeat
    the first draws; one that lost the earlier trials would be told a different history.
    """
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    params = []
    for value in values:
        trial = study.ask()
        define_by_run(trial, SPACE)
        params.append(trial.params)
        study.tell(trial, value)
    return params


# Heavy (60 s of CI's 2 cores): CI keeps the Ctrl-C resume (test_study_resume.py) and the Optuna
# storage (test_study_search.py); the sampler's state across a resume is checked here only.
@pytest.mark.heavy
def test_interrupted_optuna_study_resumes_with_its_sampler_and_storage(
    ray_local, tmp_path: Path
) -> None:
    assert load_spec(SMOKE, OVERRIDES).search.space == SPACE  # the replay samples this space
    sets = [a for o in OVERRIDES for a in ("--set", o)]
    study_dir = tmp_path / "optresume"
    # The driver joins this process's Ray (one Ray start instead of two) and resume runs here:
    # the `raystudy resume` command itself is covered by test_study_resume.
    address = ray_local.get_runtime_context().gcs_address
    output = interrupt_once_a_trial_finishes(
        cli("optimize", str(SMOKE), "--output", str(tmp_path), "--address", address, *sets),
        study_dir,
    )

    info = StudyInfo.read(study_dir)
    before = {r.info.run_id: r for r in trial_runs(info) if r.info.status == "FINISHED"}
    assert 1 <= len(before) < NUM_SAMPLES
    # Ctrl-C is no scheduler's decision: its trials are unfinished, not stopped early.
    assert "stopped early" not in output
    assert "STOPPED" not in study_status(study_dir)
    assert not [r for r in trial_runs(info) if STOPPED_TAG in r.data.tags]
    told_before = {
        t.number: t for t in optuna_trials(study_dir) if t.state == optuna.trial.TrialState.COMPLETE
    }
    # The searcher tells Optuna when Tune has the trial's result; Ctrl-C can land between the
    # run's end in MLflow and that result, and the trial then completes on resume.
    assert len(before) - 1 <= len(told_before) <= len(before)

    # Resumed from a copy made elsewhere and relocated, the original left where it was: the
    # copy's searcher must tell the copy's Optuna storage, and nothing may write the original.
    original = study_dir
    original_optuna = [(t.number, t.state, t.datetime_complete) for t in optuna_trials(original)]
    original_runs = len(trial_runs(info))
    study_dir = Path(shutil.copytree(original, tmp_path / "copied" / "optresume"))
    relocate_study(study_dir)
    info = StudyInfo.read(study_dir)

    outcome = resume_study(study_dir)
    assert outcome.ok, outcome.states
    assert study_status(study_dir) == {FINISHED: NUM_SAMPLES}

    # MLflow: one finished run per trial across the interruption; finished ones not rerun.
    runs = trial_runs(info)
    assert len(runs) == NUM_SAMPLES
    assert len({r.data.tags[TRIAL_ID_TAG] for r in runs}) == NUM_SAMPLES
    assert {r.info.status for r in runs} == {"FINISHED"}
    for run_id, run in before.items():
        again = mlflow.MlflowClient(info.tracking_uri).get_run(run_id)
        assert again.info.end_time == run.info.end_time, run.info.run_name

    # Optuna: every trial once, numbered 0..n-1 with no orphan left RUNNING, each with the
    # final value MLflow recorded for the same parameters.
    trials = optuna_trials(study_dir)
    assert [t.number for t in trials] == list(range(NUM_SAMPLES))
    assert {t.state for t in trials} == {optuna.trial.TrialState.COMPLETE}
    for number, told in told_before.items():  # told once, not again on resume
        assert trials[number].datetime_complete == told.datetime_complete
    by_beta = {float(r.data.params["model.beta"]): r for r in runs}
    for t in trials:
        run = by_beta[t.params["model.beta"]]  # str(float) round-trips exactly
        assert t.value == pytest.approx(run.data.metrics["dis/mig"]), run.info.run_name
    assert len(by_beta) == NUM_SAMPLES, "a redrawn trial: the sampler started over"

    # The sampler continued: the draws after the resume are the uninterrupted search's.
    expected = replayed_params([t.value for t in trials], seed=0)
    assert [t.params for t in trials] == [pytest.approx(p) for p in expected]

    # The original study is as the interruption left it, in Optuna and in MLflow.
    assert [(t.number, t.state, t.datetime_complete) for t in optuna_trials(original)] == (
        original_optuna
    )
    assert len(trial_runs(StudyInfo.read(original))) == original_runs


def kill_once_a_trial_finishes(command: list[str], study_dir: Path) -> None:
    """Run the driver `command` and SIGKILL it (no handler runs) once MLflow holds a finished
    trial of `study_dir`."""
    import signal

    driver = start_driver(command)
    wait_for_a_finished_trial(driver, study_dir)
    driver.send_signal(signal.SIGKILL)
    driver.communicate(timeout=60)
    assert driver.returncode == -signal.SIGKILL, "the driver ended before it was killed"


# heavy (the fault tier): the driver SIGKILLed mid-search, then resumed.
@pytest.mark.heavy
def test_a_killed_optuna_driver_resumes_with_every_trial_told_once(
    ray_local, tmp_path: Path
) -> None:
    sets = [a for o in OVERRIDES for a in ("--set", o)]
    study_dir = tmp_path / "optresume"
    address = ray_local.get_runtime_context().gcs_address
    kill_once_a_trial_finishes(
        cli("optimize", str(SMOKE), "--output", str(tmp_path), "--address", address, *sets),
        study_dir,
    )
    info = StudyInfo.read(study_dir)
    before = {r.info.run_id: r for r in trial_runs(info) if r.info.status == "FINISHED"}
    assert 1 <= len(before) < NUM_SAMPLES

    outcome = resume_study(study_dir)
    assert outcome.ok, outcome.states
    assert study_status(study_dir) == {FINISHED: NUM_SAMPLES}
    everything = trial_runs(info)
    runs = [r for r in everything if r.info.status == "FINISHED"]
    assert len({r.data.tags[TRIAL_ID_TAG] for r in runs}) == len(runs) == NUM_SAMPLES
    # A trial the driver had started but not yet recorded when it was killed is drawn anew
    # on resume; its first run was closed at the study's end, not left RUNNING.
    for run in everything:
        if run.info.status != "FINISHED":
            assert run.info.status == "KILLED" and run.data.tags[CLOSED_TAG] == AT_STUDY_END
    for run_id, run in before.items():  # not trained again
        again = mlflow.MlflowClient(info.tracking_uri).get_run(run_id)
        assert again.info.end_time == run.info.end_time, run.info.run_name
    # Optuna: each of the study's trials completed once with MLflow's value; a trial the kill
    # left RUNNING in the storage (asked, never told) is closed, not left to look pending.
    trials = optuna_trials(study_dir)
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) == NUM_SAMPLES
    assert not [t for t in trials if t.state == optuna.trial.TrialState.RUNNING]
    by_beta = {float(r.data.params["model.beta"]): r for r in runs}
    for t in complete:
        run = by_beta[t.params["model.beta"]]
        assert t.value == pytest.approx(run.data.metrics["dis/mig"]), run.info.run_name
