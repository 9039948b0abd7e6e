"""Shared fixtures: one real local Ray cluster per test process (~5 s start-up), shared by the
modules that need a plain one; modules that need another (several nodes, a logical GPU) call
`fresh_ray()` first and the next module using `ray_local` starts the plain one again."""

from __future__ import annotations

import contextlib
import os

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# `run` joins $RAY_ADDRESS and logs to $MLFLOW_TRACKING_URI: a developer's shell may export
# either, and the tests start their own clusters and stores.
for _variable in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI"):
    os.environ.pop(_variable, None)


def fresh_ray() -> None:
    """End the shared cluster (if up) so that a module can start a Ray of its own."""
    import ray

    if ray.is_initialized():
        ray.shutdown()


def ray_cluster(**head_args: object):
    """A `ray.cluster_utils.Cluster` with its head node, started once more when the head's
    raylet misses Ray's fixed 30 s to register on a loaded machine (as
    `raystudy.tune.cluster.start_local` does for a local Ray); the processes the first try
    left are ended first, so that the second finds its ports free."""
    import psutil
    from ray.cluster_utils import Cluster

    from raystudy.tune.cluster import slow_start

    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    try:
        return Cluster(initialize_head=True, head_node_args=head_args)
    except Exception as exc:  # Ray raises a bare Exception here
        if not slow_start(exc):
            raise
        left = [p for p in me.children(recursive=True) if p.pid not in before]
        for process in left:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(left, timeout=30)
        print(f"Ray's cluster head was slow to start ({exc}); starting it once more.")
        return Cluster(initialize_head=True, head_node_args=head_args)


@pytest.fixture
def one_torch_thread():
    """One torch thread for a test of small batches: on the shared cores a second thread only
    adds synchronisation. Ask for it with `pytestmark = pytest.mark.usefixtures(...)`."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def _ray_session():
    yield
    fresh_ray()


@pytest.fixture(scope="module")
def ray_local(_ray_session):
    import ray

    from raystudy.tune.cluster import start_local

    if not ray.is_initialized():
        start_local(num_cpus=2, include_dashboard=False, log_to_driver=False)
    return ray


@pytest.fixture(scope="module")
def postgres():
    """A throwaway PostgreSQL server on 127.0.0.1 (tests/postgres.py), or the test skipped
    with what to install."""
    from postgres import postgres_or_skip

    server = postgres_or_skip()
    yield server
    server.stop("immediate")
    server.remove()


#: Fixtures that start Ray or a server in processes of their own.
PROCESS_FIXTURES = frozenset({"ray_local", "postgres", "server", "cluster", "head"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`processes` on every test that starts Ray or a server through a fixture (beside the
    modules and tests marked by hand: the CLI in processes of its own). Their time goes to
    Ray, MLflow and Optuna, whose versions the ranges let differ between CI's legs only when
    one of them releases; a dependency leg of `.ci/run` whose Ray, MLflow, Optuna and torch
    are the main leg's leaves them out, and runs them once one differs."""
    for item in items:
        if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.processes)
