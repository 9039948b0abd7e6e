"""`raystudy status`: a study's trials by state and its MLflow runs by status."""

from __future__ import annotations

import typer

from raystudy.cli.exits import fail, print_report
from raystudy.cli.options import STUDIES, JsonOpt, OutputOpt, StudyArg


def status(study: StudyArg, output: OutputOpt = STUDIES, json_: JsonOpt = False) -> None:
    """Trial counts by state (Tune's view) and MLflow runs by status."""
    import json

    from raystudy.study.folder import StudyError, StudyInfo, study_path

    # A study with no folder at all is said before MLflow and Tune load (seconds); a folder
    # without study.json may be a study being started, which status names.
    if not study_path(output, study).is_dir():
        try:
            StudyInfo.read(study_path(output, study))
        except StudyError as exc:
            fail(exc)
    from raystudy.study.status import status_data, status_report

    try:
        if json_:
            typer.echo(json.dumps(status_data(study_path(output, study), study)))
            return
        report = status_report(study_path(output, study), study)
    except StudyError as exc:
        fail(exc)
    print_report(report)
