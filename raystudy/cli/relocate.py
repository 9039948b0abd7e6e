"""`raystudy relocate`: a study folder that was moved or copied, pointed at its new place."""

from __future__ import annotations

import typer

from raystudy.cli.exits import fail
from raystudy.cli.options import STUDIES, OutputOpt, StudyArg


def relocate(study: StudyArg, output: OutputOpt = STUDIES) -> None:
    """Point a study folder that was moved or copied at its new place: its study.json and
    the artifact paths of its sqlite store (a server or a database is left as it is)."""
    from raystudy.study.folder import StudyError, study_path
    from raystudy.study.relocate import relocate_study

    try:
        done = relocate_study(study_path(output, study))
    except StudyError as exc:
        fail(exc)
    typer.echo("\n".join(done.lines()))
