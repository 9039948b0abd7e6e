"""Passwords in store URLs (`tracking.uri`, `search.storage`): named, never written.

A study writes its URLs where others read them: `spec.yaml` and `study.json` in its folder,
the spec as an artifact of the MLflow parent run (shown to everyone who can open the UI), and
Tune's trial configs. A password written in the URL would be copied to all of them, so a
spec names it instead, as `${VAR}` (`postgresql://me:${MLFLOW_DB_PASSWORD}@db/mlflow`), and
`expand` replaces it from the environment of the process that connects, at the moment it
connects. A password written out is refused when the spec is read (`literal_password`), with
the ways to give it instead.
"""

from __future__ import annotations

import os
import re
import socket
from urllib.parse import quote, urlsplit

#: `${NAME}`: an environment variable, read where the URL is used. Only the braced form, so a
#: `$` that is part of a password or path is left alone.
PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

#: How else a password reaches each kind of store, for the messages.
OTHER_WAYS = (
    "PostgreSQL also reads PGPASSWORD or ~/.pgpass; an MLflow server MLFLOW_TRACKING_USERNAME "
    "and MLFLOW_TRACKING_PASSWORD"
)


class UnsetVariableError(ValueError):
    """A `${VAR}` in a store URL whose variable this process's environment lacks."""


def placeholders(url: str) -> list[str]:
    """The environment variables `url` names, in order."""
    return PLACEHOLDER.findall(url)


def literal_password(url: str) -> bool:
    """Whether `url` carries a password written out (`user:secret@host`), not as `${VAR}`."""
    try:
        password = urlsplit(url).password
    except ValueError:  # a malformed port: not for this check to judge
        return False
    return bool(password) and PLACEHOLDER.fullmatch(password) is None


def hidden(url: str) -> str:
    """`url` with a written-out password replaced by ***, for messages."""
    if not literal_password(url):
        return url
    return url.replace(f":{urlsplit(url).password}@", ":***@", 1)


def password_message(field: str, url: str) -> str:
    """Why a URL with a written-out password is refused, and what to write instead."""
    hidden_url = hidden(url)
    return (
        f"{field} {hidden_url!r} holds a password, which would be written in clear to the study's "
        "spec.yaml and study.json, Tune's trial configs and the MLflow run's artifacts; name "
        "an environment variable instead, e.g. "
        f"{hidden_url.replace(':***@', ':${MY_DB_PASSWORD}@', 1)!r}, set where the study runs "
        f"(on a cluster, on every node), or leave it out ({OTHER_WAYS})"
    )


def storage_message(url: str) -> str:
    """Why `search.storage` takes neither a password nor a `${VAR}`: Ray Tune's Optuna searcher
    pickles its storage, URL included, into the study's `tune/` folder at every save."""
    return (
        f"search.storage {hidden(url)!r}: Ray Tune saves the Optuna searcher with its storage URL "
        "in the study's tune/ folder, so the URL can hold neither a password nor a ${VAR}; "
        "leave the password out and give it as PGPASSWORD or in ~/.pgpass (PostgreSQL), or "
        "with ?read_default_file=~/.my.cnf (MySQL)"
    )


def expand(url: str, field: str = "tracking.uri") -> str:
    """`url` with each `${VAR}` replaced by the variable's value in this process's
    environment; UnsetVariableError naming the variable, the field and the host if one is
    unset (a trial on a node whose environment lacks it fails saying so)."""
    if "${" not in url:
        return url
    missing = [name for name in placeholders(url) if name not in os.environ]
    if missing:
        raise UnsetVariableError(
            f"{field} {url!r} names the environment variable {missing[0]}, which is not set "
            f"on {socket.gethostname()}; set it in the environment the study (and, on a "
            "cluster, every node's Ray) runs in"
        )
    # A password is inserted percent-encoded, so that one holding @ : / or % stays a password
    # (SQLAlchemy and requests decode it); other parts are inserted as they are.
    password = urlsplit(url).password
    if password and PLACEHOLDER.fullmatch(password):
        value = quote(os.environ[password[2:-1]], safe="")
        url = url.replace(f":{password}@", f":{value}@", 1)
    return PLACEHOLDER.sub(lambda m: os.environ[m.group(1)], url)
