"""Reaching the MLflow tracking store: what counts as unreachable, refused or busy.

A store that stops answering must not stop a study, and one that refuses a study must say so
plainly before anything starts; MLflow says both in many shapes (requests errors nested in
MlflowExceptions, sqlite lock errors, a server's exhausted pool). This module turns them into
`TrackingUnreachable` / `TrackingRejected` with one-line messages, and retries writes a busy
store rolled back (`retry_busy`).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mlflow.exceptions import MlflowException

from raystudy.disk_full import is_disk_full
from raystudy.spec.url_secrets import UnsetVariableError, expand, hidden


class TrackingUnreachable(RuntimeError):
    """The tracking store did not answer (after MLflow's own retries); the message names it."""


class TrackingRejected(RuntimeError):
    """The tracking store (or MLflow, for its URI) answered and refused: an unsupported
    scheme, a deleted experiment of the study's name, an artifact folder it cannot write.
    The message names the URI and MLflow's reason, without a traceback."""


class TrackingVariableUnset(TrackingRejected):
    """A `${VAR}` of the tracking URI that this process's environment lacks: the message says
    which and on which host; no other URI would be the fix."""


def shown(uri: str) -> str:
    """`uri` for messages: a written-out password (database or server URL) replaced by ***."""
    return hidden(uri)


def rejected_message(uri: str, exc: BaseException) -> str:
    # MLflow's messages run to several sentences and links: the first line says why.
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    reason = str(text).strip().splitlines()[0] if str(text).strip() else type(exc).__name__
    if isinstance(exc, ImportError):  # a database URL whose driver is not installed
        extra = " (pip install 'raystudy[postgres]')" if "psycopg" in reason else ""
        return (
            f"tracking.uri {shown(uri)!r}: MLflow needs a package that is not installed "
            f"({reason}){extra}"
        )
    return f"tracking.uri {shown(uri)!r}: MLflow refused it ({reason[:300]})"


@contextmanager
def refusing(uri: str) -> Iterator[None]:
    """Turns MLflow's refusals (and an artifact store it cannot write) into `TrackingRejected`;
    an unreachable store stays `TrackingUnreachable`, as `reaching` makes it."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        with reaching(uri):
            yield
    except TrackingUnreachable:
        raise
    except UnsetVariableError as exc:  # says which variable, where: nothing MLflow said
        raise TrackingVariableUnset(str(exc)) from None
    # requests' InvalidURL is a ValueError; OSError covers a local artifact folder that cannot
    # be made; ImportError a database URL whose driver is not installed (psycopg2, pymysql).
    except (MlflowException, SQLAlchemyError, ValueError, OSError, ImportError) as exc:
        raise TrackingRejected(rejected_message(uri, exc)) from exc


def is_unreachable(exc: BaseException) -> bool:
    """Whether `exc` means the store could not be reached (refused connection, timeout, only
    5xx answers), rather than a request it answered and rejected.

    MLflow's REST client retries with exponential backoff (`MLFLOW_HTTP_REQUEST_MAX_RETRIES`,
    default 7, about 4 minutes) and then raises an MlflowException whose cause or context is
    the `requests` error; both are walked.
    """
    import requests

    kinds = (
        requests.exceptions.ConnectionError,
        requests.exceptions.Timeout,
        requests.exceptions.RetryError,
    )
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, (TrackingUnreachable, *kinds)) or _database_lost(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


#: PostgreSQL SQLSTATEs of a server that is gone or going: class 08 (connection exception) and
#: 57P01-57P03 (admin/crash shutdown, cannot connect now), from PostgreSQL's Appendix A,
#: https://www.postgresql.org/docs/current/errcodes-appendix.html
_PG_GONE = ("08", "57P01", "57P02", "57P03")
#: libpq's words for 57P03, which reaches a client without its code while connecting.
_PG_NOT_NOW = ("the database system is starting up", "the database system is shutting down")


def _database_lost(exc: BaseException) -> bool:
    """A database store (MLflow's SQLAlchemy store on PostgreSQL) that could not be reached or
    dropped the connection, as opposed to one that answered with an error.

    SQLAlchemy flags a dropped connection (`connection_invalidated`); a refused or timed-out
    connect is the driver's OperationalError with no SQLSTATE (psycopg2's `pgcode`, psycopg's
    `sqlstate`), since no server said anything. sqlite's errors carry neither attribute: a
    locked sqlite file is busy (`is_busy`), not unreachable."""
    if getattr(exc, "connection_invalidated", False):
        return True
    if type(exc).__name__ != "OperationalError":
        return False
    for attr in ("pgcode", "sqlstate"):
        if hasattr(exc, attr):
            code = getattr(exc, attr)
            if code is not None:
                return str(code).startswith(_PG_GONE)
            # libpq gives a failed connect no code: a server that answered says FATAL (a
            # missing database or role, a wrong password), one that is starting or stopping
            # says so in words.
            text = str(exc)
            return "FATAL:" not in text or any(s in text for s in _PG_NOT_NOW)
    return False


#: How long one write waits out a busy store before it fails the trial.
BUSY_WAIT_S = 300.0


def is_busy(exc: BaseException) -> bool:
    """A store that said "try again", having written nothing. Both were measured with 32
    trial loggers at once on 2 loaded cores: MLflow's sqlite store raises TEMPORARILY_
    UNAVAILABLE when other writers hold the database lock past sqlite's busy timeout (the
    transaction is rolled back), and `mlflow server` answers BAD_REQUEST when its database
    connection pool stays exhausted for 30 s (before the request touched the database)."""
    if not isinstance(exc, MlflowException) or is_disk_full(exc):
        # MLflow says TEMPORARILY_UNAVAILABLE for any sqlite OperationalError, SQLITE_FULL
        # ("database or disk is full") too: waiting does not free the disk.
        return False
    return exc.error_code == "TEMPORARILY_UNAVAILABLE" or "QueuePool limit" in str(exc)


def retry_busy(call: Callable[[], Any], wait_s: float = BUSY_WAIT_S) -> Any:
    """`call()`, again after a growing, jittered pause (so the writers do not collide again)
    while the store is busy, for up to `wait_s` seconds."""
    deadline = time.monotonic() + wait_s
    pause = 0.25
    while True:
        try:
            return call()
        except MlflowException as exc:
            if not is_busy(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause * random.uniform(0.5, 1.5))
        pause = min(pause * 2, 10.0)


def unreachable_message(uri: str, exc: BaseException) -> str:
    text = str(exc)
    # requests nests the OS error ("[Errno 111] Connection refused") deep in its message.
    errno = re.search(r"\[Errno -?\d+\] [^'\"()]+", text)
    reason = errno.group(0).strip() if errno else (text.splitlines() or [type(exc).__name__])[0]
    return f"the MLflow tracking store {shown(uri)} is unreachable ({reason[:300]})"


@contextmanager
def reaching(uri: str) -> Iterator[None]:
    """Turns "could not reach the store" errors into `TrackingUnreachable`; others pass."""
    try:
        yield
    except TrackingUnreachable:
        raise
    except Exception as exc:
        if is_unreachable(exc):
            raise TrackingUnreachable(unreachable_message(uri, exc)) from exc
        raise


def check_reachable(uri: str, timeout_s: float = 10.0) -> None:
    """Raise `TrackingUnreachable` at once when an http(s) server or a PostgreSQL database
    does not answer at all: MLflow's client would retry for minutes (a server: 7 retries with
    backoff; a database: 10 engine attempts, about 100 s) before saying so. Any HTTP answer
    counts as reachable; a database that answers and refuses is `TrackingRejected`; other
    stores (sqlite, file) are checked by using them. A `${VAR}` the environment lacks is
    `TrackingRejected` naming it."""
    try:
        expand(uri)
    except UnsetVariableError as exc:
        raise TrackingVariableUnset(str(exc)) from None
    if uri.startswith("postgresql"):
        _check_database(uri, timeout_s)
        return
    if not uri.startswith(("http://", "https://")):
        return
    import requests

    try:
        requests.get(f"{expand(uri).rstrip('/')}/health", timeout=timeout_s)
    except requests.exceptions.SSLError:
        return  # TLS set up for MLflow's client (e.g. MLFLOW_TRACKING_INSECURE_TLS) is its call
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
        raise TrackingUnreachable(unreachable_message(uri, exc)) from exc


def _check_database(uri: str, timeout_s: float) -> None:
    """One connection to the database at `uri` (opened and closed; nothing read)."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError
    from sqlalchemy.pool import NullPool

    url = make_url(expand(uri))
    libpq = url.get_driver_name() in ("psycopg2", "psycopg")  # both take libpq's options
    connect_args = {"connect_timeout": max(1, round(timeout_s))} if libpq else {}
    try:
        engine = create_engine(url, poolclass=NullPool, connect_args=connect_args)
        with engine.connect():
            pass
    except (SQLAlchemyError, ImportError) as exc:
        if is_unreachable(exc):
            raise TrackingUnreachable(unreachable_message(uri, exc)) from exc
        raise TrackingRejected(rejected_message(uri, exc)) from exc
