"""`raystudy ui`: the MLflow UI on a study's store, opened on its trial runs."""

from __future__ import annotations

from typing import Annotated

import typer

from raystudy.cli.exits import fail
from raystudy.cli.options import STUDIES, OutputOpt, StudyArg


def ui(
    study: StudyArg,
    output: OutputOpt = STUDIES,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 5000,
) -> None:
    """Start the MLflow UI on the study's store, bound to 127.0.0.1, and print the URL of its
    trial runs with the columns to compare (objective, beta, input noise, seed, DCI-D,
    transfer MAEs). A study on a tracking server: the view is saved there and its URL on
    that server printed; nothing is started."""
    from raystudy.study.folder import StudyError
    from raystudy.study.ui import serve, study_ui
    from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable

    try:
        shown = study_ui(output, study, port)
    except (StudyError, TrackingUnreachable, TrackingRejected) as exc:
        fail(exc)
    typer.echo("\n".join(shown.lines()))
    if shown.server is None:
        raise typer.Exit(serve(shown))
