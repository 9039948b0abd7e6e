"""`raystudy list`: the names a study spec can use, kind by kind."""

from __future__ import annotations

from typing import Annotated

import typer

from raystudy.cli.exits import fail
from raystudy.cli.options import JsonOpt


def list_(
    kind: Annotated[
        str | None,
        typer.Argument(
            help="datasets, splits, objectives, architectures, metrics or probes; "
            "default: every kind."
        ),
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """The names a study spec can use, kind by kind, with a line on each (an objective's
    options with their defaults)."""
    import dataclasses
    import json

    from raystudy.checks.listing import KINDS, entries, format_entries

    try:
        kinds = [kind] if kind is not None else list(KINDS)
        listed = {k: entries(k) for k in kinds}
    except ValueError as exc:
        fail(exc)
    if json_:
        typer.echo(json.dumps({k: [dataclasses.asdict(e) for e in v] for k, v in listed.items()}))
        return
    typer.echo("\n".join(format_entries(k, v) for k, v in listed.items()))
