"""cluster.yaml and the on-prem example pass Ray's own config preparation and validation."""

from __future__ import annotations

import copy
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

from raystudy.spec import TrackingConfig

ROOT = Path(__file__).resolve().parents[1]


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("path", [ROOT / "cluster.yaml", ROOT / "tests/clusters/onprem.yaml"])
def test_cluster_configs_validate_offline(path: Path) -> None:
    config = prepare_config(load(path))
    validate_config(config)
    assert config["cluster_name"].startswith("raystudy")


def test_cluster_yaml_has_integer_gpus_a_head_without_trials_and_no_credentials() -> None:
    raw = (ROOT / "cluster.yaml").read_text()
    config = load(ROOT / "cluster.yaml")
    types = config["available_node_types"]
    assert types[config["head_node_type"]]["resources"]["CPU"] == 0
    gpus = [t["resources"].get("GPU") for t in types.values() if "GPU" in t["resources"]]
    assert gpus and all(isinstance(g, int) for g in gpus)
    assert "constraints.txt" in " ".join(config["setup_commands"])
    assert "mlflow server" in " ".join(config["head_start_ray_commands"])
    for secret in ("aws_access_key_id", "aws_secret_access_key", "AKIA", "password"):
        assert secret not in raw


def test_validation_catches_what_the_schema_alone_would_miss() -> None:
    config = load(ROOT / "cluster.yaml")
    fractional = copy.deepcopy(config)
    fractional["available_node_types"]["gpu_a10g"]["resources"]["GPU"] = 0.5
    with pytest.raises(Exception, match="integer"):
        validate_config(prepare_config(fractional))
    wrong_head = copy.deepcopy(config)
    wrong_head["head_node_type"] = "gpu_head"
    with pytest.raises(ValueError, match="head_node_type"):
        validate_config(prepare_config(wrong_head))


def _server_command(config: dict) -> list[str]:
    (line,) = [c for c in config["head_start_ray_commands"] if "mlflow server" in c]
    return shlex.split(line.split("&&", 1)[1])


def test_head_serves_mlflow_over_a_postgres_store_it_sets_up() -> None:
    config = load(ROOT / "cluster.yaml")
    setup = config["head_setup_commands"]
    assert any("apt-get install" in c and "postgresql" in c.split() for c in setup)
    assert any("createdb" in c and " mlflow" in c for c in setup)
    assert any("raystudy[postgres]" in c for c in setup)  # psycopg2 for the server
    assert any("systemctl start postgresql" in c for c in config["head_start_ray_commands"])
    words = _server_command(config)
    # MLflow 3's job runner off (MLFLOW_SERVER_ENABLE_JOB_EXECUTION, read by mlflow.server).
    assert "MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false" in words
    store = words[words.index("--backend-store-uri") + 1]
    # The store URI as a study spec would take it: PostgreSQL, its driver named.
    assert TrackingConfig(uri=store).uri == store and store.startswith("postgresql+psycopg2:")
    assert words[words.index("--artifacts-destination") + 1].startswith("/mnt/shared/")


def test_every_node_command_is_valid_bash() -> None:
    config = load(ROOT / "cluster.yaml")
    keys = [k for k in config if k.endswith("_commands")]
    for key in keys:
        for command in config[key]:
            checked = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True)
            assert checked.returncode == 0, (key, command, checked.stderr)


def test_head_indexes_the_trial_id_tag_once_the_server_made_its_tables(postgres) -> None:
    """The head's index command, run for real against a PostgreSQL database `mlflow` whose
    tables MLflow made (psql reaching it through PGHOST/PGPORT, as the head's default socket)."""
    import os

    import mlflow
    import sqlalchemy

    from raystudy.tracking.trial_index import TRIAL_ID_INDEX, TRIAL_ID_INDEX_SQL

    config = load(ROOT / "cluster.yaml")
    (line,) = [c for c in config["head_start_ray_commands"] if TRIAL_ID_INDEX in c]
    assert TRIAL_ID_INDEX_SQL.replace("CREATE INDEX", "CREATE INDEX CONCURRENTLY") in line
    if not postgres.running():
        postgres.start()
    uri = postgres.create_database("mlflow")
    mlflow.MlflowClient(uri).search_experiments()  # the server's start: MLflow's tables
    env = {
        **os.environ,
        "PGHOST": "127.0.0.1",
        "PGPORT": str(postgres.port),
        "PGUSER": postgres.user,
        "PATH": f"{postgres.bin_dir}:{os.environ['PATH']}",
        "HOME": str(postgres.root),  # its log goes to ~/mlflow-index.log
    }
    done = subprocess.run(
        ["bash", "-c", line.rstrip().removesuffix("&")], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done
    engine = sqlalchemy.create_engine(uri)
    query = sqlalchemy.text("SELECT indexdef FROM pg_indexes WHERE indexname = :n")
    with engine.connect() as con:
        assert "WHERE" in con.execute(query, {"n": TRIAL_ID_INDEX}).scalar_one()
    engine.dispose()


@pytest.mark.parametrize("path", [ROOT / "cluster.yaml", ROOT / "tests/clusters/onprem.yaml"])
def test_every_node_starts_ray_with_token_authentication(path: Path) -> None:
    config = load(path)
    starts = [
        command
        for key in ("head_start_ray_commands", "worker_start_ray_commands")
        for command in config[key]
        if "ray start" in command
    ]
    assert len(starts) == 2
    for command in starts:
        # what the shell has exported when it reaches `ray start`
        before = command[: command.index("ray start")]
        env = subprocess.run(
            ["bash", "-c", f"{before.rstrip(' ;&')} ; echo $RAY_AUTH_MODE"],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin"},
        )
        assert env.stdout.strip().splitlines()[-1] == "token", command
    # every node gets the token that `ray get-auth-token --generate` wrote where `ray up` runs
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    # and the driver's shell on the head has the mode (raystudy run --address auto)
    assert any("export RAY_AUTH_MODE=token' >> ~/.bashrc" in c for c in config["setup_commands"])
