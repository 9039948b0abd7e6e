"""`raystudy analyze`: a study's correlations, model selection, figures and report."""

from __future__ import annotations

from typing import Annotated

import typer

from raystudy.cli.exits import STORE, fail, refuse_missing_study
from raystudy.cli.options import STUDIES, OutputOpt


def analyze(
    study: Annotated[str, typer.Argument(help="Study name (a folder under --output).")],
    output: OutputOpt = STUDIES,
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            help="Also group trials by this grid axis (model.beta, model, noise, ...); repeatable.",
        ),
    ] = None,
    bootstrap: Annotated[
        int, typer.Option(min=0, help="Bootstrap resamples per confidence interval.")
    ] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap resamples.")] = 0,
    min_trials: Annotated[
        int, typer.Option(min=2, help="Fewest trials behind a number; fewer leave it blank.")
    ] = 5,
    log: Annotated[
        bool, typer.Option(help="Log the files to the study's parent MLflow run.")
    ] = True,
    from_tune: Annotated[
        bool,
        typer.Option(
            "--from-tune",
            help="Read the results from Tune's storage (the study's tune/), not MLflow; logs "
            "nothing.",
        ),
    ] = False,
) -> None:
    """Correlations with bootstrap CIs, model selection, figures and an HTML report of a
    study, written to the study folder's analysis/ and logged to its parent MLflow run."""
    refuse_missing_study(output, study)
    from raystudy.analysis.pipeline import AnalysisError, Settings, analyze_study
    from raystudy.analysis.summary import format_summary
    from raystudy.study.folder import StudyError, study_path
    from raystudy.terminal.steps import StepLines
    from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable

    settings = Settings(by=tuple(by or ()), n_boot=bootstrap, seed=seed, min_trials=min_trials)
    try:
        with StepLines("analyze") as steps:
            result = analyze_study(
                study_path(output, study),
                settings,
                log=log and not from_tune,
                from_tune=from_tune,
                progress=steps,
            )
    except (TrackingUnreachable, TrackingRejected) as exc:
        instead = f"`raystudy analyze {study} --output {output} --from-tune`"
        fail(f"{exc}; {instead} reads the results from Tune's storage instead", STORE)
    except (StudyError, AnalysisError) as exc:
        fail(exc)
    if from_tune:
        typer.echo("Read from Tune's storage, not MLflow: no artifacts, nothing logged.")
    typer.echo(format_summary(result))
