"""What a trial asks Ray for: the decision on tables, the autoscaler's config on real files, and
`resources.autoscale: auto` on real Ray clusters (a plain local one; `-m heavy`: one whose
autoscaler launches a GPU node)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest
import yaml
from conftest import fresh_ray, ray_cluster
from ray.autoscaler._private.util import prepare_config
from tiny import ROOT, SMOKE

from raystudy.checks import load_spec
from raystudy.resources import (
    Autoscaler,
    Node,
    NodeType,
    ResourceError,
    find_monitor,
    fit_request,
    read_cluster_config,
)
from raystudy.spec import SpecError
from raystudy.tune.probe import find_autoscaler

CPU2 = Node(2, 0)
GPU1 = Node(8, 1)
NONE = Autoscaler((), "no autoscaler here")
A10G = NodeType("gpu_a10g", 8, 1, 8)
BIG_CPU = NodeType("cpu_worker", 16, 0, 4)
SCALER = Autoscaler((A10G, BIG_CPU), "cluster.yaml")
CPU_ONLY = Autoscaler((BIG_CPU,), "cpu.yaml")
CAPPED = Autoscaler((NodeType("gpu_a10g", 8, 1, 0),), "capped.yaml")  # max_workers 0
QUAD = Autoscaler((NodeType("p3", 32, 4, -1),), "quad.yaml")
UNKNOWN = Autoscaler((NodeType("local.cluster.node", None, None, 2),), "onprem")


# -- the decision: (nodes, node types, request) -> request or error ------------------------------


def smoke(*overrides: str):
    """The smoke spec (asks cpu 1, gpu 0.25) with overrides; its data are not the point here."""
    return load_spec(SMOKE, overrides, check_data=False)


def case(name: str, ask: tuple[float, float], nodes: list[Node], scaler: Autoscaler, **kw):
    """One row: the request (cpu, gpu), the nodes, the node types; `gets` the GPU Tune is asked
    for (a request that fits), `says` what the message must hold ('|' between the parts)."""
    row = (ask, nodes, scaler, kw.get("trust", False), kw.get("gets"), kw.get("says", ""))
    return pytest.param(*row, id=name)


FITS = [
    case("gpu-node-exists", (1, 0.25), [GPU1], NONE, gets=0.25),
    case("cpu-fits", (1, 0), [CPU2], NONE, gets=0),
    case(
        "no-gpu-no-autoscaler-cpu",
        (1, 0.25),
        [CPU2],
        NONE,
        gets=0,
        says="No GPU in the Ray cluster and no autoscaler could add one (no autoscaler here"
        "|resources.autoscale: true|the 's' trials run on CPU",
    ),
    case(
        "no-gpu-type-cpu",
        (1, 0.25),
        [CPU2],
        CPU_ONLY,
        gets=0,
        says="No GPU|none of the node types|cpu_worker (16 CPU/0 GPU, up to 4)|run on CPU",
    ),
    case("gpu-type-max-0-cpu", (1, 0.25), [CPU2], CAPPED, gets=0, says="run on CPU"),
    case(
        "gpu-type-launches",
        (1, 0.25),
        [CPU2],
        SCALER,
        gets=0.25,
        says="resources.cpu=1, resources.gpu=0.25|nodes: 2 CPU/0 GPU"
        "|autoscaler will start a gpu_a10g (8 CPU/1 GPU, up to 8)|from cluster.yaml",
    ),
    case("cpu-type-launches", (4, 0), [CPU2], SCALER, gets=0, says="will start a gpu_a10g"),
    case("whole-gpus", (2, 2), [GPU1], QUAD, gets=2, says="p3 (32 CPU/4 GPU, no limit)"),
    case(
        "cpu-fallback-then-cpu-type",
        (12, 0.25),
        [CPU2],
        CPU_ONLY,
        gets=0,
        says="run on CPU|will start a cpu_worker",
    ),
    case(
        "trust-no-node-holds-it",
        (64, 1),
        [CPU2],
        NONE,
        trust=True,
        gets=1,
        says="resources.cpu=64, resources.gpu=1|resources.autoscale is true|wait",
    ),
    case("trust-node-holds-it", (1, 0.5), [GPU1], NONE, trust=True, gets=0.5),
]


@pytest.mark.parametrize(("ask", "nodes", "scaler", "trust", "gets", "says"), FITS)
def test_requests_that_some_node_or_node_type_holds(
    ask: tuple[float, float],
    nodes: list[Node],
    scaler: Autoscaler,
    trust: bool,
    gets: float,
    says: str,
) -> None:
    fitted = fit_request(*ask, nodes, scaler, trust=trust, study="s")
    assert fitted.resources == {"cpu": ask[0], "gpu": gets}
    if not says:
        assert fitted.message is None
    for part in filter(None, says.split("|")):
        assert part in fitted.message


FAILS = [
    case(
        "cpu-too-big-no-autoscaler",
        (64, 0),
        [CPU2],
        NONE,
        says="resources.cpu=64 and resources.gpu=0 on one node|nodes: 2 CPU/0 GPU"
        "|no autoscaler can add one (no autoscaler here)|pending forever|resources.autoscale: true",
    ),
    case(
        "cpu-too-big-for-every-type",
        (64, 0.25),
        [CPU2],
        SCALER,
        says="resources.cpu=64 and resources.gpu=0.25|nor does any node type"
        "|gpu_a10g (8 CPU/1 GPU, up to 8), cpu_worker (16 CPU/0 GPU, up to 4); from cluster.yaml"
        "|a node type that holds it",
    ),
    case(
        "gpu-type-too-small-for-the-cpus",
        (12, 0.5),
        [CPU2],
        SCALER,
        says="resources.cpu=12 and resources.gpu=0.5|nor does any",
    ),
    case("two-gpus-one-per-node", (1, 2), [GPU1], NONE, says="resources.gpu=2|nodes: 8 CPU/1 GPU"),
    case("two-gpus-types-one", (1, 2), [CPU2], SCALER, says="resources.gpu=2|gpu_a10g (8 CPU/1"),
    case(
        "cpu-fallback-then-too-big",
        (64, 0.25),
        [CPU2],
        NONE,
        says="resources.gpu=0 (0.25 asked; no GPU anywhere)",
    ),
    case(
        "types-of-unknown-size-promise-nothing",
        (4, 0),
        [CPU2],
        UNKNOWN,
        says="local.cluster.node (resources unknown, up to 2)",
    ),
    case("no-node-alive", (1, 0), [], NONE, says="nodes: none"),
]


@pytest.mark.parametrize(("ask", "nodes", "scaler", "trust", "gets", "says"), FAILS)
def test_requests_nothing_can_hold_fail_naming_fields_nodes_and_types(
    ask: tuple[float, float],
    nodes: list[Node],
    scaler: Autoscaler,
    trust: bool,
    gets: None,
    says: str,
) -> None:
    with pytest.raises(ResourceError) as err:
        fit_request(*ask, nodes, scaler, trust=trust, study="s")
    for part in says.split("|"):
        assert part in str(err.value)


def test_autoscale_field_takes_auto_true_false_and_names_what_it_got() -> None:
    assert smoke().resources.autoscale == "auto"
    for given, value in [("auto", "auto"), ("true", True), ("no", False), ("'False'", False)]:
        assert smoke(f"resources.autoscale={given}").resources.autoscale == value
    with pytest.raises(SpecError) as err:
        smoke("resources.autoscale=maybe")
    assert "resources.autoscale: expected auto, true or false (got 'maybe')" in str(err.value)


# -- the autoscaler's config: files as `ray up` and users write them ---------------------------


def by_name(scaler: Autoscaler) -> dict[str, NodeType]:
    return {t.name: t for t in scaler.node_types}


def test_shipped_cluster_yaml_gives_its_gpu_worker_types() -> None:
    types = by_name(read_cluster_config(ROOT / "cluster.yaml"))
    assert types["gpu_a10g"] == NodeType("gpu_a10g", 8, 1, 8)
    assert types["cpu_worker"] == NodeType("cpu_worker", 16, 0, 4)
    assert types["head"] == NodeType("head", 0, 0, 0), "the head is never launched"
    # What Ray's own preparation makes of it (what `ray up` writes to the head) reads the same.
    prepared = prepare_config(yaml.safe_load((ROOT / "cluster.yaml").read_text()))
    assert {n: t["max_workers"] for n, t in prepared["available_node_types"].items()} == {
        n: t.max_workers for n, t in types.items()
    }


def test_bootstrap_config_defaults_caps_and_providers(tmp_path: Path) -> None:
    bootstrap = {  # JSON, as `ray up` writes ~/ray_bootstrap_config.yaml
        "max_workers": 2,
        "provider": {"type": "aws"},
        "head_node_type": "head",
        "available_node_types": {
            "head": {"resources": {"CPU": 4}},
            "gpu": {"resources": {"CPU": 8, "GPU": 1}, "max_workers": 8},  # capped by 2
            "cpu": {"resources": {"CPU": 16}},  # the global max_workers
        },
    }
    path = tmp_path / "ray_bootstrap_config.yaml"
    path.write_text(json.dumps(bootstrap))
    scaler = read_cluster_config(path)
    assert scaler.source == str(path)
    assert by_name(scaler) == {
        "head": NodeType("head", 4, 0, 0),
        "gpu": NodeType("gpu", 8, 1, 2),
        "cpu": NodeType("cpu", 16, 0, 2),
    }
    assert [t.name for t in scaler.launchable] == ["gpu", "cpu"]

    path.write_text(json.dumps({**bootstrap, "provider": {"type": "readonly"}}))
    assert read_cluster_config(path).launchable == (), "a read-only provider launches nothing"

    # Ray's `local` provider: the node type Ray prepares has no resources (learnt from nodes).
    onprem = prepare_config(yaml.safe_load((ROOT / "tests/clusters/onprem.yaml").read_text()))
    path.write_text(json.dumps(onprem))
    (local,) = read_cluster_config(path).node_types
    assert (local.cpu, local.gpu, local.max_workers) == (None, None, 2)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("- a list\n", ["a cluster config is a mapping, got list"]),
        ("max_workers: -1\n", ["max_workers: expected a whole number >= 0, got -1"]),
        ("available_node_types: [gpu]\n", ["available_node_types: expected a mapping"]),
        (
            "available_node_types: {gpu: {resources: {GPU: one}}}\n",
            ["available_node_types.gpu.resources.GPU: expected a number >= 0, got 'one'"],
        ),
        (
            "available_node_types: {gpu: {max_workers: 1.5}}\n",
            ["available_node_types.gpu.max_workers: expected a whole number >= 0, got 1.5"],
        ),
        ("available_node_types: {gpu: [1]}\n", ["available_node_types.gpu: expected a mapping"]),
        ("{max_workers: [\n", ["not YAML/JSON"]),
    ],
)
def test_malformed_config_names_file_and_field(tmp_path: Path, text: str, words: list[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ResourceError) as err:
        read_cluster_config(path)
    assert str(err.value).startswith(f"{path}: ")
    for w in words:
        assert w in str(err.value)
    with pytest.raises(ResourceError, match="cannot read the autoscaler config"):
        read_cluster_config(tmp_path / "missing.yaml")


def test_monitor_found_by_gcs_port_with_its_autoscaling_config(tmp_path: Path) -> None:
    """A process table laid out as /proc is: cmdline NUL-separated, cwd a link."""

    def process(pid: int, *argv: str, cwd: Path = tmp_path) -> None:
        (tmp_path / "proc" / str(pid)).mkdir(parents=True)
        (tmp_path / "proc" / str(pid) / "cmdline").write_bytes("\0".join(argv).encode() + b"\0")
        (tmp_path / "proc" / str(pid) / "cwd").symlink_to(cwd)

    monitor = "/venv/lib/python3.11/site-packages/ray/autoscaler/_private/monitor.py"
    process(10, "python", "-u", monitor, "--gcs-address=10.0.0.1:6379")  # another cluster
    process(11, "python", "raylet", "--gcs-address=10.0.0.1:7000")  # not a monitor
    process(
        12,
        "python",
        "-u",
        monitor,
        "--gcs-address=10.0.0.1:7000",
        "--autoscaling-config=conf/boot.yaml",
        cwd=tmp_path / "home",
    )
    (tmp_path / "proc" / "self").mkdir()
    found = find_monitor("127.0.0.1:7000", tmp_path / "proc")  # another address, same GCS
    assert found is not None and found.pid == 12
    assert found.autoscaling_config == tmp_path / "home" / "conf" / "boot.yaml"
    readonly = find_monitor("10.0.0.1:6379", tmp_path / "proc")
    assert readonly is not None and (readonly.pid, readonly.autoscaling_config) == (10, None)
    assert find_monitor("10.0.0.1:1234", tmp_path / "proc") is None
    assert find_monitor("10.0.0.1:1234", tmp_path / "no-proc") is None


# -- real Ray clusters --------------------------------------------------------------------------

GPU_BOOTSTRAP = {
    "max_workers": 2,
    "head_node_type": "head",
    "available_node_types": {
        "head": {"resources": {"CPU": 0}},
        "gpu_a10g": {"resources": {"CPU": 8, "GPU": 1}, "max_workers": 2},
    },
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _end_processes_of(gcs_address: str) -> None:
    """Nodes the fake provider launched outlive the Cluster that started them: end them by pid
    (only processes naming this test's own GCS address)."""
    mine = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if f"gcs-address={gcs_address}" in argv or f"gcs_address={gcs_address}" in argv:
                mine.append(int(entry.name))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in mine:
            with contextlib.suppress(ProcessLookupError):  # ended with the first signal
                os.kill(pid, sig)
        time.sleep(2)


@pytest.mark.heavy
def test_autoscaler_with_a_gpu_node_type_gets_the_gpu_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real autoscaler (Ray's fake multi-node provider launches nodes on this machine) with a
    GPU node type and no GPU node yet: `auto` keeps the GPU request, and a task asking for it
    runs on the node the autoscaler starts. Runs before the `ray_local` tests (one Ray per
    process)."""
    import ray

    from raystudy.tune.probe import cluster_request

    monkeypatch.setenv("RAY_FAKE_CLUSTER", "1")  # the fake provider refuses to run without
    monkeypatch.setenv("AUTOSCALER_UPDATE_INTERVAL_S", "1")
    port = _free_port()
    gcs = f"{ray.util.get_node_ip_address()}:{port}"
    config = {
        **{k: [] for k in ("cluster_synced_files", "rsync_exclude", "rsync_filter")},
        **{k: [] for k in ("initialization_commands", "setup_commands", "head_setup_commands")},
        **{k: [] for k in ("worker_setup_commands", "head_start_ray_commands")},
        "worker_start_ray_commands": [],
        "cluster_name": "fake",
        "max_workers": 1,
        "upscaling_speed": 1.0,
        "idle_timeout_minutes": 1,
        "docker": {},
        "auth": {},
        "file_mounts": {},
        "file_mounts_sync_continuously": False,
        "provider": {
            "type": "fake_multinode",
            "gcs_address": gcs,
            "disable_launch_config_check": True,
        },
        "head_node_type": "ray.head.default",
        "available_node_types": {
            "ray.head.default": {"resources": {}, "node_config": {}, "max_workers": 0},
            "gpu_small": {
                "resources": {"CPU": 1, "GPU": 1},
                "node_config": {},
                "min_workers": 0,
                "max_workers": 1,
            },
        },
    }
    path = tmp_path / "autoscaling.json"
    path.write_text(json.dumps(config))
    fresh_ray()
    cluster = ray_cluster(num_cpus=1, gcs_server_port=port, autoscaling_config=str(path))
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        scaler = find_autoscaler()
        assert scaler.source == str(path)
        assert [t.name for t in scaler.launchable] == ["gpu_small"]
        assert cluster_request(1, 0.25, "auto", "s") == {"cpu": 1, "gpu": 0.25}
        assert "autoscaler will start a gpu_small (1 CPU/1 GPU, up to 1)" in capsys.readouterr().out
        assert cluster_request(1, 0.25, False, "s") == {"cpu": 1, "gpu": 0.0}, "existing only"

        @ray.remote(num_cpus=1, num_gpus=0.25)
        def gpus() -> float:
            return ray.get_runtime_context().get_assigned_resources().get("GPU", 0.0)

        assert ray.get(gpus.remote(), timeout=120) == 0.25, "pending forever otherwise"
    finally:
        ray.shutdown()
        cluster.shutdown()
        _end_processes_of(cluster.address or gcs)


def test_local_ray_has_no_autoscaler_whatever_files_lie_around(
    ray_local,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from raystudy.study.folder import StudyError
    from raystudy.study.setup import trial_resources

    # A bootstrap config from some earlier `ray up` in HOME: the monitor of this cluster runs
    # without --autoscaling-config, and that is what counts.
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ray_bootstrap_config.yaml").write_text(json.dumps(GPU_BOOTSTRAP))
    scaler = find_autoscaler()
    assert scaler.node_types == ()
    assert "runs without --autoscaling-config" in scaler.source
    gpu_spec = smoke()  # asks gpu 0.25
    assert trial_resources(gpu_spec) == {"cpu": 1.0, "gpu": 0.0}
    out = capsys.readouterr().out
    assert "No GPU in the Ray cluster and no autoscaler could add one" in out
    assert "resources.autoscale: true" in out
    # Scoring asked on a GPU that the cluster cannot give: refused before any trial trains.
    with pytest.raises(StudyError, match=r"evaluation\.device: cuda, but this cluster has no GPU"):
        trial_resources(smoke("evaluation.device=cuda"))
    with pytest.raises(StudyError, match=r"resources.cpu=64 .*nodes: 2 CPU/0 GPU.*no autoscaler"):
        trial_resources(smoke("resources.cpu=64"))
    # true: asked as written; false: only the nodes that exist.
    assert trial_resources(smoke("resources.autoscale=true")) == {
        "cpu": 1.0,
        "gpu": 0.25,
    }
    assert "resources.autoscale is true" in capsys.readouterr().out
    with pytest.raises(StudyError, match=r"resources\.autoscale is false"):
        trial_resources(smoke("resources.autoscale=false", "resources.cpu=3"))

    # Where no monitor is visible (a driver off the head), the bootstrap config is what is left.
    found = find_autoscaler(proc=tmp_path / "no-process-table")
    assert found.source == str(tmp_path / "ray_bootstrap_config.yaml")
    assert [t.name for t in found.launchable] == ["gpu_a10g"]


def test_node_types_an_autoscaler_reports_to_the_gcs_come_first(ray_local) -> None:
    from ray._private.worker import global_worker
    from ray.core.generated import autoscaler_pb2

    config = autoscaler_pb2.ClusterConfig()
    group = config.node_group_configs.add(name="gpu_group", max_count=-1)
    group.resources["CPU"] = 4
    group.resources["GPU"] = 1
    client = global_worker.gcs_client
    client.report_cluster_config(config.SerializeToString())
    try:
        scaler = find_autoscaler()
        assert scaler.launchable == (NodeType("gpu_group", 4, 1, -1),)
        assert "reported to the GCS" in scaler.source
        fitted = fit_request(1, 0.5, [CPU2], scaler)
        assert fitted.gpu == 0.5
    finally:
        client.report_cluster_config(autoscaler_pb2.ClusterConfig().SerializeToString())
    assert find_autoscaler().node_types == (), "an empty report is no autoscaler"
