"""The study spec's `tracking` block: the MLflow store a study's driver and every trial
process share, and what a tracking URL may hold (no written password, an absolute sqlite
path, a synchronous PostgreSQL driver)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, field_validator

from raystudy.spec.trial_config import StrictConfig
from raystudy.spec.url_secrets import (
    literal_password,
    password_message,
    placeholders,
)

#: MLflow tracking stores a study can share between its driver and every trial process
#: (SQLAlchemy database schemes may name a driver: postgresql+psycopg2).
TRACKING_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql", "http", "https", "databricks")
FILE_STORE_OPT_IN = "MLFLOW_ALLOW_FILE_STORE"
#: What `tracking.uri` may be, for every message about one that cannot be used.
ALLOWED_TRACKING_URIS = (
    "null (a sqlite store in the study folder), sqlite:///PATH.db, http(s)://HOST:PORT of an "
    "MLflow server, or a database URL (" + ", ".join(f"{s}://" for s in TRACKING_SCHEMES[1:4]) + ")"
)


def _no_written_password(url: str, field: str) -> None:
    """Refuse a password written out in the tracking URL (see `url_secrets`), and a `${VAR}`
    in a sqlite path, which is made absolute here, before any variable is read."""
    if literal_password(url):
        raise ValueError(password_message(field, url))
    if placeholders(url) and url.lower().startswith("sqlite:"):
        raise ValueError(f"{field} {url!r}: a sqlite path takes no ${{VAR}}; write the path itself")


def absolute_sqlite(url: str, field: str) -> str:
    """`sqlite:///rel.db` made absolute: every trial runs in a working folder of its own, where
    a relative path would name another, empty database (and a resumed study, started from
    another folder, yet another)."""
    rest = url.removeprefix("sqlite://")
    if not rest.startswith("/") or rest == "/":
        raise ValueError(
            f"{field} {url!r} names no database file: use sqlite:///path/to/file.db "
            "(a file is shared by every trial process; an in-memory one is not)"
        )
    path = rest[1:]
    return url if path.startswith("/") else "sqlite:///" + str(Path(path).resolve())


#: SQLAlchemy's synchronous PostgreSQL drivers (the store is used from plain threads).
POSTGRES_DRIVERS = ("psycopg2", "psycopg", "pg8000")


def postgres_driver(url: str, field: str) -> str:
    """A PostgreSQL URL with its driver named: `postgresql://` becomes `postgresql+psycopg2://`
    (the driver of the `postgres` extra), since which driver a bare `postgresql://` loads
    depends on the SQLAlchemy release (psycopg2 before 2.1, psycopg 3 from 2.1 on). Other
    URLs are returned as they are."""
    scheme, sep, rest = url.partition("://")
    backend, _, driver = scheme.lower().partition("+")
    if backend == "postgres":
        raise ValueError(
            f"{field} {url!r}: SQLAlchemy does not know the scheme 'postgres://'; "
            f"write postgresql://{rest}"
        )
    if backend != "postgresql" or not sep:
        return url
    if not driver:
        return f"postgresql+psycopg2://{rest}"
    if driver not in POSTGRES_DRIVERS:
        raise ValueError(
            f"{field} {url!r}: unknown PostgreSQL driver {driver!r}; use postgresql:// "
            f"(psycopg2) or postgresql+DRIVER:// with DRIVER one of {', '.join(POSTGRES_DRIVERS)}"
        )
    return url


class TrackingConfig(StrictConfig):
    uri: str | None = Field(None, description="MLflow tracking URI; null -> sqlite in the study")

    @field_validator("uri")
    @classmethod
    def _store_usable(cls, v: str | None) -> str | None:
        if v is None:
            return v
        _no_written_password(v, "tracking.uri")
        scheme = v.partition("://")[0].lower() if "://" in v else ""
        if scheme == "sqlite":
            return absolute_sqlite(v, "tracking.uri")
        if scheme.split("+")[0] in ("postgres", "postgresql"):
            return postgres_driver(v, "tracking.uri")
        if scheme.split("+")[0] in TRACKING_SCHEMES:
            return v
        if scheme in ("", "file"):
            # MLflow 3 refuses its file store unless told otherwise, in every process.
            if os.environ.get(FILE_STORE_OPT_IN, "").lower() == "true":
                return v if scheme else Path(v).resolve().as_uri()  # see absolute_sqlite
            raise ValueError(
                f"{v!r} is an MLflow file store, which MLflow 3 refuses unless "
                f"{FILE_STORE_OPT_IN}=true is set; allowed: {ALLOWED_TRACKING_URIS}"
            )
        raise ValueError(
            f"unknown tracking store scheme {scheme!r} in {v!r}; allowed: {ALLOWED_TRACKING_URIS}"
        )
