"""Joining a Ray cluster (or starting a local one), with an address nothing answers at refused
at once: `ray.init` would wait a minute for it and then exit the process.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


class TuneSetupError(RuntimeError):
    """Ray or Tune cannot be set up as asked (an address Ray cannot join, an Optuna storage
    that cannot be read); the message says why and what to do. The study reports it as a
    `StudyError`."""


#: What --address may be, for messages about one that Ray cannot join.
ADDRESSES = (
    "'auto' (the cluster `ray start --head` started on this machine), HOST:PORT of a head "
    "node (its GCS port, 6379 unless set), ray://HOST:10001 (Ray Client; needs "
    "`pip install 'ray[client]'`), or no --address to start a local Ray"
)


def _check_address(address: str, timeout_s: float = 5.0) -> None:
    """Refuse a HOST:PORT that nothing answers at, at once: ray.init waits a minute for a
    GCS there and then exits the process."""
    import socket

    if address in ("auto", "local") or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return  # ray.init says what is wrong with the form
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except (OSError, ValueError, OverflowError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise TuneSetupError(
            f"--address {address!r}: nothing answers at {host}:{port} ({reason}); start the "
            f"head there (`ray start --head --port {port}`) or fix the address; allowed: "
            f"{ADDRESSES}"
        ) from None


def _on_loopback(address: str) -> bool:
    """Whether HOST:PORT names this machine's loopback (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    host = address.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def connect(address: str | None) -> None:
    """Join `address` or start a local Ray, the dashboard off and every port on loopback."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Tune warns whenever checkpoints come faster than every 5 s, which short trials do by
    # design; the warning says nothing a user can act on.
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    # The searcher's metric exists only in a trial's final result, not in its train reports.
    os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    if ray.is_initialized():
        return
    if address:
        _check_address(address)
        try:
            # A loopback address is a Ray on this machine, maybe a study's own (start_local):
            # Ray would swap 127.0.0.1 for the machine's address, where that one does not listen.
            with _loopback_node() if _on_loopback(address) else contextlib.nullcontext():
                ray.init(address=address, log_to_driver=True)
        # Ray exits the process (SystemExit) when a GCS it found stops answering.
        except (ValueError, ConnectionError, TimeoutError, RuntimeError, SystemExit) as exc:
            # A failed Ray Client join (ray://) leaves the process in client mode, where the
            # next ray.init (a local Ray, in the same process) fails: undo it.
            with contextlib.suppress(Exception):
                ray.shutdown()
            reason = (
                "no Ray head answered there"
                if isinstance(exc, SystemExit)
                else (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            )
            raise TuneSetupError(
                f"--address {address!r}: cannot join a Ray cluster there ({reason}); "
                f"allowed: {ADDRESSES}"
            ) from None
    else:
        # "local": always a cluster of our own; a bare ray.init() would join any other local
        # cluster named in /tmp/ray (another user's study, a test run). It listens on loopback
        # only (start_local), and Ray (2.59 and later) starts it with token authentication,
        # which refuses callers without the token it keeps in ~/.ray. Setting RAY_AUTH_MODE
        # here, after Ray was imported, would leave this driver without it.
        start_local(include_dashboard=False, log_to_driver=True)


def connected() -> bool:
    """Whether this process is connected to a Ray (started or joined)."""
    import ray

    return ray.is_initialized()


def disconnect() -> None:
    """Leave Ray: a local Ray this process started stops, a cluster it joined runs on. Ray
    forwards its workers' output to the driver until then."""
    import ray

    if ray.is_initialized():
        ray.shutdown()


#: Ray's own words when a new node's raylet did not register with its GCS, or its GCS did not
#: write its port file, within Ray's fixed 30 s (ray/_private/node.py, Ray 2.60); both seen on
#: a 2-core machine busy with other Ray clusters.
_SLOW_START = ("timed out during startup", "Timed out waiting for file")


def slow_start(exc: BaseException) -> bool:
    """Whether `exc` is Ray giving up on a node whose raylet did not register, or whose GCS did
    not publish its port, within its fixed 30 s (ray/_private/node.py): a loaded machine, worth
    one more start."""
    return any(words in str(exc) for words in _SLOW_START)


def start_local(**init_args: object) -> None:
    """`ray.init(address="local", **init_args)` on a node that listens on loopback only,
    started once more after a shutdown when the first node did not register in time: a loaded
    machine, not a broken install, and a second start usually finds the machine freer. A
    second timeout is raised as Ray raised it."""
    import ray

    with _loopback_node():
        try:
            ray.init(address="local", **init_args)
        except Exception as exc:  # Ray raises a bare Exception here
            if not slow_start(exc):
                raise
            print(f"Ray's local node was slow to start ({exc}); starting it once more.", flush=True)
            ray.shutdown()
            ray.init(address="local", **init_args)


@contextlib.contextmanager
def _loopback_node() -> Iterator[None]:
    """Name the local node 127.0.0.1 while it starts, as Ray itself does on macOS and Windows.

    Ray names a new node by this machine's address, and every server of the node binds to
    that name: its gRPC ports, and with ray[default] installed (the `cluster` and `dev`
    extras) the dashboard agent's HTTP server and the Prometheus exporters of the agent, the
    dashboard process and the autoscaler monitor, which answer anyone without a token. Named
    127.0.0.1, each binds loopback only, and a private local Ray needs nothing more. The name
    comes from `ray._private.services.get_node_ip_address`, which returns loopback when
    `ray_constants.ENABLE_RAY_CLUSTER` is off (docs/architecture/scale.md, 9b); it is
    put back afterwards, since joining a cluster later in this process needs the address.
    """
    from ray._private import ray_constants

    before = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    if before is None:  # moved by an upgrade: tests/test_private_apis.py says so
        yield
        return
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before
