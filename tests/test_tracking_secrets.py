"""Store passwords: named as `${VAR}` in `tracking.uri`, read from the environment where the
store is used, and written nowhere a study writes (its folder, Tune's state, the MLflow runs).
The end-to-end test runs a study on a real PostgreSQL role that must give its password."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import quote

import mlflow
import pytest
from conftest import fresh_ray
from tiny import LIGHT, SMOKE, tiny
from typer.testing import CliRunner

from raystudy.cli import app
from raystudy.spec.tracking_config import TrackingConfig
from raystudy.spec.url_secrets import (
    UnsetVariableError,
    expand,
    literal_password,
    placeholders,
)
from raystudy.study.folder import StoreUnavailable, StudyInfo
from raystudy.tracking.retry import TrackingRejected, check_reachable

#: Characters a URL would misread if the password were inserted as it is.
PASSWORD = "p@ss:w/rd%4 2"
VAR = "RAYSTUDY_TEST_DB_PASSWORD"


@pytest.mark.parametrize(
    ("url", "written"),
    [
        ("postgresql://me:pw@h/db", True),
        ("http://me:pw@h:5000", True),
        ("postgresql://me@h/db", False),
        ("postgresql://me:${PW}@h/db", False),
        ("postgresql://me:x${PW}@h/db", True),  # part of it written out
        ("sqlite:////tmp/a.db", False),
    ],
)
def test_a_written_out_password_is_told_from_a_variable(url: str, written: bool) -> None:
    assert literal_password(url) is written


def test_expand_reads_the_environment_and_encodes_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sqlalchemy.engine import make_url

    monkeypatch.setenv(VAR, PASSWORD)
    monkeypatch.setenv("RAYSTUDY_TEST_HOST", "db.example")
    url = f"postgresql+psycopg2://me:${{{VAR}}}@${{RAYSTUDY_TEST_HOST}}:5432/db"
    assert placeholders(url) == [VAR, "RAYSTUDY_TEST_HOST"]
    parsed = make_url(expand(url))
    assert (parsed.password, parsed.host, parsed.database) == (PASSWORD, "db.example", "db")
    assert expand("postgresql://me@h/db") == "postgresql://me@h/db"


def test_an_unset_variable_is_named_with_the_host_before_anything_connects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(VAR, raising=False)
    url = f"postgresql+psycopg2://me:${{{VAR}}}@127.0.0.1:1/db"
    with pytest.raises(UnsetVariableError, match=f"names the environment variable {VAR}"):
        expand(url)
    # Through the tracking layer: refused (not "unreachable"), saying where it is missing.
    with pytest.raises(TrackingRejected) as caught:
        check_reachable(url)
    assert f"{VAR}, which is not set on {socket.gethostname()}" in str(caught.value)


def test_run_refuses_an_unset_variable_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    monkeypatch.delenv(VAR, raising=False)
    fresh_ray()
    written = f"tracking.uri=postgresql://me:${{{VAR}}}@127.0.0.1:1/db"
    out = tmp_path / "out"
    ran = CliRunner().invoke(app, ["run", str(SMOKE), "-o", str(out), "--set", written])
    assert ran.exit_code == 2, ran.output
    said = " ".join(ran.output.split())
    assert f"names the environment variable {VAR}, which is not set on" in said, said
    assert "allowed:" not in said  # no other URI is the fix
    assert not out.exists() and not ray.is_initialized()


@pytest.mark.heavy  # a study through Tune on a real PostgreSQL: the fault tier
def test_a_study_on_a_password_protected_database_writes_the_password_nowhere(
    postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg2

    if not postgres.running():
        postgres.start()
    postgres.password_role("keeper", PASSWORD, "sealed")
    with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
        psycopg2.connect(
            host="127.0.0.1", port=postgres.port, user="keeper", password="x", dbname="sealed"
        )
    written = f"postgresql://keeper:${{{VAR}}}@127.0.0.1:{postgres.port}/sealed"
    monkeypatch.setenv(VAR, PASSWORD)
    fresh_ray()  # the study's own Ray cluster, whose workers inherit this environment
    overrides = tiny(
        "sealed", LIGHT, "grid={seed: [0]}", "resources={cpu: 1, gpu: 0}", f"tracking.uri={written}"
    )
    sets = [a for o in overrides for a in ("--set", o)]
    ran = CliRunner().invoke(app, ["run", str(SMOKE), "--output", str(tmp_path), *sets])
    assert ran.exit_code == 0, ran.output
    study_dir = tmp_path / "sealed"
    info = StudyInfo.read(study_dir)
    assert info.tracking_uri == written.replace("postgresql://", "postgresql+psycopg2://")
    status = CliRunner().invoke(app, ["status", "sealed", "--output", str(tmp_path)])
    assert status.exit_code == 0 and "MLflow runs: 1 finished" in status.output, status.output
    # Nowhere in the study folder: spec.yaml, study.json, Tune's state, the artifacts.
    secrets = (PASSWORD.encode(), quote(PASSWORD, safe="").encode())
    files = [p for p in study_dir.rglob("*") if p.is_file()]
    assert len(files) > 10 and any(p.name == "spec.yaml" for p in files)
    for path in files:
        data = path.read_bytes()
        assert not any(s in data for s in secrets), path
    # Nor in any run's params or tags (the parent run's logged spec is a file, checked above).
    client = mlflow.MlflowClient(expand(info.tracking_uri))
    runs = client.search_runs([info.experiment_id])
    assert len(runs) == 2  # the parent and the trial
    for run in runs:
        for value in (*run.data.params.values(), *run.data.tags.values()):
            assert PASSWORD not in value and quote(PASSWORD, safe="") not in value

    # Where the variable is missing, reading the study's runs says which one, and where.
    monkeypatch.delenv(VAR)
    blind = CliRunner().invoke(app, ["status", "sealed", "--output", str(tmp_path)])
    # The store's exit code (docs/studies/commands.md, "Exit codes"), with Tune's counts still
    # shown.
    assert blind.exit_code == StoreUnavailable.exit_code == 4, blind.output
    assert "finished      1" in blind.output
    said = " ".join(blind.output.split())
    assert f"MLflow runs unknown: tracking.uri {info.tracking_uri!r} names the environment" in said
    assert f"variable {VAR}, which is not set on {socket.gethostname()}" in said


def test_a_spec_with_a_written_out_password_is_refused_without_repeating_it(
    tmp_path: Path,
) -> None:
    from raystudy.checks import load_spec
    from raystudy.spec import SpecError

    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntracking: {uri: 'postgresql://me:hunter2@h/db'}\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    said = str(caught.value)
    assert f"{path}: tracking.uri" in said and "holds a password" in said
    assert "hunter2" not in said


SECRET = "Zq9-never-printed"


@pytest.mark.parametrize(
    "template",
    [
        "postgresql://me:${%s}@127.0.0.1:{port}/db",
        "postgresql+psycopg2://me:${%s}@127.0.0.1:{port}/db",
        "http://me:${%s}@127.0.0.1:{port}",
    ],
    ids=["postgresql", "psycopg2", "http"],
)
def test_an_unreachable_store_is_said_without_the_expanded_password(
    template: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(VAR, SECRET)
    with socket.socket() as closed:  # a port nothing listens at
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    uri = (template % VAR).replace("{port}", str(port))
    said: list[str] = []
    runner = CliRunner()
    with caplog.at_level("DEBUG"):
        ran = runner.invoke(app, ["run", str(SMOKE), "-o", str(tmp_path / "o"), "--set",
                                  f"tracking.uri={uri}"])  # fmt: skip
        said.append(ran.output)
        assert ran.exit_code == 4 and "is unreachable" in ran.output, ran.output  # the store
        # a study whose store is that server: every command that reads it
        folder = tmp_path / "o" / "down"
        folder.mkdir(parents=True)
        # study.json holds the URI as the spec made it (its driver named), as `run` writes it
        recorded = TrackingConfig(uri=uri).uri
        assert recorded is not None
        StudyInfo("down", folder, recorded, "1", "0" * 32, 8, 8).write()
        (folder / "spec.yaml").write_text(SMOKE.read_text())
        for command in (["status"], ["analyze"], ["resume"]):
            ran = runner.invoke(app, [*command, "down", "-o", str(tmp_path / "o")])
            said.append(ran.output)
            # without the folder's path, which holds this test's name
            words = " ".join(ran.output.replace(str(tmp_path), "TMP").split())
            assert "is unreachable" in words, (command, ran.output)
            assert ran.exit_code == 4, (command, ran.exit_code)
    said += [r.getMessage() for r in caplog.records]
    said += list(capfd.readouterr())
    said += [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
    assert all(SECRET not in text for text in said)
    assert any(f"${{{VAR}}}" in text for text in said)  # the variable is named, not its value
