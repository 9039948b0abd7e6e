"""Bad command-line input and broken study folders: each is refused with a message naming the
flag or file, what is wrong and what is allowed, before the study folder, Ray or an MLflow run
exists; and a study that fails while starting leaves nothing that blocks the next attempt.

Most checks here fail before Ray starts; the two that need a cluster share the module's one.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import mlflow
import pytest
from conftest import fresh_ray
from tiny import LIGHT, SMOKE, tiny
from typer.testing import CliRunner

from raystudy.cli import app
from raystudy.study.folder import StudyInfo, check_study_dir
from raystudy.tracking.study_run import StudyTracker, default_uri

#: One trial, scored by MIG alone, no probes: a study that runs in seconds.
ONE = ["grid={seed: [0]}", "evaluation.probes=[]", "resources={cpu: 1, gpu: 0}", LIGHT]


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    # A user mistake is a message (exit 2), never a Python traceback (exit 1 with an exception).
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, " ".join(result.output.split())  # unwrap the terminal's line breaks


def run_args(name: str, output: Path, *overrides: str, address: str | None = None) -> list[str]:
    sets = [a for o in tiny(name, *ONE, *overrides) for a in ("--set", o)]
    where = ["--address", address] if address is not None else []
    return ["run", str(SMOKE), "--output", str(output), *where, *sets]


def no_ray() -> None:
    import ray

    assert not ray.is_initialized(), "Ray started for a study that was refused"


# --- before Ray: the output folder, the tracking store, the address, plan's numbers ---------


@pytest.mark.parametrize("where", ["a file", "/proc"])
def test_an_output_that_cannot_hold_a_study_is_refused_before_ray(
    tmp_path: Path, where: str
) -> None:
    if where == "a file":
        output = tmp_path / "afile"
        output.write_text("keep me\n")
        words = ["is a file, not a folder"]
    else:
        output = Path("/proc/raystudy-nope")
        words = ["cannot create"]
    fresh_ray()  # a shared test cluster of an earlier module in this process
    code, said = invoke(*run_args("s", output))
    assert code == 2, said
    assert f"--output {output}" in said, said
    for word in words:
        assert word in said, said
    no_ray()
    if where == "a file":
        assert output.read_text() == "keep me\n"
    assert not output.is_dir()


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        # a scheme MLflow knows, whose database driver is not installed here
        ("mysql://nobody@127.0.0.1:1/db", ["needs a package", "MySQLdb"]),
        # a database whose driver is installed (psycopg2, the `postgres` extra), not running
        ("postgresql://nobody@127.0.0.1:1/db", ["is unreachable", "Connection refused"]),
        ("http://127.0.0.1:1", ["is unreachable", "Connection refused"]),
    ],
)
def test_a_tracking_store_mlflow_cannot_use_is_refused_before_the_study_folder(
    tmp_path: Path, uri: str, words: list[str]
) -> None:
    fresh_ray()
    code, said = invoke(*run_args("s", tmp_path, f"tracking.uri={uri}"))
    assert code == 4, said  # the store's exit code
    # postgresql:// is read as postgresql+psycopg2:// (the driver raystudy installs)
    assert uri.replace("postgresql://", "postgresql+psycopg2://") in said, said
    for word in words:
        assert word in said, said
    assert not (tmp_path / "s").exists(), "a half-made study would block the next run"
    no_ray()


def test_a_deleted_experiment_of_the_same_name_is_refused_before_the_study_folder(
    tmp_path: Path,
) -> None:
    # MLflow keeps a deleted experiment's name: a new run under it would fail half-way.
    uri = f"sqlite:///{tmp_path / 'shared.db'}"
    client = mlflow.MlflowClient(uri)
    client.delete_experiment(client.create_experiment("s"))
    fresh_ray()
    code, said = invoke(*run_args("s", tmp_path / "out", f"tracking.uri={uri}"))
    assert code == 4, said  # the store's exit code
    assert f"tracking.uri {uri!r}" in said and "deleted" in said and "restore" in said, said
    assert not (tmp_path / "out").exists()
    assert client.search_runs([e.experiment_id for e in client.search_experiments()]) == []
    no_ray()


@pytest.mark.processes  # the CLI and Ray's client in processes of their own
@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("bogus-address", ["Invalid address format"]),
        ("ray://", ["ray[client]"]),  # Ray Client is not installed here
        ("127.0.0.1:1", ["nothing answers at 127.0.0.1:1"]),  # at once, not after a minute
    ],
)
def test_an_address_ray_cannot_join_is_refused_naming_the_flag(
    tmp_path: Path, address: str, words: list[str]
) -> None:
    fresh_ray()
    code, said = invoke(*run_args("s", tmp_path, address=address))
    assert code == 5, said  # Ray's exit code
    assert f"--address {address!r}" in said and "auto" in said and "ray://" in said, said
    for word in words:
        assert word in said, said
    assert not (tmp_path / "s").exists(), "the study folder came before Ray"
    no_ray()


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--steps", "0", ["--steps", "greater than or equal to 1"]),
        ("--steps", "-3", ["--steps", "greater than or equal to 1"]),
        ("--cpus", "0", ["--cpus", "greater than 0"]),
        ("--cpus", "-2", ["--cpus", "greater than 0"]),
        ("--gpus", "-1", ["--gpus", "greater than or equal to 0"]),
        ("--gpus", "inf", ["--gpus", "finite"]),
    ],
)
def test_plan_refuses_numbers_it_cannot_use(flag: str, value: str, words: list[str]) -> None:
    code, said = invoke("plan", str(SMOKE), flag, value)
    assert code == 2, said
    for word in words:
        assert word in said, said
    assert "trials" not in said  # refused before any plan was made


# --- study.json that is corrupt, foreign, or from another raystudy ---------------------------


#: As a raystudy before `num_tune_trials` wrote it (`num_trials`): still read.
GOOD = {
    "name": "s",
    "study_dir": "",
    "tracking_uri": "sqlite:///unused.db",
    "experiment_id": "1",
    "parent_run_id": "abc",
    "num_trials": 1,
}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"name": "s"', ["is not valid JSON", "line 1"]),
        ("[1, 2]", ["must hold a JSON object", "tracking_uri"]),
        ('{"name": "s"}', ["lacks", "tracking_uri", "parent_run_id"]),
        (json.dumps({**GOOD, "num_trials": "three"}), ["num_trials", "integer", "'three'"]),
        (json.dumps({**GOOD, "experiment_id": 1}), ["experiment_id", "string", "got 1"]),
    ],
)
def test_a_broken_study_json_is_a_message_naming_the_file(
    tmp_path: Path, text: str, words: list[str]
) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "study.json").write_text(text)
    code, said = invoke("status", "s", "--output", str(tmp_path))
    assert code == 2, said
    assert f"{tmp_path / 's' / 'study.json'}:" in said, said
    for word in words:
        assert word in said, said


def test_study_json_is_never_seen_half_written(tmp_path: Path) -> None:
    # `status` and the fault tests read study.json while a study writes it; a plain
    # write_text truncates first, so a reader could find an empty file and call it corrupt.
    info = StudyInfo("s", tmp_path, GOOD["tracking_uri"], GOOD["experiment_id"], "r" * 2_000_000, 1)
    info.write()
    done = threading.Event()

    def rewrite() -> None:
        for _ in range(40):
            info.write()
        done.set()

    writer = threading.Thread(target=rewrite)
    writer.start()
    reads = 0
    while not done.is_set():
        assert StudyInfo.read(tmp_path).parent_run_id == info.parent_run_id
        reads += 1
    writer.join()
    assert reads > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study.json"]  # no partial left


@pytest.mark.parametrize("command", ["analyze", "resume"])
def test_every_command_that_reads_a_study_says_so(tmp_path: Path, command: str) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "study.json").write_text('{"name": "s"')
    fresh_ray()
    code, said = invoke(command, "s", "--output", str(tmp_path))
    assert code == 2, said
    assert f"{tmp_path / 's' / 'study.json'}: the file is not valid JSON" in said, said
    no_ray()


def test_a_study_json_with_keys_of_a_newer_raystudy_is_still_read(tmp_path: Path) -> None:
    study_dir = tmp_path / "s"
    study_dir.mkdir()
    uri = default_uri(study_dir)
    tracker = StudyTracker.start(uri, "s", study_dir / "mlartifacts", tags={})
    ids = {"experiment_id": tracker.experiment_id, "parent_run_id": tracker.parent_run_id}
    data = {**GOOD, **ids, "study_dir": str(study_dir), "tracking_uri": uri}
    (study_dir / "study.json").write_text(json.dumps({**data, "extra": 1, "num_models": 1}))
    code, said = invoke("status", "s", "--output", str(tmp_path))
    assert code == 0, said
    assert "Study 's' (1 trials)" in said and "pending 1" in said, said


def test_overwrite_deletes_only_a_study_never_another_folder(tmp_path: Path) -> None:
    """--overwrite replaces a study; a non-empty folder of something else that happens to
    share the study's name is refused, and every file in it stays."""
    other = tmp_path / "s"
    other.mkdir()
    (other / "thesis.tex").write_text("months of work\n")
    code, said = invoke(*run_args("s", tmp_path), "--overwrite")
    assert code == 2, said
    assert "holds no raystudy study" in said and "--overwrite deletes only" in said, said
    assert (other / "thesis.tex").read_text() == "months of work\n"
    no_ray()
    # a study's folder (its study.json) is still what --overwrite may replace
    (other / "thesis.tex").unlink()
    (other / "study.json").write_text("{}")
    assert check_study_dir(tmp_path, "s", overwrite=True) == other.resolve()


# --- with Ray: what only a cluster can judge still comes before the folder and the run -------


def test_a_request_no_node_holds_leaves_nothing_and_the_fixed_rerun_works(
    tmp_path: Path, ray_local
) -> None:
    code, said = invoke(*run_args("big", tmp_path, "resources.cpu=1000"))
    assert code == 5, said  # Ray's: no node holds it
    assert "resources.cpu=1000" in said, said
    assert not (tmp_path / "big").exists(), "a refused study left its folder behind"
    # The fixed rerun is not refused as "already holds a study" (training it would only
    # repeat what the study tests do, at ~10 s of the suite's budget).
    assert check_study_dir(tmp_path, "big", overwrite=False) == (tmp_path / "big").resolve()


def test_a_study_that_fails_while_starting_removes_what_it_wrote(tmp_path: Path, ray_local) -> None:
    # An experiment of this name whose artifact folder cannot be made (its parent is a file):
    # MLflow accepts the parent run, then logging the spec to it fails.
    uri = f"sqlite:///{tmp_path / 'shared.db'}"
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("s", artifact_location=(blocker / "art").as_uri())
    (tmp_path / "out").mkdir()  # an empty output folder the user made stays
    code, said = invoke(*run_args("s", tmp_path / "out", f"tracking.uri={uri}"))
    assert code == 4, said  # the store's exit code
    assert f"tracking.uri {uri!r}" in said, said
    assert list((tmp_path / "out").iterdir()) == [], "the half-made study folder is left"
    # The parent run it had to create is not left looking like a study that ran.
    runs = client.search_runs([experiment])
    assert runs == [], [(r.info.run_name, r.info.status) for r in runs]
