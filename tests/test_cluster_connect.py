"""Joining Ray by address (raystudy.tune.cluster.connect): a study's local Ray is named
127.0.0.1 and listens on loopback only, and a second driver on this machine (`--address` of
a test's Ray, `rescore` beside a study) joins it there; Ray's own join would swap 127.0.0.1
for the machine's address, where nothing of that Ray listens."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from raystudy.tune.cluster import _on_loopback, slow_start


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1:6379", True),
        ("127.0.1.1:6379", True),
        ("localhost:6379", True),
        ("[::1]:6379", True),
        ("192.0.2.2:6379", False),
        ("head.example:6379", False),
        ("auto", False),
    ],
)
def test_which_addresses_are_loopback(address: str, loopback: bool) -> None:
    assert _on_loopback(address) is loopback


def test_a_second_driver_joins_a_study_s_local_ray_by_its_loopback_address(ray_local) -> None:
    gcs = ray_local.get_runtime_context().gcs_address
    assert gcs.startswith("127.0.0.1:")  # ray_local came from start_local
    child = (
        "import sys; from raystudy.tune.cluster import connect; connect(sys.argv[1]); "
        "import ray; print('NODE', ray.util.get_node_ip_address(), "
        "ray.get(ray.remote(lambda: 6 * 7).remote()))"
    )
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    done = subprocess.run(
        [sys.executable, "-c", child, gcs], capture_output=True, text=True, timeout=180, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "NODE 127.0.0.1 42" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("message", "again"),
    [
        # Ray 2.60's words (ray/_private/node.py), as clean clones on a busy 2-core machine met them
        ("The current node timed out during startup. This could happen because ...", True),
        ("Timed out waiting for file /tmp/ray/session_x/gcs_server_port_9659dc3b", True),
        ("Cannot include dashboard with missing packages.", False),
        ("Failed to connect to Ray cluster at 127.0.0.1:6379", False),
    ],
)
def test_a_local_ray_is_started_again_only_after_ray_s_own_startup_timeouts(
    message: str, again: bool
) -> None:
    assert slow_start(RuntimeError(message)) is again
