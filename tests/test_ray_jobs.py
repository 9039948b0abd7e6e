"""A study submitted as a Ray job to a real head (`ray start --head` on this machine, with Ray's
token authentication as it starts by default), through the `ray job` commands users type: the
job's driver joins the cluster through the RAY_ADDRESS Ray gives it, its trials log to MLflow;
a job stopped mid-study (`ray job stop`) leaves a study that `raystudy resume`, submitted as
the next job, finishes without training again what had finished."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from mlflow_server import free_port
from tiny import SMOKE, tiny

from raystudy.study.folder import StudyInfo
from raystudy.tags import TRIAL_RUNS

pytestmark = pytest.mark.heavy  # a Ray head of its own and two jobs: ~2-3 minutes

pytest.importorskip("ray.dashboard", reason="Ray's job server needs ray[default] (in dev)")

TRIALS = 4
RAY = shutil.which("ray") or str(Path(sys.executable).with_name("ray"))
#: What a shell that submits to a token-authenticated cluster has (cluster.yaml exports it).
ENV = {
    **{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "token",
}


def ray_cli(*args: str, timeout: float = 180) -> str:
    done = subprocess.run([RAY, *args], capture_output=True, text=True, env=ENV, timeout=timeout)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def head() -> Iterator[str]:
    """A Ray head as `ray start --head` starts one, with its job server; its job address."""
    from conftest import fresh_ray

    fresh_ray()  # the test process's own Ray must not be the one jobs land on
    # Short: Ray's sockets live under it, and a unix socket path is at most 107 bytes (a
    # pytest tmp_path is too long for the dashboard's).
    temp = Path(tempfile.mkdtemp(prefix="rj-", dir="/tmp"))
    HEAD_TEMP[:] = [temp]
    try:
        dashboard = start_head(temp)
        address = f"http://127.0.0.1:{dashboard}"
        deadline = time.monotonic() + 120
        while True:  # the job server answers a little after `ray start` returns
            listed = subprocess.run(
                [RAY, "job", "list", "--address", address],
                capture_output=True,
                env=ENV,
                timeout=60,
            )
            if listed.returncode == 0:
                break
            assert time.monotonic() < deadline, listed.stderr[-2000:]
            time.sleep(2)
        yield address
    finally:
        stop_head(temp)
        shutil.rmtree(temp, ignore_errors=True)


def start_head(temp: Path) -> int:
    """`ray start --head` with every port its own; its dashboard's port. Started once more
    when its GCS misses Ray's fixed 30 s to come up (seen beside the rest of the fault tier on
    a loaded 2-core machine), as `tune.cluster.start_local` does for a study's local Ray."""
    for attempt in (1, 2):
        port, dashboard = free_port(), free_port()
        start = ["start", "--head", f"--port={port}", f"--dashboard-port={dashboard}"]
        start += ["--dashboard-host=127.0.0.1", "--num-cpus=2", "--include-dashboard=true"]
        start += [f"--temp-dir={temp}", "--disable-usage-stats"]
        # Every port of its own: Ray's defaults are fixed numbers (the dashboard agent's HTTP
        # port 52365, the client server's 10001), and a Ray started beside it (the fault tier's
        # other worker) that holds one leaves this head's agent unstarted: its job server then
        # answers "No available agent" for good.
        for option in AGENT_PORTS:
            start.append(f"--{option}={free_port()}")
        done = subprocess.run([RAY, *start], capture_output=True, text=True, env=ENV, timeout=300)
        if done.returncode == 0:
            return dashboard
        slow = "gcs_server" in done.stdout + done.stderr
        assert attempt == 1 and slow, (start, done.stdout[-2000:], done.stderr[-3000:])
        stop_head(temp)
    raise AssertionError("unreachable")


def stop_head(temp: Path) -> None:
    """End this head's processes only (`ray stop` would end every Ray on the machine, other
    test processes' clusters too): those whose command line names its temp dir; its workers
    exit with their raylet."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(temp) in cmdline and int(proc.name) != os.getpid():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(proc.name), signal.SIGKILL)


#: What a head's job server answers until its dashboard agent has registered, which can be a
#: while after `ray job list` already answers; Ray's own words ask to try again.
NO_AGENT_YET = "No available agent to submit job"
#: The `ray start` options of the head's ports that default to fixed numbers.
AGENT_PORTS = (
    "dashboard-agent-listen-port",
    "dashboard-agent-grpc-port",
    "runtime-env-agent-port",
    "metrics-export-port",
    "ray-client-server-port",
)
#: The running head's temp dir (its logs, for a failure's message).
HEAD_TEMP: list[Path] = []


def agent_log() -> str:
    """The end of the head's dashboard agent log, where an agent that did not start says why."""
    logs = sorted(p for t in HEAD_TEMP for p in t.rglob("dashboard_agent*.log"))
    return "\n".join(f"{p}:\n{p.read_text(errors='replace')[-3000:]}" for p in logs) or "no log"


def submit(address: str, *command: str, working_dir: Path | None = None) -> str:
    """`ray job submit --no-wait`, again while the head has no agent yet; the job's id."""
    where = ["--working-dir", str(working_dir)] if working_dir else []
    args = ["job", "submit", "--address", address, *where, "--no-wait", "--", *command]
    deadline = time.monotonic() + 180
    while True:
        done = subprocess.run([RAY, *args], capture_output=True, text=True, env=ENV, timeout=180)
        if done.returncode == 0 or NO_AGENT_YET not in done.stderr:
            break
        assert time.monotonic() < deadline, (done.stderr[-2000:], agent_log())
        time.sleep(3)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    said = done.stdout + done.stderr
    found = re.search(r"Job '(raysubmit_\w+)' submitted successfully", said)
    assert found, said
    return found.group(1)


def status(address: str, job: str) -> str:
    said = ray_cli("job", "status", "--address", address, job)
    found = re.search(r"Status for job '\w+': (\w+)", said) or re.search(
        r"Job '\w+' (succeeded|failed|was stopped)", said
    )
    assert found, said
    word = found.group(1)
    return {"succeeded": "SUCCEEDED", "failed": "FAILED", "was stopped": "STOPPED"}.get(word, word)


def wait(address: str, job: str, timeout: float = 600) -> str:
    deadline = time.monotonic() + timeout
    while (now := status(address, job)) in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, ray_cli("job", "logs", "--address", address, job)
        # Each `ray job status` is a process that imports Ray (~2 s of CPU here): polled
        # every 2 s it took most of a core from the job it waited on.
        time.sleep(6)
    return now


def test_a_submitted_study_runs_on_the_cluster_and_a_stopped_one_resumes(
    head: str, tmp_path: Path
) -> None:
    out = tmp_path / "studies"
    # The working dir Ray ships with the job: the spec only (raystudy is installed).
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(SMOKE, work / "smoke.yaml")
    # Trials long enough (a few seconds of training each) for the stop to land mid-study.
    sets = tiny("jobbed", f"grid={{seed: {list(range(TRIALS))}}}", "model.beta=null")
    sets += ["train.steps=400"]
    sets += ["resources={cpu: 1, gpu: 0}", "execution.max_concurrent_trials=1"]
    command = ["raystudy", "run", "smoke.yaml", "--output", str(out)]
    command += [f"--set={s}" for s in sets]
    job = submit(head, *command, working_dir=work)
    # Stopped once its first trial is in MLflow, as `ray job stop` stops it.
    study = out / "jobbed"
    deadline = time.monotonic() + 600
    finished: list = []
    while not finished:
        assert time.monotonic() < deadline, ray_cli("job", "logs", "--address", head, job)
        if (study / "study.json").is_file():
            info = StudyInfo.read(study)
            runs = MlflowClient(info.tracking_uri).search_runs([info.experiment_id], TRIAL_RUNS)
            finished = [r for r in runs if r.info.status == "FINISHED"]
        time.sleep(0.5)
    logs = ray_cli("job", "logs", "--address", head, job)
    assert f"Study 'jobbed': {TRIALS} trials" in logs, logs[-3000:]
    assert "Started a local Ray" not in logs  # it joined the cluster the job runs on
    ray_cli("job", "stop", "--address", head, job)
    assert wait(head, job) == "STOPPED"
    info = StudyInfo.read(study)
    store = MlflowClient(info.tracking_uri)
    done_before = {
        r.info.run_name: r.info.run_id
        for r in store.search_runs([info.experiment_id], TRIAL_RUNS)
        if r.info.status == "FINISHED"
    }
    assert 1 <= len(done_before) < TRIALS
    # The next job resumes it on the same cluster.
    resumed = submit(head, "raystudy", "resume", "jobbed", "--output", str(out))
    assert wait(head, resumed) == "SUCCEEDED", ray_cli("job", "logs", "--address", head, resumed)
    runs = store.search_runs([info.experiment_id], TRIAL_RUNS)
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * TRIALS
    # What had finished was not trained again: the same runs, the same ids.
    by_name = {r.info.run_name: r.info.run_id for r in runs}
    assert all(by_name[name] == run_id for name, run_id in done_before.items())
