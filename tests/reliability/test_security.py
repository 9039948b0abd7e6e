"""Security: servers on loopback, nothing unpickled or YAML-constructed from files a user is
handed, an HTML report that shows hostile strings as text, and no credentials in the cluster
configs. Each check runs the real thing where that is cheap, and reads the code where the
rule is "every call site" (a behaviour test would see only the sites it happens to reach)."""

from __future__ import annotations

import ast
import functools
import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import yaml
from planted_tables import planted_results
from typer.testing import CliRunner

from raystudy.checks import load_spec
from raystudy.cli import app
from raystudy.data import get_dataset
from raystudy.data.core.files import DatasetFileError
from raystudy.spec import SpecError
from raystudy.study.folder import StudyInfo
from raystudy.tags import ERROR_TAG, STUDY_TAG
from raystudy.tracking.study_run import StudyTracker, default_uri
from raystudy.tracking.trial_run import TrialRun

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "raystudy").rglob("*.py")) + sorted((ROOT / "bench").glob("*.py"))
CLUSTER_FILES = [ROOT / "cluster.yaml", ROOT / "tests" / "clusters" / "onprem.yaml"]
# The README and the reference pages it links to: every command they show a user.
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LOOPBACK = {"127.0.0.1", "::1"}


# --- which sockets a process tree listens on (procfs: no tool needed) -------------------------


def _group(pgid: int) -> set[int]:
    pids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[2]) == pgid:  # fields: state ppid pgrp
                pids.add(int(entry))
    return pids


def _address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))  # four little-endian words
    return socket.inet_ntop(socket.AF_INET6, words)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:  # it ended meanwhile
        return ""


def listening(pids: set[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state owned by one of `pids`."""
    inodes = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                addr, port = cols[1].split(":")
                found.add((_address(addr), int(port, 16)))
    return found


def _study(tmp_path: Path, name: str) -> StudyInfo:
    study_dir = tmp_path / name
    study_dir.mkdir()
    uri = default_uri(study_dir)
    tracker = StudyTracker.start(uri, name, study_dir / "mlartifacts", tags={})
    info = StudyInfo(name, study_dir, uri, tracker.experiment_id, tracker.parent_run_id, 0)
    info.write()
    return info


# --- servers --------------------------------------------------------------------------------


@pytest.mark.heavy  # a study through Tune, then a real `mlflow ui`: the fault tier
def test_raystudy_ui_serves_the_study_on_loopback_only(tmp_path: Path) -> None:
    info = _study(tmp_path, "s")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "raystudy.cli", "ui", "s", "-o", str(tmp_path)]
    with (tmp_path / "ui.out").open("w") as out:
        proc = subprocess.Popen(
            [*command, "--port", str(port)],
            stdout=out,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # the UI starts workers: stop the whole group
        )
    try:
        deadline, sockets = time.monotonic() + 90, set()
        while time.monotonic() < deadline and port not in {p for _, p in sockets}:
            time.sleep(0.5)
            assert proc.poll() is None, "raystudy ui exited"
            sockets = listening(_group(proc.pid))
        assert port in {p for _, p in sockets}, "the UI never listened on its port"
        time.sleep(1.0)  # workers that bind late would show up now
        sockets = listening(_group(proc.pid))
        assert {a for a, _ in sockets} <= LOOPBACK, sockets
        # MLflow's GenAI job runner (huey consumers) is not started: no study submits a job.
        commands = [_cmdline(pid) for pid in _group(proc.pid)]
        assert commands and not [c for c in commands if "huey" in c], commands
        # ...and what it serves there is this study's store.
        url = f"http://127.0.0.1:{port}/api/2.0/mlflow/experiments/get-by-name"
        body = b""
        while time.monotonic() < deadline and not body:
            try:
                with urllib.request.urlopen(f"{url}?experiment_name=s", timeout=2) as r:
                    body = r.read()
            except OSError:
                time.sleep(0.5)
        assert info.experiment_id.encode() in body
        # ...opened at the study's trial runs, in the view `raystudy ui` saved on the experiment
        # (tests/test_ui_view.py checks the view; its heavy test loads it in a browser).
        view = f"#/experiments/{info.experiment_id}/runs?workflowType=machine_learning&"
        assert f"http://127.0.0.1:{port}/{view}" in (tmp_path / "ui.out").read_text()
        assert b"mlflow.sharedViewState.raystudy" in body
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


@functools.cache
def _nodes(path: Path) -> list[ast.AST]:
    return list(ast.walk(ast.parse(path.read_text())))


def _calls(path: Path, module: str, name: str) -> list[ast.Call]:
    """Calls of `module.name(...)` in a source file."""
    return [
        node
        for node in _nodes(path)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == name
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == module
    ]


def _keywords(call: ast.Call) -> dict[str, object]:
    return {
        k.arg: ast.literal_eval(k.value) if isinstance(k.value, ast.Constant) else k.value
        for k in call.keywords
    }


def test_a_local_ray_starts_without_its_dashboard() -> None:
    # Every ray.init either joins a cluster someone else started (`address=`) or starts a
    # local one with the dashboard off: no HTTP server on this machine's ports.
    calls = [(p, c) for p in SOURCES for c in _calls(p, "ray", "init")]
    assert calls, "no ray.init found: did the code move?"
    for path, call in calls:
        kw = _keywords(call)
        assert "address" in kw or kw.get("include_dashboard") is False, (
            f"{path.relative_to(ROOT)}:{call.lineno}: ray.init without include_dashboard=False"
        )
        assert "dashboard_host" not in kw, f"{path.relative_to(ROOT)}:{call.lineno}"


@pytest.mark.heavy  # starts Ray (~10 s on 2 busy cores); the AST test above is the fast guard
def test_the_local_ray_of_a_study_listens_on_loopback_only_and_needs_a_token(
    tmp_path: Path,
) -> None:
    """With ray[default] installed (the dev extra) Ray's dashboard agent serves HTTP and three
    Prometheus exporters answer without a token; a study's private Ray keeps all of them, and
    its gRPC ports, on loopback (raystudy.tune.cluster._loopback_node)."""
    script = textwrap.dedent(
        """
        import os, json
        from raystudy.tune.cluster import connect
        connect(None)
        import ray
        gcs = ray.get_runtime_context().gcs_address
        session = ray._private.worker._global_node.get_session_dir_path()
        print(json.dumps({"pid": os.getpid(), "auth": os.environ.get("RAY_AUTH_MODE"),
                          "gcs": gcs, "session": session}))
        import sys; sys.stdout.flush(); sys.stdin.read()  # keep Ray up until told
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        line = proc.stdout.readline()
        while line and not line.startswith("{"):  # Ray's own start-up lines
            line = proc.stdout.readline()
        info = json.loads(line)
        assert info["auth"] == "token"
        # The agent binds its servers some seconds after ray.init returns, then writes its
        # HTTP port (-1 in a minimal install) to the session folder: read sockets after that.
        session = Path(info["session"])
        deadline = time.monotonic() + 120
        while not (agent := sorted(session.glob("dashboard_agent_listen_port_*"))):
            assert time.monotonic() < deadline, "Ray's dashboard agent never became ready"
            time.sleep(0.5)
        agent_port = int(agent[0].read_text().strip() or -1)
        sockets = listening(_group(proc.pid))
        assert sockets, "the local Ray listens on nothing: the check would pass vacuously"
        assert not {p for _, p in sockets} & {8265}, sockets  # the dashboard stays off
        off_loopback = {(a, p) for a, p in sockets if a not in LOOPBACK | {"::ffff:127.0.0.1"}}
        assert not off_loopback, off_loopback
        if agent_port > 0:  # ray[default]: the agent's HTTP answers only with the token
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"http://127.0.0.1:{agent_port}/api/jobs/", timeout=10)
            assert refused.value.code in (401, 403), refused.value
        # Another user of this machine reaches loopback too: a caller without the token (none,
        # a wrong one, auth off) is refused; with this user's token, it joins. A process
        # joins a loopback node as Ray's own macOS default does (_join).
        stranger = tmp_path / "home"
        stranger.mkdir()
        callers = {
            "no token": {"RAY_AUTH_MODE": "token", "HOME": str(stranger)},
            "a wrong token": {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 32},
            "auth off": {"RAY_AUTH_MODE": "disabled", "HOME": str(stranger)},
            "the token": {"RAY_AUTH_MODE": "token"},
        }
        for who, extra in callers.items():
            joined = _join(info["gcs"], extra)
            assert joined == (who == "the token"), who
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def _join(gcs: str, env: dict[str, str]) -> bool:
    """Whether a fresh process with `env` joins the Ray cluster at `gcs` and reads it."""
    client = (
        "import ray, sys; ray.init(address=sys.argv[1]); print('JOINED', ray.cluster_resources())"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    # A driver names itself by this machine's address unless told, and then waits for a
    # raylet of that name, which a node on 127.0.0.1 is not.
    base["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    done = subprocess.run(
        [sys.executable, "-c", client, gcs],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    return done.returncode == 0 and "JOINED" in done.stdout


def _server_commands(text: str) -> list[str]:
    return [
        line
        for line in text.splitlines()
        if re.search(r"mlflow (server|ui)\s+--|ray start --head|ray dashboard \S", line)
    ]


@pytest.mark.parametrize(
    "path", [*DOC_FILES, *CLUSTER_FILES], ids=lambda p: str(p.relative_to(ROOT))
)
def test_documented_servers_bind_loopback_or_an_explicit_private_host(path: Path) -> None:
    text = path.read_text()
    assert not re.search(r"0\.0\.0\.0|--host[= ]+(::|\[::\])(\s|$)", text), (
        f"{path.name} binds a server to every interface"
    )
    for line in _server_commands(text):
        if "ray start --head" in line:
            assert "--dashboard-host=127.0.0.1" in line, line
        if re.search(r"mlflow (server|ui)", line):
            host = re.search(r"--host[= ](\$\([^)]*\)|\S+)", line)
            assert host, f"{path.name}: an MLflow server without an explicit --host: {line}"
            # loopback, or the head's private address that the workers must reach
            assert host.group(1) in ("127.0.0.1", "$(hostname -I | cut -d' ' -f1)"), line


@pytest.mark.parametrize("doc", ["reliability.md", "clusters.md"])  # security; cluster how-to
def test_the_docs_say_how_to_reach_a_cluster_ui_through_ssh(doc: str) -> None:
    text = (ROOT / "docs" / doc).read_text()
    assert "ray dashboard cluster.yaml" in text  # Ray's own SSH tunnel to 8265
    assert re.search(r"ssh .*-L 5000:<head private IP>:5000", text)  # the MLflow UI


# --- cluster credentials --------------------------------------------------------------------

SECRET_KEY = re.compile(r"secret|password|passwd|token|credential|access_key|private_key", re.I)
SECRET_VALUE = re.compile(
    r"AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY-----|"
    r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"  # the shape of an AWS secret key
)


def _walk(node: object, path: str = ""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield f"{path}.{key}" if path else str(key), key, value
            yield from _walk(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield f"{path}[{i}]", None, value
            yield from _walk(value, f"{path}[{i}]")


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=lambda p: p.name)
def test_cluster_configs_hold_no_credentials_and_open_no_ports(path: Path) -> None:
    config = yaml.safe_load(path.read_text())
    for where, key, value in _walk(config):
        # The one secret a config may name: Ray's token file, copied from where `ray up` runs
        # (its path, never its value).
        if where == "file_mounts.~/.ray/auth_token":
            assert value == "~/.ray/auth_token", f"{path.name}: {where}"
            continue
        assert key is None or not SECRET_KEY.search(str(key)), f"{path.name}: {where}"
        if isinstance(value, str):
            assert not SECRET_VALUE.search(value), f"{path.name}: {where} looks like a secret"
    assert set(config["auth"]) == {"ssh_user"}  # keys come from the SSH agent / ~/.ssh
    # No security-group rules of our own: Ray's default group admits SSH only.
    assert "0.0.0.0/0" not in path.read_text() and "IpPermissions" not in path.read_text()
    cluster_doc = (ROOT / "docs" / "clusters.md").read_text()  # "Run on a cluster"
    assert "holds no credentials" in cluster_doc and "~/.aws" in cluster_doc
    assert "AWS_PROFILE" in cluster_doc


# --- nothing from a file runs code: checkpoints, YAML, dataset files --------------------------


def test_every_torch_load_is_weights_only() -> None:
    calls = [(p, c) for p in SOURCES for c in _calls(p, "torch", "load")]
    assert calls, "no torch.load found: did the code move?"
    for path, call in calls:
        assert _keywords(call).get("weights_only") is True, (
            f"{path.relative_to(ROOT)}:{call.lineno}: torch.load without weights_only=True"
        )


def test_yaml_is_only_ever_loaded_safely() -> None:
    for path in SOURCES:
        for name in ("unsafe_load", "full_load", "load_all", "unsafe_load_all", "full_load_all"):
            assert not _calls(path, "yaml", name), f"{path.relative_to(ROOT)}: yaml.{name}"
        module = None
        for call in _calls(path, "yaml", "load"):
            # yaml.load only with a loader derived from SafeLoader (the spec's, which also
            # refuses duplicate keys); resolved by importing the module that names it.
            loader = _keywords(call).get("Loader")
            assert isinstance(loader, ast.Name), f"{path.relative_to(ROOT)}:{call.lineno}"
            if module is None:
                rel = path.relative_to(ROOT).with_suffix("")
                module = __import__(".".join(rel.parts), fromlist=["_"])
            assert issubclass(getattr(module, loader.id), yaml.SafeLoader), loader.id


def test_no_pickle_or_eval_on_data() -> None:
    for path in SOURCES:
        rel = path.relative_to(ROOT)
        for call in _calls(path, "np", "load"):
            assert _keywords(call).get("allow_pickle", False) is False, f"{rel}:{call.lineno}"
        for name in ("load", "loads"):
            assert not _calls(path, "pickle", name), f"{rel}: pickle.{name}"
        for node in _nodes(path):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("eval", "exec"), f"{rel}:{node.lineno}"


PYTHON_TAG = "!!python/object/apply:os.mkdir [{marker}]"


def test_a_spec_with_python_tags_is_refused_without_running_them(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    spec = tmp_path / "evil.yaml"
    spec.write_text(f"name: s\nseed: {PYTHON_TAG.format(marker=marker)}\n")
    with pytest.raises(SpecError, match=rf"{spec}: not valid YAML: could not determine"):
        load_spec(spec)
    ok = tmp_path / "ok.yaml"
    ok.write_text("name: s\n")
    with pytest.raises(SpecError, match=r"--set seed: value is not valid YAML"):
        load_spec(ok, [f"seed={PYTHON_TAG.format(marker=marker)}"])
    result = CliRunner().invoke(
        app, ["datasets", "show", "dsprites", "-O", f"real_seed={PYTHON_TAG.format(marker=marker)}"]
    )
    assert result.exit_code != 0
    assert not marker.exists(), "a YAML tag ran code"


class _Mkdir:
    """Unpickles as os.mkdir(path): what a crafted dataset file could do instead."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def test_a_dsprites_file_whose_metadata_runs_code_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    n = 16
    classes = np.zeros((n, 6), np.int64)
    classes[:, 5] = np.arange(n)  # distinct pos_y: n distinct combinations
    path = tmp_path / "dsprites.npz"
    np.savez(
        path,
        imgs=np.zeros((n, 64, 64), np.uint8),
        latents_classes=classes,
        latents_values=classes / 1.0,
        metadata=np.array({"latents_sizes": np.array([1, 3, 6, 40, 32, 32]), "x": _Mkdir(marker)}),
    )
    with pytest.raises(DatasetFileError, match=r"cannot unpickle 'metadata'.*refusing.*mkdir"):
        get_dataset("dsprites_file", path=str(path))
    assert not marker.exists(), "loading a dataset file ran code"
    # The official kind of metadata (a dict of strings, tuples and arrays) still loads.
    meta = {"latents_sizes": np.array([1, 3, 6, 40, 32, 32]), "latents_names": ("color",)}
    np.savez(
        path,
        imgs=np.zeros((n, 64, 64), np.uint8),
        latents_classes=classes,
        latents_values=classes / 1.0,
        metadata=np.array(meta),
    )
    assert get_dataset("dsprites_file", path=str(path)).factors.sizes == [3, 6, 40, 32, 32]


# --- the HTML report shows hostile strings as text --------------------------------------------

HOSTILE = '<script>alert("{}")</script><img src=x onerror=alert(1)>'


def test_the_report_escapes_every_user_supplied_string(tmp_path: Path) -> None:
    info = _study(tmp_path, "hostile")
    # study.json names the study in the report (MLflow takes any experiment name, and a
    # study.json can be edited by hand): a hostile one must be shown as text too.
    data = json.loads((info.study_dir / "study.json").read_text())
    (info.study_dir / "study.json").write_text(json.dumps({**data, "name": HOSTILE.format("name")}))
    frame = planted_results(8, seed=0, failed=1)
    metrics = [c for c in frame.columns if c.startswith("metrics.")]
    for i, row in frame.iterrows():
        failed = i == len(frame) - 1
        tags = {STUDY_TAG: HOSTILE.format("tag")}
        run = TrialRun.open(
            info.tracking_uri,
            info.experiment_id,
            trial_id=f"t{i}",
            run_name=HOSTILE.format(f"run{i}"),
            params={"model.objective": "beta_vae", "model.beta": HOSTILE.format(f"beta{i % 2}")},
            tags=tags,
            parent_run_id=info.parent_run_id,
        )
        values = {c.removeprefix("metrics."): row[c] for c in metrics if np.isfinite(row[c])}
        run.log_metrics(values, step=0)
        if failed:
            run.set_tags({ERROR_TAG: HOSTILE.format("error")})
        run.finish("FAILED" if failed else "FINISHED")
    (info.study_dir / "spec.yaml").write_text(f"# description: {HOSTILE.format('spec')}\nname: x\n")
    result = CliRunner().invoke(
        app,
        [
            "analyze",
            "hostile",
            "-o",
            str(tmp_path),
            "--by",
            "model.beta",
            "--bootstrap",
            "20",
            "--min-trials",
            "3",
            "--no-log",
        ],
    )
    assert result.exit_code == 0, result.output
    report = (info.study_dir / "analysis" / "report.html").read_text()
    assert not re.search(r"<script|<img src=x", report, re.I)  # as tags: never
    for label in ("name", "spec", "error", "run8", "beta0", "beta1"):
        assert html.escape(HOSTILE.format(label)) in report, label
