"""`raystudy status`: a study's trials by state and its MLflow runs by status."""

from __future__ import annotations

import typer

from raystudy.cli.exits import fail, print_report, refuse_missing_study
from raystudy.cli.options import STUDIES, JsonOpt, OutputOpt, StudyArg


def status(study: StudyArg, output: OutputOpt = STUDIES, json_: JsonOpt = False) -> None:
    """Trial counts by state (Tune's view) and MLflow runs by status."""
    import json

    refuse_missing_study(output, study)
    from raystudy.study.folder import StudyError, study_path
    from raystudy.study.status import status_data, status_report

    try:
        if json_:
            typer.echo(json.dumps(status_data(study_path(output, study), study)))
            return
        report = status_report(study_path(output, study), study)
    except StudyError as exc:
        fail(exc)
    print_report(report)
