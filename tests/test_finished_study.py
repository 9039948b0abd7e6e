"""What users do with a finished study, on one real tiny study (a local Ray cluster, its
sqlite store, its logged models): `raystudy rescore` adds a metric and a probe that give the
values a trial trained with them logs, writes them into the runs and `analyze`'s table, skips
what is done and finishes what a kill left; examples/study_in_a_notebook.ipynb runs on it in a
real Jupyter kernel (nbclient); a copy of its folder is refused until `raystudy relocate`
points it at itself, then reads its own store and loads its models.

Tune-path tests (a study through Tune): in the fault tier."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import mlflow
import mlflow.pytorch
import nbformat
import pytest
import torch
from mlflow.tracking import MlflowClient
from nbclient import NotebookClient
from tiny import ROOT, SMOKE, tiny
from typer.testing import CliRunner

from raystudy.checks import load_spec
from raystudy.cli import app
from raystudy.metrics.probes import probe_implementation
from raystudy.study.driver import run_study
from raystudy.study.folder import StudyInfo
from raystudy.study.rescore import rescore_study
from raystudy.tags import RESCORED_TAG, TRIAL_RUNS, probe_tag
from raystudy.tracking.reader import trial_runs_table
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter, run_trial

SETS = ["grid={seed: [0, 1, 2]}", "model.beta=null", "evaluation.metrics=[mig]"]
SETS += ["evaluation.probes=[]", "execution.log_models=true"]
SEEDS = 3
ADDED = ("sap", "linear")
NOTEBOOK = ROOT / "examples" / "study_in_a_notebook.ipynb"

pytestmark = pytest.mark.heavy


def added_keys(keys: object) -> list[str]:
    return sorted(k for k in keys if k.startswith(("dis/sap", "transfer/")))


@pytest.fixture(scope="module")
def study(ray_local, tmp_path_factory) -> Path:
    spec = load_spec(SMOKE, tiny("rescored", *SETS))
    out = tmp_path_factory.mktemp("studies")
    assert run_study(spec, output=out, verbose=0).ok
    return out / "rescored"


def expected_scores(config, tmp_path: Path) -> dict[str, float]:
    """What a trial of the same config trained with the added metric and probe logs (in this
    process: the same seed, steps and draws)."""
    trained_with = config.model_copy(
        update={
            "evaluation": config.evaluation.model_copy(
                update={"metrics": ["mig", ADDED[0]], "probes": [ADDED[1]]}
            )
        }
    )
    uri = f"sqlite:///{tmp_path / f'ref{config.seed}.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("reference")
    ctx = TrialContext(
        uri, experiment, None, "reference", "t", "t", log_models=False, system_metrics=False
    )
    run_trial(trained_with, ctx, LocalReporter())
    (run,) = client.search_runs([experiment])
    # The trial says what computed its probe (on this CPU: scikit-learn's least squares).
    assert run.data.tags[probe_tag(ADDED[1])] == probe_implementation(ADDED[1], "cpu")
    return {k: run.data.metrics[k] for k in added_keys(run.data.metrics)}


def test_added_scores_equal_a_study_trained_with_them_and_reach_the_runs(
    study: Path, tmp_path: Path
) -> None:
    info = StudyInfo.read(study)
    client = MlflowClient(info.tracking_uri)
    before = client.search_runs([info.experiment_id], TRIAL_RUNS)
    assert len(before) == SEEDS and not any(added_keys(r.data.metrics) for r in before)
    lines: list[str] = []
    outcome = rescore_study(study, [ADDED[0]], [ADDED[1]], progress=lines.append)
    assert sorted(outcome.rescored) == sorted(r.info.run_name for r in before)
    assert not outcome.failed and lines[0].startswith(f"Rescoring {SEEDS} trial runs as Ray tasks")
    assert any(line.startswith(f"{SEEDS}/{SEEDS} ") for line in lines)
    from raystudy.study.folder import load_study_spec

    configs = {t.seed: t for t in load_study_spec(study).trials()}
    for run in client.search_runs([info.experiment_id], TRIAL_RUNS):
        got = {k: run.data.metrics[k] for k in added_keys(run.data.metrics)}
        want = expected_scores(configs[int(run.data.params["seed"])], tmp_path)
        assert set(got) == set(want) and "dis/sap" in got
        # The exported encoder runs other kernels than the trial's module (float32 rounding;
        # tests/test_logged_models.py).
        assert got == pytest.approx(want, rel=1e-5, abs=1e-7)
        assert json.loads(run.data.tags[RESCORED_TAG]) == ["metric:sap", "probe:linear"]
        assert run.data.tags[probe_tag("linear")] == "sklearn LinearRegression float64 on cpu"
        # At the step of the trial's own final scores.
        (mig,) = client.get_metric_history(run.info.run_id, "dis/mig")
        (sap,) = client.get_metric_history(run.info.run_id, "dis/sap")
        assert sap.step == mig.step
    table = trial_runs_table(info.tracking_uri, info.experiment_id)
    assert "metrics.dis/sap" in table.columns and table["metrics.dis/sap"].notna().all()


def test_a_second_rescore_skips_what_is_done_and_finishes_what_is_not(study: Path) -> None:
    info = StudyInfo.read(study)
    rescore_study(study, ["sap"], ["linear"], progress=lambda _: None)  # done, if not yet
    again = rescore_study(study, ["sap"], ["linear"], progress=lambda _: None)
    assert again.rescored == [] and again.already == SEEDS
    # A run a kill left before its tag was written is scored again, and only it.
    client = MlflowClient(info.tracking_uri)
    first = client.search_runs([info.experiment_id], TRIAL_RUNS)[0]
    client.delete_tag(first.info.run_id, RESCORED_TAG)
    finished = rescore_study(study, ["sap"], ["linear"], progress=lambda _: None)
    assert finished.rescored == [first.info.run_name] and finished.already == SEEDS - 1
    # Asking for something new rescores every run again, for that only.
    modular = rescore_study(study, ["modularity"], [], progress=lambda _: None)
    assert len(modular.rescored) == SEEDS
    for run in client.search_runs([info.experiment_id], TRIAL_RUNS):
        assert "dis/modularity" in run.data.metrics
        assert json.loads(run.data.tags[RESCORED_TAG]) == [
            "metric:modularity",
            "metric:sap",
            "probe:linear",
        ]


def test_a_killed_rescore_is_finished_by_the_next_without_scoring_twice(
    study: Path, ray_local
) -> None:
    """`raystudy rescore` SIGKILLed (no cleanup, its lock left behind) once its first run is
    scored; the next rescore scores only the runs the kill left, and every run then holds
    the metric once."""
    address = ray_local.get_runtime_context().gcs_address  # its tasks on this test's Ray
    command = [sys.executable, "-m", "raystudy.cli", "rescore", study.name]
    command += ["-o", str(study.parent), "--metrics", "factor_vae", "--address", address]
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    said: list[str] = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            said.append(line)
            if line.startswith(f"1/{SEEDS} "):  # one run scored, the others not yet
                child.send_signal(signal.SIGKILL)
                break
    finally:
        child.kill()
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL, "".join(said)
    info = StudyInfo.read(study)
    client = MlflowClient(info.tracking_uri)

    def scored() -> set[str]:
        runs = client.search_runs([info.experiment_id], TRIAL_RUNS)
        return {
            r.info.run_name
            for r in runs
            if "metric:factor_vae" in json.loads(r.data.tags.get(RESCORED_TAG, "[]"))
        }

    before = scored()
    assert 1 <= len(before) < SEEDS, "".join(said)
    finished = rescore_study(study, ["factor_vae"], [], progress=lambda _: None)
    assert finished.already == len(before) and not finished.failed
    assert set(finished.rescored).isdisjoint(before)
    assert len(finished.rescored) == SEEDS - len(before) and scored() == set(
        r.info.run_name for r in client.search_runs([info.experiment_id], TRIAL_RUNS)
    )
    for run in client.search_runs([info.experiment_id], TRIAL_RUNS):
        history = client.get_metric_history(run.info.run_id, "dis/factor_vae")
        assert len(history) == 1, (run.info.run_name, history)  # what the kill did not finish
        # was not logged twice


def test_bad_names_and_nothing_asked_are_refused_before_any_work(study: Path) -> None:
    runner = CliRunner()
    out = str(study.parent)
    bad = runner.invoke(app, ["rescore", "rescored", "-o", out, "--metrics", "dcci"])
    assert bad.exit_code == 2 and "unknown metric 'dcci'" in bad.output
    assert "did you mean 'dci'" in bad.output
    none = runner.invoke(app, ["rescore", "rescored", "-o", out])
    assert none.exit_code == 2 and "give --metrics and/or --probes" in none.output
    missing = runner.invoke(app, ["rescore", "nowhere", "-o", out, "--probes", "linear"])
    assert missing.exit_code == 3 and "nowhere" in missing.output  # no such study


def test_the_notebook_runs_on_the_study(study: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAYSTUDY_STUDY", study.name)
    monkeypatch.setenv("RAYSTUDY_OUTPUT", str(study.parent))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(study)}}
    )
    client.execute()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    text = "\n".join(
        o.get("text", "") or o.get("data", {}).get("text/plain", "")
        for c in code
        for o in c.outputs
    )
    assert f"{SEEDS} finished trials" in text
    images = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # the scatter and the traversal
    assert "codes of 4 dimensions" in text  # model.latent_dim of the tiny study


def test_the_shipped_notebook_carries_no_outputs() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(c.get("outputs", []) == [] for c in notebook.cells if c.cell_type == "code")


def test_a_copied_study_is_refused_then_relocated_and_read_whole(study: Path, tmp_path) -> None:
    copy = tmp_path / "after" / study.name
    shutil.copytree(study, copy)
    runner = CliRunner()
    after = str(copy.parent)
    refused = runner.invoke(app, ["status", study.name, "-o", after])
    assert refused.exit_code == 2, refused.output
    said = " ".join(refused.output.split())
    assert "was moved or copied" in said
    assert f"raystudy relocate {study.name} --output {copy.parent}" in said
    done = runner.invoke(app, ["relocate", study.name, "-o", after])
    assert done.exit_code == 0, done.output
    assert f"runs.artifact_uri {SEEDS + 1}" in done.output  # and the study's parent run
    info = StudyInfo.read(copy)
    assert info.study_dir == copy and info.tracking_uri == f"sqlite:///{copy / 'mlflow.db'}"
    assert json.loads((copy / "study.json").read_text())["study_dir"] == str(copy)
    shown = runner.invoke(app, ["status", study.name, "-o", after])
    assert shown.exit_code == 0 and f"MLflow runs: {SEEDS} finished" in shown.output
    # Its logged models load from the copy's artifacts, not the original's.
    client = MlflowClient(info.tracking_uri)
    run = client.search_runs([info.experiment_id], TRIAL_RUNS)[0]
    assert run.info.artifact_uri.startswith(f"file://{copy}/")
    mlflow.set_tracking_uri(info.tracking_uri)
    encoder = mlflow.pytorch.load_model(f"runs:/{run.info.run_id}/model")
    assert encoder(torch.rand(2, 3, 64, 64)).shape == (2, 4)
    again = runner.invoke(app, ["relocate", study.name, "-o", after])
    assert again.exit_code == 0 and "nothing to change" in again.output
