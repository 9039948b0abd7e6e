"""What users of Ray, MLflow and Typer expect of a command line, run as they would run it (the
installed `raystudy` script in a subprocess): --version, shell completion, the names a spec can
use (`raystudy list`, `datasets --json`), the spec's JSON Schema and the shipped specs'
yaml-language-server modeline, and the neighbours' variables RAY_ADDRESS and
MLFLOW_TRACKING_URI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml
from fresh_imports import loaded_after
from mlflow.tracking import MlflowClient
from tiny import tiny

from raystudy.checks.listing import KINDS
from raystudy.data import DATASETS
from raystudy.models import ARCHITECTURES, OBJECTIVES
from raystudy.spec.json_schema import MODELINE, SCHEMA_FILE, schema_text
from raystudy.version import RELEASE

# The CLI in processes of its own, as a shell starts it (.ci/run's legs leave them out).
pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[1]
SPACES = sorted((ROOT / "search_spaces").glob("*.yaml"))
SMOKE = ROOT / "search_spaces" / "smoke.yaml"


def raystudy(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    """The installed command, as a shell runs it."""
    exe = shutil.which("raystudy")
    command = [exe] if exe else [sys.executable, "-m", "raystudy.cli"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def test_version_names_the_package_and_its_commit() -> None:
    done = raystudy("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("raystudy 0.1.0"), done.stdout
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["version"] == RELEASE
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    if head.returncode == 0:  # a checkout: the version names its commit
        assert done.stdout.strip() == f"raystudy {RELEASE}+{head.stdout.strip()}", done.stdout
    # It answers at once: what --version runs imports none of the study's stack (it took
    # 12-15 s on the 2-core machine when it did, 2026-12-07).
    code = "from raystudy.cli import app; from raystudy.version import code_version; code_version()"
    heavy = ("torch", "mlflow", "ray", "sklearn", "matplotlib", "scipy")
    assert loaded_after(code, heavy) == []


@pytest.mark.skipif(shutil.which("raystudy") is None, reason="needs the installed script")
def test_bash_completion_completes_commands_and_options() -> None:
    # What the script `raystudy --show-completion bash` installs asks this of the program.
    env = {"_RAYSTUDY_COMPLETE": "complete_bash", "COMP_CWORD": "1"}
    done = raystudy(env={**env, "COMP_WORDS": "raystudy li"})
    assert done.returncode == 0 and done.stdout.split() == ["list"], (done.stdout, done.stderr)
    done = raystudy(env={**env, "COMP_WORDS": "raystudy run --tr", "COMP_CWORD": "2"})
    assert "--tracking-uri" in done.stdout.split(), done.stdout
    shown = raystudy("--show-completion", "bash")
    assert shown.returncode == 0 and "_RAYSTUDY_COMPLETE=complete_bash" in shown.stdout


def test_list_names_every_registered_kind_with_objective_options() -> None:
    done = raystudy("list", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert list(listed) == list(KINDS)
    names = {kind: {e["name"] for e in entries} for kind, entries in listed.items()}
    assert names["objectives"] == set(OBJECTIVES.names())
    assert names["architectures"] == set(ARCHITECTURES.names())
    assert {"bit_resnet50", "dittadi_hues"} <= names["architectures"] | names["splits"]
    beta_vae = next(e for e in listed["objectives"] if e["name"] == "beta_vae")
    assert beta_vae["options"] == {"beta": 1.0} and beta_vae["summary"].startswith("beta-VAE")
    text = raystudy("list", "probes")
    assert text.returncode == 0 and text.stdout.splitlines()[0] == "6 probes:"
    bad = raystudy("list", "objective")
    assert bad.returncode == 2 and "allowed: datasets, splits, objectives" in bad.stderr


def test_datasets_json_is_the_catalogue() -> None:
    done = raystudy("datasets", "--json")
    assert done.returncode == 0, done.stderr
    entries = {e["name"]: e for e in json.loads(done.stdout)}
    assert set(entries) == set(DATASETS.names())
    assert entries["dsprites"]["factors"][0] == ["shape", 3]
    assert entries["dsprites_file"]["needs_file"] is True


def test_the_shipped_schema_is_the_models_and_every_shipped_spec_names_and_passes_it(
    tmp_path: Path,
) -> None:
    shipped = ROOT / "search_spaces" / SCHEMA_FILE
    assert shipped.read_text() == schema_text(), "run `raystudy schema --out " + str(shipped) + "`"
    done = raystudy("schema", "--out", str(tmp_path / "s.json"))
    assert done.returncode == 0 and (tmp_path / "s.json").read_text() == schema_text()
    schema = json.loads(schema_text())
    validator = jsonschema.Draft202012Validator(schema)
    for path in SPACES:
        assert path.read_text().splitlines()[0] == MODELINE, path.name
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
        assert not errors, (path.name, [e.message for e in errors])
    # What an editor then flags: a misspelt field and a value of the wrong type.
    bad = yaml.safe_load(SMOKE.read_text())
    bad["trian"] = bad.pop("train")
    bad["execution"] = {"seeds_per_trial": "two"}
    messages = " ".join(e.message for e in validator.iter_errors(bad))
    assert "'trian' was unexpected" in messages and "'two' is not of type 'integer'" in messages


def test_run_joins_ray_address_when_no_address_is_given(tmp_path: Path) -> None:
    done = raystudy(
        "run", str(SMOKE), "-o", str(tmp_path / "out"), env={"RAY_ADDRESS": "127.0.0.1:1"}
    )
    assert done.returncode == 5  # Ray's exit code
    assert "127.0.0.1:1" in done.stderr and "nothing answers" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_run_takes_mlflow_tracking_uri_where_the_spec_leaves_the_store_open(
    tmp_path: Path,
) -> None:
    store = tmp_path / "elsewhere.db"
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{store}"}
    # A store that refuses the study shows that it was the one used, before anything runs.
    refused = raystudy(
        "run",
        str(SMOKE),
        "-o",
        str(tmp_path / "out"),
        env={"MLFLOW_TRACKING_URI": "sqlite://"},
    )
    assert refused.returncode == 2
    assert refused.stderr.startswith("MLFLOW_TRACKING_URI:"), refused.stderr
    assert "names no database file" in refused.stderr
    # A spec that names its store keeps it: the variable is for specs that leave it null.
    spec = yaml.safe_load(SMOKE.read_text())
    spec["tracking"] = {"uri": "sqlite://"}
    (tmp_path / "named.yaml").write_text(yaml.safe_dump(spec))
    kept = raystudy("run", str(tmp_path / "named.yaml"), "-o", str(tmp_path / "out"), env=env)
    assert kept.returncode == 2 and not kept.stderr.startswith("MLFLOW_TRACKING_URI")
    assert "tracking.uri 'sqlite://'" in kept.stderr and not store.exists()


@pytest.mark.heavy  # a study through Tune: the fault tier
def test_run_logs_to_mlflow_tracking_uri_and_status_reads_it_back(tmp_path: Path) -> None:
    """A spec that leaves its store null logs where MLFLOW_TRACKING_URI says, not in its
    folder, and `status --json` finds the study there."""
    store = tmp_path / "elsewhere.db"
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{store}"}
    sets = [f"--set={item}" for item in tiny("envstore", "grid={seed: [0]}", "model.beta=null")]
    done = raystudy("run", str(SMOKE), "-o", str(tmp_path / "out"), *sets, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MLflow store from MLFLOW_TRACKING_URI" in done.stdout
    experiment = MlflowClient(f"sqlite:///{store}").get_experiment_by_name("envstore")
    assert experiment is not None
    assert not (tmp_path / "out" / "envstore" / "mlflow.db").exists()
    # `status --json`: the same study as data.
    shown = raystudy("status", "envstore", "-o", str(tmp_path / "out"), "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["outcomes"] == {"finished": 1} and data["mlflow_runs"] == {"finished": 1}
    assert data["tracking_uri"] == f"sqlite:///{store}" and data["driver"] is None
    assert data["phases"]["runs"] == 1 and data["phases"]["seconds"]["total"]["wall_s"] > 0


def test_exit_codes_tell_a_missing_study_from_a_mistake(tmp_path: Path) -> None:
    missing = raystudy("status", "nowhere", "-o", str(tmp_path))
    assert missing.returncode == 3 and "is not a raystudy study" in missing.stderr
    typo = raystudy("run", str(tmp_path / "no_such.yaml"), "-o", str(tmp_path))
    assert typo.returncode == 2 and "no_such.yaml" in typo.stderr
    assert raystudy("analyze", "nowhere", "-o", str(tmp_path)).returncode == 3
