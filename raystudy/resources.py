"""What one trial asks Ray for, fitted to the cluster it runs on and to what its autoscaler can add.

A trial whose request no node can hold pends forever in Ray, silently. So before the Tuner
starts, the request `resources: {cpu: C, gpu: G}` is checked against the nodes that exist and,
when the cluster autoscales, against the node types its autoscaler may launch:

- G > 0 but no node has a GPU and no launchable node type has one: run on CPU (G = 0), say so;
- some existing node holds (C, G): ask for it;
- a launchable node type holds it: ask for it and say that the autoscaler will start such a node;
- nothing does: `ResourceError`, naming resources.cpu / resources.gpu, the nodes, the node types.

`resources.autoscale` says which node types count: `false` none; `true` trust the user (ask as
written, whatever the cluster has); `auto` (default) those of the autoscaler found by
`raystudy.tune.probe.find_autoscaler`. Ray 2.60 has no public call that lists the node types an
autoscaler may launch, so the probe reads them where Ray keeps them (see its docstring).

Here are the decision and the readers of what Ray leaves on the head: the autoscaler's config
files and its monitor process in `/proc`. No Ray: asking the connected cluster is the probe's
job, inside `raystudy.tune`, the one package that imports Ray.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

#: Where `ray up` puts the autoscaler's config on the head (the prepared and provider-bootstrapped
#: cluster config, as JSON; `ray.autoscaler._private.commands._set_up_config_for_head_node`); the
#: head then runs `ray start --head --autoscaling-config=~/ray_bootstrap_config.yaml`, which hands
#: that path to Ray's monitor (`ray.autoscaler._private.monitor`, or `autoscaler/v2/monitor.py`).
BOOTSTRAP_CONFIG = "~/ray_bootstrap_config.yaml"

Autoscale = Literal["auto"] | bool


class ResourceError(RuntimeError):
    """A trial request that no node, existing or launchable, can ever hold; or an unreadable
    autoscaler config. The message names the fields and what exists."""


@dataclass(frozen=True)
class Node:
    """An alive Ray node's CPU and GPU count (Ray's logical resources)."""

    cpu: float
    gpu: float

    def holds(self, cpu: float, gpu: float) -> bool:
        # A fraction of a GPU fits any node with a GPU; whole GPUs need that many on one node.
        return self.cpu >= cpu and self.gpu >= gpu

    def describe(self) -> str:
        return f"{self.cpu:g} CPU/{self.gpu:g} GPU"


@dataclass(frozen=True)
class NodeType:
    """A node type of the autoscaler's config. `cpu`/`gpu` None: not in the config (Ray's `local`
    provider learns them from a running node); `max_workers` -1: no limit."""

    name: str
    cpu: float | None
    gpu: float | None
    max_workers: int

    @property
    def launchable(self) -> bool:
        return self.max_workers != 0

    def holds(self, cpu: float, gpu: float) -> bool:
        # Unknown resources hold nothing raystudy can promise.
        return (
            self.cpu is not None
            and self.gpu is not None
            and Node(self.cpu, self.gpu).holds(cpu, gpu)
        )

    def describe(self) -> str:
        size = (
            "resources unknown" if self.cpu is None else f"{self.cpu:g} CPU/{self.gpu or 0:g} GPU"
        )
        count = "no limit" if self.max_workers < 0 else f"up to {self.max_workers}"
        return f"{self.name} ({size}, {count})"


@dataclass(frozen=True)
class Autoscaler:
    """The node types an autoscaler may launch (empty: none found) and where they were read,
    or why there are none."""

    node_types: tuple[NodeType, ...]
    source: str

    @property
    def launchable(self) -> tuple[NodeType, ...]:
        return tuple(t for t in self.node_types if t.launchable)


@dataclass(frozen=True)
class Fitted:
    """The request Tune gets, and what to tell the user about it (None: nothing to say)."""

    cpu: float
    gpu: float
    message: str | None

    @property
    def resources(self) -> dict[str, float]:
        return {"cpu": self.cpu, "gpu": self.gpu}


def fit_request(
    cpu: float,
    gpu: float,
    nodes: Sequence[Node],
    autoscaler: Autoscaler,
    *,
    trust: bool = False,
    study: str = "study",
) -> Fitted:
    """The decision, on plain tables: (C, G) against existing `nodes` and launchable node types.

    `trust` (`resources.autoscale: true`): ask as written, with a note when no node holds it now.
    """
    exists = ", ".join(n.describe() for n in nodes) or "none"
    asked = f"resources.cpu={cpu:g}, resources.gpu={gpu:g}"
    if trust:
        if any(n.holds(cpu, gpu) for n in nodes):
            return Fitted(cpu, gpu, None)
        return Fitted(
            cpu,
            gpu,
            f"No node of the Ray cluster holds {asked} yet (nodes: {exists}); as "
            "resources.autoscale is true, the trials wait for nodes that do.",
        )
    launchable = autoscaler.launchable
    notes = []
    asked_gpu = gpu
    if gpu > 0 and not any(n.gpu > 0 for n in nodes) and not any(t.gpu for t in launchable):
        where = (
            f"none of the node types its autoscaler can launch has one ({_types(autoscaler)})"
            if launchable
            else f"no autoscaler could add one ({autoscaler.source}; set resources.autoscale: "
            "true if GPU nodes will join)"
        )
        notes.append(f"No GPU in the Ray cluster and {where}: the {study!r} trials run on CPU.")
        gpu = 0.0
    if any(n.holds(cpu, gpu) for n in nodes):
        return Fitted(cpu, gpu, " ".join(notes) or None)
    fitting = [t for t in launchable if t.holds(cpu, gpu)]
    if fitting:
        notes.append(
            f"No node of the Ray cluster holds resources.cpu={cpu:g}, resources.gpu={gpu:g} yet "
            f"(nodes: {exists}): Ray's autoscaler will start a {fitting[0].describe()} node for "
            f"the trials (node types from {autoscaler.source})."
        )
        return Fitted(cpu, gpu, " ".join(notes))
    if launchable:
        beyond = (
            f"nor does any node type its autoscaler can launch ({_types(autoscaler)}; "
            f"from {autoscaler.source})"
        )
        fix = "ask for less, or give the autoscaler a node type that holds it"
    else:
        beyond = f"and no autoscaler can add one ({autoscaler.source})"
        fix = (
            "ask for less, or add nodes that hold it (resources.autoscale: true if they join later)"
        )
    zeroed = f" ({asked_gpu:g} asked; no GPU anywhere)" if gpu != asked_gpu else ""
    raise ResourceError(
        f"each trial asks for resources.cpu={cpu:g} and resources.gpu={gpu:g}{zeroed} on one "
        f"node, but no node of this Ray cluster has that (nodes: {exists}), {beyond}; Ray would "
        f"leave the trials pending forever: {fix}"
    )


def _types(autoscaler: Autoscaler) -> str:
    return ", ".join(t.describe() for t in autoscaler.launchable)


# -- reading the autoscaler's config -----------------------------------------------------------


def read_cluster_config(path: str | Path) -> Autoscaler:
    """The node types of a cluster-launcher config: `~/ray_bootstrap_config.yaml` on a head that
    `ray up` started, or a `cluster.yaml` as written.

    Per-type `max_workers` defaults the way Ray fills it in
    (`ray.autoscaler._private.util.fill_node_type_min_max_workers`): 0 for the head node type,
    the global `max_workers` for the others; the global `max_workers` also caps each type.
    A `readonly` provider (what `ray start` without a config runs) launches nothing.
    """
    path = Path(path).expanduser()
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))  # the bootstrap file is JSON
    except OSError as exc:
        raise ResourceError(f"{path}: cannot read the autoscaler config: {exc}") from None
    except yaml.YAMLError as exc:
        raise ResourceError(f"{path}: not YAML/JSON: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ResourceError(f"{path}: a cluster config is a mapping, got {type(raw).__name__}")
    cap = _count(raw, "max_workers", path, "max_workers")
    provider = raw.get("provider")
    if isinstance(provider, Mapping) and provider.get("type") == "readonly":
        cap = 0
    types = raw.get("available_node_types") or {}
    if not isinstance(types, Mapping):
        raise ResourceError(
            f"{path}: available_node_types: expected a mapping of node type names to "
            f"{{resources, min_workers, max_workers}}, got {type(types).__name__}"
        )
    head = raw.get("head_node_type")
    found = []
    for name, body in types.items():
        field = f"available_node_types.{name}"
        if not isinstance(body, Mapping):
            raise ResourceError(f"{path}: {field}: expected a mapping, got {type(body).__name__}")
        own = _count(body, "max_workers", path, f"{field}.max_workers")
        if own is None:
            own = 0 if name == head else (cap if cap is not None else -1)
        if cap is not None:
            own = min(own, cap) if own >= 0 else cap
        res = body.get("resources") or {}
        if not isinstance(res, Mapping):
            raise ResourceError(
                f"{path}: {field}.resources: expected a mapping such as {{CPU: 8, GPU: 1}}, "
                f"got {res!r}"
            )
        cpu = _amount(res, "CPU", path, f"{field}.resources")
        gpu = _amount(res, "GPU", path, f"{field}.resources")
        if cpu is None and gpu is None:
            found.append(NodeType(str(name), None, None, own))
        else:
            found.append(NodeType(str(name), cpu or 0.0, gpu or 0.0, own))
    return Autoscaler(tuple(found), str(path))


def _count(body: Mapping[str, Any], key: str, path: Path, field: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ResourceError(f"{path}: {field}: expected a whole number >= 0, got {value!r}")
    return value


def _amount(res: Mapping[str, Any], key: str, path: Path, field: str) -> float | None:
    value = res.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ResourceError(f"{path}: {field}.{key}: expected a number >= 0, got {value!r}")
    return float(value)


def from_gcs_cluster_config(config: Any) -> Autoscaler | None:
    """Node types from the `ClusterConfig` an autoscaler may report to Ray's GCS (what Ray Data
    reads, `ray._private.state.state.get_cluster_config()`); None when none was reported."""
    if config is None or not config.node_group_configs:
        return None
    types = tuple(
        NodeType(
            g.name,
            float(g.resources.get("CPU", 0)),
            float(g.resources.get("GPU", 0)),
            -1 if g.max_count < 0 else int(g.max_count),
        )
        for g in config.node_group_configs
    )
    return Autoscaler(types, "the cluster config Ray's autoscaler reported to the GCS")


@dataclass(frozen=True)
class Monitor:
    """Ray's autoscaler monitor process of one cluster, as this machine's process table shows it."""

    pid: int
    autoscaling_config: Path | None  # None: read-only provider, nothing is ever launched


def find_monitor(gcs_address: str, proc: Path = Path("/proc")) -> Monitor | None:
    """The monitor process (`ray/autoscaler/.../monitor.py`) serving the GCS at `gcs_address`,
    if it runs on this machine (the head; the driver of a `ray up` cluster runs there).

    Every head runs one, `ray start --head` and `ray.init()` included; only a head started with
    `--autoscaling-config=FILE` passes FILE on, and without it the monitor uses Ray's read-only
    provider, which never adds a node. Matched by the GCS port, which one GCS owns per machine
    (the driver may name the head by another of its addresses). Linux only (`/proc`).
    """
    port = gcs_address.rpartition(":")[2]
    try:
        entries = list(proc.iterdir())
    except OSError:
        return None
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        args = [a.decode(errors="replace") for a in argv if a]
        if not any(a.endswith("monitor.py") and "autoscaler" in a for a in args):
            continue
        gcs = _option(args, "--gcs-address")
        if gcs is None or gcs.rpartition(":")[2] != port:
            continue
        config = _option(args, "--autoscaling-config")
        if not config:
            return Monitor(int(entry.name), None)
        where = Path(os.path.expanduser(config))
        if not where.is_absolute():  # relative to the monitor's working directory
            with contextlib.suppress(OSError):  # unreadable: the path as given
                where = Path(os.readlink(entry / "cwd")) / where
        return Monitor(int(entry.name), where)
    return None


def _option(args: Sequence[str], name: str) -> str | None:
    for i, a in enumerate(args):
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
        if a == name and i + 1 < len(args):
            return args[i + 1]
    return None
