"""Shared fixtures: one real local Ray cluster per test process (~5 s start-up), shared by the
modules that need a plain one; modules that need another (several nodes, a logical GPU) call
`fresh_ray()` first and the next module using `ray_local` starts the plain one again."""

from __future__ import annotations

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
