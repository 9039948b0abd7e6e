"""The throwaway stores benchmarks time: an `mlflow server` and a PostgreSQL cluster on
127.0.0.1, started and removed by the benchmark.

Both are the tests' own (tests/mlflow_server.py, tests/postgres.py, importable without pytest),
so that the servers a benchmark measures are started exactly as the tests start theirs; tests/
is put at the end of the import path for them (it is no package).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
if str(TESTS) not in sys.path:
    sys.path.append(str(TESTS))

import postgres  # noqa: E402
from mlflow_server import MlflowServer  # noqa: E402

Missing = postgres.Missing


@contextlib.contextmanager
def mlflow_server(folder: Path, backend: str | None = None) -> Iterator[MlflowServer]:
    """An `mlflow server` over `backend` (default: a sqlite file `folder`/server.db) with
    MLflow's default workers, as a cluster's head runs it; its output in `folder`/server.log.
    Stopped with SIGKILL at the end (what it wrote is committed by then)."""
    folder.mkdir(parents=True, exist_ok=True)
    server = MlflowServer(folder, backend=backend, workers=None, log=folder / "server.log")
    try:
        server.start(timeout_s=120)
    except AssertionError as exc:
        raise SystemExit(str(exc)) from None
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def postgres_cluster(fsync: bool = True) -> Iterator[postgres.Postgres]:
    """A PostgreSQL cluster in a temporary folder (`fsync` on by default: a benchmark times a
    store as it is deployed); stopped and removed at the end. Raises `Missing` (what to
    install) where it cannot be started."""
    cluster = postgres.started(fsync=fsync)
    try:
        yield cluster
    finally:
        cluster.stop("fast")
        cluster.remove()
