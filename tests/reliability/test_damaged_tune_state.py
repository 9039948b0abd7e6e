"""A study whose Tune storage is damaged (its experiment state, a trial's params.json cut
short): every command that needs the file says which file and what still works, before Ray
starts; `analyze` still reads the finished trials from MLflow. A real study, really damaged."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tiny import LIGHT, SMOKE, tiny

from raystudy.checks import load_spec
from raystudy.study.driver import run_study
from raystudy.tune.state import BACKUP_DIR, TUNE_DIR
from raystudy.tune.state_backup import reads_whole

pytestmark = pytest.mark.heavy  # the fault tier: one small study, then the commands on it


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "raystudy.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "400"},
    )


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import ray
    from conftest import fresh_ray

    fresh_ray()
    output = tmp_path_factory.mktemp("studies")
    spec = load_spec(
        SMOKE, tiny("damaged", LIGHT, "grid={seed: [0, 1]}", "resources={cpu: 1, gpu: 0}")
    )
    outcome = run_study(spec, output=output, verbose=0)
    ray.shutdown()
    assert outcome.ok, outcome.states
    return output / "damaged"


def _cut_short(path: Path) -> None:
    text = path.read_text()
    path.write_text(text[: len(text) // 2])


@pytest.fixture
def damaged(finished: Path) -> Path:
    """The finished study's Tune storage put back as it was after each test."""
    backup = finished.parent / "tune-backup"
    shutil.copytree(finished / TUNE_DIR, backup)
    yield finished
    shutil.rmtree(finished / TUNE_DIR)
    backup.rename(finished / TUNE_DIR)


def test_a_damaged_experiment_state_is_named_and_analyze_reads_mlflow(damaged: Path) -> None:
    [state] = (damaged / TUNE_DIR).glob("experiment_state-*.json")
    _cut_short(state)
    shutil.rmtree(damaged / TUNE_DIR / BACKUP_DIR)  # a study with no whole copy kept
    out = str(damaged.parent)
    status = cli("status", "damaged", "-o", out)
    said = " ".join((status.stdout + status.stderr).split())
    assert status.returncode == 2 and str(state) in said and "Traceback" not in said, said
    assert "MLflow runs: 2 finished" in said  # what the store holds is still shown
    resumed = cli("resume", "damaged", "-o", out)
    said = " ".join((resumed.stdout + resumed.stderr).split())
    assert resumed.returncode == 2 and str(state) in said and "raystudy analyze damaged" in said
    assert "Traceback" not in said and "Started a local Ray" not in said, said
    analyzed = cli("analyze", "damaged", "-o", out)
    assert analyzed.returncode == 0, analyzed.stdout + analyzed.stderr
    assert "Runs: 2 finished" in analyzed.stdout


def test_resume_puts_back_the_last_whole_copy_of_a_damaged_state(damaged: Path) -> None:
    tune_dir = damaged / TUNE_DIR
    [state] = tune_dir.glob("experiment_state-*.json")
    kept = tune_dir / BACKUP_DIR / state.name
    assert reads_whole(kept)  # kept while the study ran (perhaps a save before the last)
    _cut_short(state)
    out = str(damaged.parent)
    status = cli("status", "damaged", "-o", out)
    said = " ".join((status.stdout + status.stderr).split())
    assert status.returncode == 2 and "`raystudy resume damaged` puts back" in said, said
    resumed = cli("resume", "damaged", "-o", out)
    said = " ".join((resumed.stdout + resumed.stderr).split())
    assert resumed.returncode == 0, said
    assert f"Warning: Tune's saved state in {tune_dir} was damaged" in said, said
    assert state.name in said and "2 finished" in said, said
    assert reads_whole(state)


def test_a_damaged_params_json_is_named_by_from_tune(damaged: Path) -> None:
    params = sorted((damaged / TUNE_DIR).glob("*/params.json"))[0]
    _cut_short(params)
    out = str(damaged.parent)
    from_tune = cli("analyze", "damaged", "-o", out, "--from-tune")
    said = " ".join((from_tune.stdout + from_tune.stderr).split())
    assert from_tune.returncode != 0 and str(params) in said and "Traceback" not in said, said
    analyzed = cli("analyze", "damaged", "-o", out)
    assert analyzed.returncode == 0 and "Runs: 2 finished" in analyzed.stdout
