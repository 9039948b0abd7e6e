"""`raystudy schema`: the study spec's JSON Schema."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def schema(
    out: Annotated[
        Path | None, typer.Option("--out", help="File to write; default: print it.")
    ] = None,
) -> None:
    """The study spec's JSON Schema, for editors (yaml-language-server) and other tools."""
    from raystudy.spec.json_schema import schema_text

    text = schema_text()
    if out is None:
        typer.echo(text, nl=False)
        return
    out.write_text(text)
    typer.echo(f"JSON Schema of a study spec -> {out}")
