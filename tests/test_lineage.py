"""Each trial run records what it ran with (versions, commit, device), the data and split it
trained on as an MLflow dataset input whose digest identifies the split's sets, and MLflow
system metrics while it runs; a real sqlite store, real trials (no Ray)."""

from __future__ import annotations

import importlib.metadata
import itertools
import json
import platform
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from mlflow.tracking import MlflowClient
from PIL import Image

from raystudy.artifacts.grids import CAPTION_PX
from raystudy.artifacts.traversals import TRAVERSAL_STEPS
from raystudy.data import get_dataset
from raystudy.data.splits.registry import get_split, split_from_spec
from raystudy.keys import system_key
from raystudy.lineage import PACKAGES, UNKNOWN, data_input, git_commit, git_state
from raystudy.spec import TrialConfig
from raystudy.tags import DEVICE_TAG, GIT_COMMIT_TAG, GIT_DIRTY_TAG, SOURCE_NAME_TAG, version_tag
from raystudy.tracking.system_metrics import system_metrics
from raystudy.tracking.trial_run import TrialRun
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter, run_trial

CPU = system_key("cpu_utilization_percentage")
MEMORY = system_key("system_memory_usage_megabytes")


def tiny_config(split: str = "iid") -> TrialConfig:
    return TrialConfig.model_validate(
        {
            "dataset": {"name": "dsprites"},
            "split": split,
            "model": {"objective": "beta_vae", "latent_dim": 3},
            "train": {"steps": 2, "batch_size": 4, "report_every": 2},
            "evaluation": {
                "metrics": ["mig"],
                "probes": [],
                "num_train": 50,
                "num_test": 20,
                "num_eval_images": 8,
            },
        }
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One sqlite store for the module: creating its schema is most of a small test's time."""
    return f"sqlite:///{tmp_path_factory.mktemp('store') / 'mlflow.db'}"


def monitors_alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "raystudy-system-metrics"]


def test_a_trial_run_records_lineage_its_split_and_system_metrics(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MLflow's own knobs, so that a two-second trial gets several points.
    monkeypatch.setenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", "0.1")
    monkeypatch.setenv("MLFLOW_SYSTEM_METRICS_SAMPLES_BEFORE_LOGGING", "2")
    uri = store
    client = MlflowClient(uri)
    experiment = client.create_experiment("lineage")
    runs = {}
    for trial, split, monitored in [("a", "iid", True), ("b", "iid", False)]:
        ctx = TrialContext(uri, experiment, None, "lineage", trial, trial, system_metrics=monitored)
        run_trial(tiny_config(split), ctx, LocalReporter())
        assert not monitors_alive()  # stopped with its run
        runs[trial] = client.search_runs([experiment], f"attributes.run_name = '{trial}'")[0]

    tags = runs["a"].data.tags
    for package in PACKAGES:
        assert tags[version_tag(package)] == importlib.metadata.version(package)
    assert tags[version_tag("python")] == platform.python_version()
    # The tests run from a git checkout: its commit, as git itself says.
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parent,
    ).stdout.strip()
    assert tags[GIT_COMMIT_TAG] == head and tags[GIT_DIRTY_TAG] in ("true", "false")
    assert tags[SOURCE_NAME_TAG] == "raystudy"  # the run page shows the commit beside it
    assert tags[DEVICE_TAG] not in ("", UNKNOWN)

    digests = {}
    for trial, run in runs.items():
        (used,) = client.get_run(run.info.run_id).inputs.dataset_inputs
        assert {t.key: t.value for t in used.tags} == {"mlflow.data.context": "training"}
        assert json.loads(used.dataset.source)["tags"]["split"] == run.data.tags["split"]
        digests[trial] = (used.dataset.name, used.dataset.digest)
    # Same split, same data (another split's digest: the test below).
    ds = get_dataset("dsprites")
    assert (
        digests["a"]
        == digests["b"]
        == ("dsprites/iid", data_input("dsprites", {}, "iid", get_split("iid", ds)).digest)
    )

    history = client.get_metric_history(runs["a"].info.run_id, CPU)
    assert history and [m.step for m in history] == list(range(len(history)))
    # Training keeps a CPU busy: psutil's first reading in a thread is 0.0, so a monitor that
    # did not start its thread's clock would log nothing but zeros here.
    assert all(0.0 <= m.value <= 100.0 for m in history) and max(m.value for m in history) > 0
    assert runs["a"].data.metrics[MEMORY] > 0
    assert not any(k.startswith("system/") for k in runs["b"].data.metrics)

    # The traversal animation: one frame per traversal value, every code dimension in each.
    gif = Path(client.download_artifacts(runs["a"].info.run_id, "traversals.gif", str(tmp_path)))
    with Image.open(gif) as animation:
        assert animation.n_frames == TRAVERSAL_STEPS and animation.info["loop"] == 0
        frames = []
        for k in range(animation.n_frames):
            animation.seek(k)
            # Below the caption: the decoded images alone.
            frames.append(np.asarray(animation.convert("L"))[CAPTION_PX:])
    assert frames[0].shape[1] >= 256  # small renders are scaled up
    assert all(np.abs(a.astype(int) - b).max() > 0 for a, b in itertools.pairwise(frames))


def test_a_trial_shorter_than_one_interval_gets_a_point_and_a_resumed_one_continues(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for knob in ("SAMPLING_INTERVAL", "SAMPLES_BEFORE_LOGGING"):
        monkeypatch.delenv(f"MLFLOW_SYSTEM_METRICS_{knob}", raising=False)
    uri = store
    client = MlflowClient(uri)
    run = TrialRun.open(uri, client.create_experiment("short"), "t", "t", params={}, tags={})
    for _ in range(2):  # the second time as a resumed trial would
        with system_metrics(lambda: [run]):
            assert len(monitors_alive()) == 1
            end = time.monotonic() + 0.3
            while time.monotonic() < end:  # keep a core busy, far less than one interval
                pass
        assert not monitors_alive()
    history = client.get_metric_history(run.run_id, CPU)
    assert sorted(m.step for m in history) == [0, 1]
    # Each point covers its own 0.3 s, not psutil's 0.0 of a first reading in a new thread.
    assert all(m.value > 0 for m in history)


def test_the_digest_is_the_sets_not_their_spelling() -> None:
    ds = get_dataset("dsprites")
    iid = data_input("dsprites", {}, "iid", get_split("iid", ds))
    assert iid == data_input("dsprites", {}, "iid", get_split("iid", get_dataset("dsprites")))
    box = {
        "encoder": {"shape": [0, 1]},
        "scenarios": {"s": {"train": {"scale": {"le": 2}}, "test": {"scale": {"ge": 3}}}},
    }
    # The same sets: a list in another order, a range spelled as `in`, an `all` of one term.
    same = {
        "encoder": {"all": [{"shape": [1, 0]}]},
        "scenarios": {"s": {"train": {"scale": [0, 1, 2]}, "test": {"scale": {"in": [5, 4, 3]}}}},
    }
    other = {**box, "encoder": {"shape": [0, 2]}}
    in_real = {**box, "scenarios": {"s": {**box["scenarios"]["s"], "domain": "real"}}}
    digest = {
        name: data_input("dsprites", {}, "custom", split_from_spec(spec, ds)).digest
        for name, spec in [("box", box), ("same", same), ("other", other)]
    }
    assert digest["box"] == digest["same"] != digest["other"]
    assert len({digest["box"], iid.digest}) == 2
    # Same sets on another grid (colour adds a factor) or another domain: other data.
    colour = get_dataset("color_dsprites")
    on_colour = data_input("color_dsprites", {}, "custom", split_from_spec(box, colour))
    assert on_colour.digest != digest["box"]
    if "real" in ds.domains:
        real = data_input("dsprites", {}, "custom", split_from_spec(in_real, ds))
        assert real.digest != digest["box"]


def test_git_state_of_a_checkout_and_of_an_installed_package(tmp_path: Path) -> None:
    installed = tmp_path / "site-packages" / "raystudy"
    installed.mkdir(parents=True)
    (installed / "__init__.py").write_text("")
    assert git_state(installed) == {GIT_COMMIT_TAG: UNKNOWN, GIT_DIRTY_TAG: UNKNOWN}
    assert git_commit(installed) is None and git_commit(installed, short=True) is None

    repo = tmp_path / "repo"
    package = repo / "raystudy"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("x = 1\n")

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    git("init", "-q")
    # A package folder inside a checkout that does not track it: not this checkout's code.
    assert git_state(package)[GIT_COMMIT_TAG] == UNKNOWN
    assert git_commit(package, short=True) is None
    git("add", ".")
    git("commit", "-q", "-m", "one")
    head = git("rev-parse", "HEAD")
    assert git_state(package) == {GIT_COMMIT_TAG: head, GIT_DIRTY_TAG: "false"}
    # The study's code version carries the short form of the same commit.
    short = git_commit(package, short=True)
    assert short == git("rev-parse", "--short", "HEAD") and head.startswith(short)
    assert len(short) < len(head) == 40
    (repo / "output.txt").write_text("untracked: not dirty")
    assert git_state(package)[GIT_DIRTY_TAG] == "false"
    (package / "__init__.py").write_text("x = 2\n")
    assert git_state(package) == {GIT_COMMIT_TAG: head, GIT_DIRTY_TAG: "true"}
