"""`raystudy analyze` on a real tiny study (2 trials through Ray Tune and MLflow), with one
failed and one running trial added to its store: files, figures, the report in a headless
browser, the parent MLflow run, and the per-trial artifacts."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image
import mlflow
import pandas as pd
import pytest
from tiny import SMOKE, tiny
from typer.testing import CliRunner

from raystudy.analysis import load
from raystudy.analysis.tables.correlations import COLUMNS
from raystudy.checks import load_spec
from raystudy.cli import app
from raystudy.study.driver import run_study
from raystudy.study.folder import StudyInfo
from raystudy.tags import ARTIFACT_ERROR_TAG, ERROR_TAG, PARENT_TAG, ROLE_TAG, STUDY_TAG, TRIAL_ROLE

NAME = "tinyan"
FIGURES = {
    "disentanglement_by_supervision.png",
    "unsupervised_vs_disentanglement_heatmap.png",
    "transfer_vs_dci.png",
    "input_noise_effect.png",
    "elbo_recon_vs_disentanglement.png",
    "per_factor_transfer.png",
    # two objectives and two metrics (mig, dci): Locatello et al.'s figures apply
    "metric_agreement.png",
    "disentanglement_by_objective.png",
}
CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)

# Every test here reads one study run through Tune (the fixture): the fault tier.
pytestmark = pytest.mark.heavy


def _add_unfinished_runs(info: StudyInfo) -> None:
    """What a crashed and a still-running trial leave in the store (metrics partial or none)."""
    client = mlflow.MlflowClient(info.tracking_uri)
    for name, status, metrics in (
        ("002_crashed", "FAILED", {"dis/dci_d": 0.5}),
        ("003_running", "RUNNING", {}),
    ):
        tags = {ROLE_TAG: TRIAL_ROLE, STUDY_TAG: NAME, PARENT_TAG: info.parent_run_id}
        if status == "FAILED":
            tags[ERROR_TAG] = "RuntimeError: out of memory"
        run = client.create_run(info.experiment_id, run_name=name, tags=tags)
        client.log_param(run.info.run_id, "model.objective", "beta_vae")
        for key, value in metrics.items():
            client.log_metric(run.info.run_id, key, value)
        if status != "RUNNING":
            client.set_terminated(run.info.run_id, status=status)


@pytest.fixture(scope="module")
def analysed(ray_local, tmp_path_factory: pytest.TempPathFactory):
    output = tmp_path_factory.mktemp("studies")
    grid = "grid={model: [{objective: beta_vae, beta: 4}, {objective: ada_gvae, beta: 1}]}"
    outcome = run_study(load_spec(SMOKE, tiny(NAME, grid)), output=output, verbose=0)
    assert outcome.ok, outcome.states
    info = StudyInfo.read(output / NAME)
    _add_unfinished_runs(info)
    result = CliRunner().invoke(
        app, ["analyze", NAME, "--output", str(output), "--by", "model", "--bootstrap", "200"]
    )
    assert result.exit_code == 0, result.output
    return output, info, result.output


def test_analyze_reports_failed_and_running_trials_and_analyses_the_finished(analysed) -> None:
    output, _, printed = analysed
    assert "Runs: 2 finished, 1 failed, 1 running" in printed
    assert "not analysed: 002_crashed (failed: RuntimeError: out of memory)" in printed
    assert "not analysed: 003_running (running)" in printed
    assert "transfer/ood2_a/gbt/mae" in printed and "dci_d" in printed
    folder = output / NAME / "analysis"
    table = pd.read_csv(folder / "correlations.csv")
    assert list(table.columns) == COLUMNS
    # two finished trials: every cell counts them, and is blank (too few for a correlation)
    assert set(table.loc[table["group"] == "all", "n"]) == {2}
    assert table[["rho", "ci_low", "ci_high"]].isna().all().all()
    assert {"all", "supervision=weak", "model.objective=beta_vae"} <= set(table["group"])
    assert (folder / "selection.csv").is_file()
    results = pd.read_parquet(folder / "results.parquet")
    assert sorted(results["status"]) == ["FAILED", "FINISHED", "FINISHED", "RUNNING"]
    notebook = load(NAME, output=output)
    assert list(notebook.columns) == list(results.columns) and len(notebook) == 4
    assert set(notebook["supervision"]) == {"unsupervised", "weak"}


def test_an_unknown_axis_fails_saying_which_parameters_vary(analysed) -> None:
    output, _, _ = analysed
    result = CliRunner().invoke(app, ["analyze", NAME, "--output", str(output), "--by", "nope"])
    assert result.exit_code == 2
    assert "--by 'nope' names no parameter" in result.output
    assert "model.objective" in result.output


def test_every_figure_is_a_png_matplotlib_reads_back(analysed) -> None:
    output, _, _ = analysed
    folder = output / NAME / "analysis"
    assert {p.name for p in folder.glob("*.png")} == FIGURES
    for name in FIGURES:
        path = folder / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        pixels = matplotlib.image.imread(path)
        assert pixels.ndim == 3 and min(pixels.shape[:2]) > 200, (name, pixels.shape)


def test_the_report_is_self_contained_and_on_the_parent_run(analysed) -> None:
    output, info, _ = analysed
    report = (output / NAME / "analysis" / "report.html").read_text()
    links = re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", report, re.I)
    assert links and all(v.startswith("data:image/png;base64,") for v in links)
    assert not re.search(r"url\(|@import|<script|<link|<iframe", report, re.I)
    assert "2 of 2 planned trials finished" in report and "002_crashed" in report
    assert "name: tinyan" in report  # the spec
    client = mlflow.MlflowClient(info.tracking_uri)
    logged = {a.path for a in client.list_artifacts(info.parent_run_id, "analysis")}
    expected = {"report.html", "results.parquet", "correlations.csv", "selection.csv"} | FIGURES
    assert {f"analysis/{n}" for n in expected} <= logged
    local = Path(client.download_artifacts(info.parent_run_id, "analysis/report.html"))
    assert local.read_text() == report


def test_each_trial_logs_traversals_and_a_dci_hinton_diagram(analysed) -> None:
    _, info, _ = analysed
    client = mlflow.MlflowClient(info.tracking_uri)
    runs = client.search_runs([info.experiment_id], "attributes.status = 'FINISHED'")
    trials = [r for r in runs if r.data.tags.get(ROLE_TAG) == TRIAL_ROLE]
    assert len(trials) == 2
    for run in trials:
        paths = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {
            "reconstructions.png",
            "traversals.png",
            "traversals.gif",
            "dci_importance.png",
        } <= paths
        assert ARTIFACT_ERROR_TAG not in run.data.tags
        hinton = Path(client.download_artifacts(run.info.run_id, "dci_importance.png"))
        assert matplotlib.image.imread(hinton).ndim == 3


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium is not installed (apt-get install -y chromium; .ci/run does it)",
)
def test_the_report_renders_offline_in_headless_chromium(analysed, tmp_path: Path) -> None:
    output, _, _ = analysed
    report = output / NAME / "analysis" / "report.html"
    shot = tmp_path / "report.png"
    done = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1400,2000",
            f"--screenshot={shot}",
            "--dump-dom",
            report.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    # the parsed document holds the tables and figures, as the browser built them
    assert dom.count("<table") >= 4, dom[:2000]
    for heading in ("Runs", "Rank correlations with OOD transfer", "Model selection", "Figures"):
        assert f"<h2>{heading}" in dom, heading
    assert "002_crashed" in dom and "003_running" in dom
    assert dom.count("<img") == len(FIGURES)
    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[1] >= 1000 and pixels.std() > 0.05  # a page, not a blank screen
