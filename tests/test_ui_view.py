"""`raystudy ui`'s view of a study (`raystudy.tracking.ui_view`) on a real sqlite MLflow store:
the experiment is marked model training, and the saved view names the columns the study's
trial runs logged, in the shape MLflow 3.17.2's UI reads (its bundle, see the module).

The heavy test opens that view in a real browser (headless chromium) against `raystudy ui`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from raystudy.models.params import trial_params
from raystudy.spec import TrialConfig
from raystudy.study.folder import StudyInfo
from raystudy.tags import EXPERIMENT_KIND_TAG, MODEL_TRAINING_KIND, TRIAL_RUNS
from raystudy.tracking.study_run import StudyTracker, default_uri
from raystudy.tracking.trial_run import TrialRun
from raystudy.tracking.ui_view import PARAM_COLUMNS, view_tag, write_study_view

# `raystudy ui` and a tracking server in processes of their own.
pytestmark = pytest.mark.processes

#: (objective, beta, seed) of each trial, and the scores it logs.
TRIALS = [("beta_vae", 1.0, 0), ("beta_vae", 4.0, 1), ("factor_vae", None, 2)]


def _scores(i: int) -> dict[str, float]:
    return {
        "dis/dci_d": 0.1 * (i + 1),
        "dis/mig": 0.05,
        "eval/elbo": 3.0,
        "transfer/iid/gbt/mae": 0.5 - 0.1 * i,
        "transfer/ood/mlp/mae": 0.7,
        "transfer/iid/gbt/mae/shape": 0.2,  # per factor: not a column
        "transfer/iid/gbt/r2": 0.9,
    }


def _study(tmp_path: Path, name: str, scores: bool = True, uri: str | None = None) -> StudyInfo:
    """A study folder whose store (`uri`, default: sqlite in the folder) holds a parent run
    and TRIALS nested under it, written by raystudy's own writers."""
    study_dir = tmp_path / name
    study_dir.mkdir()
    uri = uri or default_uri(study_dir)
    tracker = StudyTracker.start(uri, name, study_dir / "mlartifacts", tags={})
    for i, (objective, beta, seed) in enumerate(TRIALS):
        model = {"objective": objective} | ({"beta": beta} if beta is not None else {})
        config = TrialConfig(dataset={"name": "dsprites"}, model=model, seed=seed)
        run = TrialRun.open(
            uri,
            tracker.experiment_id,
            f"t{i}",
            f"trial_{i}_{objective}",
            params=trial_params(config),
            tags={},
            parent_run_id=tracker.parent_run_id,
        )
        if scores:
            run.log_metrics(_scores(i), step=10)
        run.finish("FINISHED")
    info = StudyInfo(name, study_dir, uri, tracker.experiment_id, tracker.parent_run_id, 3)
    info.write()
    return info


def _kind(client: MlflowClient, info: StudyInfo) -> str | None:
    return client.get_experiment(info.experiment_id).tags.get(EXPERIMENT_KIND_TAG)


def _view(info: StudyInfo) -> dict:
    tags = MlflowClient(info.tracking_uri).get_experiment(info.experiment_id).tags
    envelope = json.loads(tags[view_tag("raystudy")])
    return {**envelope, "state": json.loads(envelope["state"])}


EXPECTED = [
    "params.`model.objective`",
    "params.`model.beta`",
    "params.`train.input_noise`",
    "params.`seed`",
    "metrics.`dis/dci_d`",
    "metrics.`transfer/iid/gbt/mae`",
    "metrics.`transfer/ood/mlp/mae`",
]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> StudyInfo:
    """A study whose trials have logged their params but no scores yet (one sqlite store for
    this module's fast tests: each new store costs seconds of schema migration)."""
    return _study(tmp_path_factory.mktemp("studies"), "s", scores=False)


def test_ui_marks_the_experiment_and_saves_the_columns_its_trials_logged(study: StudyInfo) -> None:
    client = MlflowClient(study.tracking_uri)
    assert _kind(client, study) == MODEL_TRAINING_KIND  # a new study's experiment is made so
    # A study from before the tag gets it from `raystudy ui`.
    client.delete_experiment_tag(study.experiment_id, EXPERIMENT_KIND_TAG)
    view = write_study_view(study.tracking_uri, study.experiment_id, study.name)
    assert _kind(client, study) == MODEL_TRAINING_KIND
    state = _view(study)["state"]
    assert state["selectedColumns"] == EXPECTED[:4] == view.columns  # no scores logged yet
    # No score to order by: by run name, which lists every run flat as well.
    assert (state["orderByKey"], state["orderByAsc"]) == ("tags.`mlflow.runName`", True)

    # The trials are scored: `raystudy ui` again rewrites the same view with their columns.
    for run in client.search_runs([study.experiment_id], TRIAL_RUNS):
        i = int(run.info.run_name.split("_")[1])
        client.log_batch(run.info.run_id, [Metric(k, v, 0, 10) for k, v in _scores(i).items()])
    view = write_study_view(study.tracking_uri, study.experiment_id, study.name)
    saved = _view(study)
    # The envelope the UI's saved views read: name, createdAt (ms), updatedAt, state (a string).
    assert saved["name"] == "raystudy: s"
    assert isinstance(saved["createdAt"], int) and saved["createdAt"] > 1.7e12
    state = saved["state"]
    assert state["selectedColumns"] == EXPECTED == view.columns == state["columnOrder"]
    # Ordered by DCI-D, best first: the table lists every trial run flat (see ui_view).
    assert (state["orderByKey"], state["orderByAsc"]) == ("metrics.`dis/dci_d`", False)
    assert view.url(5123) == (
        f"http://127.0.0.1:5123/#/experiments/{study.experiment_id}/runs"
        "?workflowType=machine_learning&viewStateShareKey=raystudy"
    )
    tags = client.get_experiment(study.experiment_id).tags
    assert [k for k in tags if "sharedViewState" in k] == [view_tag("raystudy")]
    # ...and that order is one MLflow's store answers: the trials by DCI-D, the parent last.
    runs = client.search_runs([study.experiment_id], order_by=["metrics.`dis/dci_d` DESC"])
    names = [r.info.run_name for r in runs]
    assert names == ["trial_2_factor_vae", "trial_1_beta_vae", "trial_0_beta_vae", "s"]


def test_ui_names_the_store_that_lacks_the_study_before_starting_a_server(
    study: StudyInfo, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from raystudy.cli import app

    (tmp_path / "gone").mkdir()
    # study.json pointing at a store without its experiment.
    StudyInfo("gone", tmp_path / "gone", study.tracking_uri, "777", "abc", 1).write()
    result = CliRunner().invoke(app, ["ui", "gone", "-o", str(tmp_path), "--port", "1"])
    assert result.exit_code == 4, result.output  # the store refuses
    assert study.tracking_uri in result.output and "No Experiment with id=777" in result.output
    assert "MLflow UI for" not in result.output


def test_a_study_on_a_tracking_server_gets_its_view_there_and_the_servers_url(
    tmp_path: Path,
) -> None:
    # MLflow cannot serve a UI over another server: the server's own UI is the one to open.
    from mlflow_server import MlflowServer
    from typer.testing import CliRunner

    from raystudy.cli import app

    server = MlflowServer(tmp_path / "server").start()
    try:
        info = _study(tmp_path, "remote", uri=server.url)
        started = time.monotonic()
        result = CliRunner().invoke(app, ["ui", "remote", "-o", str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert time.monotonic() - started < 30  # returned: no UI process of its own
        said = " ".join(result.output.split())
        assert f"on the MLflow server at {server.url}" in said, said
        assert "MLflow UI for" not in said
        url = f"{server.url}/#/experiments/{info.experiment_id}/runs"
        assert f"{url}?workflowType=machine_learning&viewStateShareKey=raystudy" in said
        assert _view(info)["state"]["selectedColumns"][: len(EXPECTED)] == EXPECTED
        with urllib.request.urlopen(server.url, timeout=10) as page:  # the UI it names
            assert page.status == 200
    finally:
        server.stop()


def test_the_param_columns_are_keys_a_trial_logs() -> None:
    config = TrialConfig(dataset={"name": "dsprites"}, model={"objective": "beta_vae"})
    assert set(PARAM_COLUMNS) <= set(trial_params(config))


# --- the real UI in a real browser -------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: Headless, as root in a container; 30 s of virtual time lets the page's requests settle.
CHROMIUM_FLAGS = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu"]
CHROMIUM_FLAGS += ["--window-size=1600,1000", "--virtual-time-budget=30000"]


def _text(dom: str) -> str:
    """The page's visible text, cells separated by ' | '."""
    dom = re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)
    return re.sub(r"(\s*\|\s*)+", " | ", re.sub(r"<[^>]+>", " | ", dom))


@pytest.mark.heavy
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH to load the MLflow UI with")
def test_raystudy_ui_opens_the_trial_runs_with_their_columns(tmp_path: Path) -> None:
    _study(tmp_path, "s")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "ui.out"
    with out.open("w") as stdout:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "raystudy.cli",
                "ui",
                "s",
                "-o",
                f"{tmp_path}",
                f"--port={port}",
            ],
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, "raystudy ui exited"
            assert time.monotonic() < deadline, "the UI never answered"
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).close()
                break
            except OSError:
                time.sleep(0.5)
        url = re.search(r"http://\S+viewStateShareKey=\S+", out.read_text()).group(0)
        dom = subprocess.run(
            [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium'}", "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
        text = _text(dom)
        assert "Model training" in text and " | Runs | " in text, text[:2000]
        assert "raystudy: s" in text, "the saved view is not open"
        assert "Sort: dis/dci_d" in text
        headers = ["model.objective", "model.beta", "train.input_noise", "seed", "dis/dci_d"]
        headers += ["transfer/iid/gbt/mae", "transfer/ood/mlp/mae"]
        for header in headers:
            assert f" | {header} | " in text, header
        for hidden in ["dis/mig", "eval/elbo", "transfer/iid/gbt/r2", "train.lr"]:
            assert f" | {hidden} | " not in text, hidden
        # Every trial run is a row, best DCI-D first, the study's parent run last.
        # (Each name is looked for after the one before: " | s | " is also the page's title.)
        at = 0
        for name in ("trial_2_factor_vae", "trial_1_beta_vae", "trial_0_beta_vae", "s"):
            at = text.find(f" | {name} | ", at)
            assert at >= 0, (name, text[:3000])
        assert "4 | matching runs" in text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
