"""The options and arguments several commands share, spelled and explained once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

OutputOpt = Annotated[Path, typer.Option("--output", "-o", help="Folder that holds the studies.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a spec field: dotted.path=value (value parsed as YAML)."),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        envvar="RAY_ADDRESS",
        help="Ray cluster to join (auto, host:6379, ray://host:10001); default: $RAY_ADDRESS, "
        "else start a local one.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
TrackingOpt = Annotated[
    str | None,
    typer.Option(
        envvar="MLFLOW_TRACKING_URI",
        help="MLflow store of the study, in place of the spec's tracking.uri; from "
        "$MLFLOW_TRACKING_URI only where the spec leaves tracking.uri null (default: sqlite "
        "in the study folder).",
    ),
]
StudyArg = Annotated[str, typer.Argument(help="Study name (a folder under --output).")]
VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Print Ray's and Tune's own output (status tables, worker logs) here instead of "
        "a progress display, with those in the study's logs/ folder.",
    ),
]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite", help="Delete an existing study of the same name first.")
]


def names_opt(help: str) -> Any:
    """A repeatable option of names (metrics, probes), comma-separated or one at a time; the
    type of the parameter that takes it (Typer reads its options from the annotations)."""
    return Annotated[list[str] | None, typer.Option(help=help)]


#: The studies folder every command defaults to.
STUDIES = Path("studies")


def from_environment(ctx: typer.Context, name: str) -> bool:
    """Whether option `name` took its value from its environment variable (by the source's
    name: Typer carries its own copy of click's enum)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "ENVIRONMENT"
