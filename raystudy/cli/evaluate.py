"""`raystudy evaluate`: any encoder scored as a trial is scored."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from raystudy.cli.exits import fail, print_report
from raystudy.cli.options import STUDIES, OutputOpt, names_opt

MetricsOpt = names_opt("Metrics (comma-separated or repeated); default: a trial's.")
ProbesOpt = names_opt("Transfer probes (comma-separated or repeated); default: a trial's.")


def evaluate(
    encoder: Annotated[
        str,
        typer.Option(
            help="`runs:/<run id>/model` (a logged model), `models:/...`, or "
            "`package.module:function` (a callable images -> codes, or a factory that returns "
            "an nn.Module)."
        ),
    ],
    dataset: Annotated[str, typer.Option(help="Dataset name (see `raystudy datasets`).")],
    split: Annotated[
        str,
        typer.Option(help="A built-in split, or a split spelled out as YAML selectors."),
    ] = "iid",
    metrics: MetricsOpt = None,
    probes: ProbesOpt = None,
    seed: Annotated[
        int | None,
        typer.Option(
            help="evaluation.seed, the seed of the ground-truth draws (a study's, to score "
            "beside it); the same as --set evaluation.seed=N."
        ),
    ] = None,
    fields: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="A spec field, as in run: evaluation.num_train=2000, "
            "evaluation.probe_test=1000 (evaluation fields only; the prefix may be left out).",
        ),
    ] = None,
    options: Annotated[
        list[str] | None,
        typer.Option("--option", "-O", help="Dataset option key=value (YAML value)."),
    ] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the scores here: {key: value}.")
    ] = None,
    experiment: Annotated[
        str | None,
        typer.Option(
            help="Log the scores as a run (raystudy.role=external) of this experiment; a "
            "study's name puts the encoder beside its trials in `raystudy analyze`."
        ),
    ] = None,
    tracking_uri: Annotated[
        str | None,
        typer.Option(
            help="MLflow store (default: the store of the study --experiment names under "
            "--output, else MLFLOW_TRACKING_URI)."
        ),
    ] = None,
    output: OutputOpt = STUDIES,
    device: Annotated[
        str,
        typer.Option(
            help="Where images are rendered and encoded, and where the probes fit "
            "(evaluation.device auto)."
        ),
    ] = "cpu",
    n_jobs: Annotated[int, typer.Option(min=1, help="Threads of the metrics and probes.")] = 1,
) -> None:
    """Score an encoder with exactly the `dis/*`, `down/*` and `transfer/*` keys a trial logs, on
    the same ground-truth draws (evaluation.seed); print them, and write or log them."""
    given = dict(locals())  # the options, named as evaluate_beside names its parameters
    from raystudy.study.evaluation import evaluate_beside
    from raystudy.study.folder import StudyError
    from raystudy.terminal.steps import StepLines

    try:
        with StepLines("evaluate") as steps:
            done = evaluate_beside(**given, progress=steps)
    except (ValueError, StudyError) as exc:  # OptionError, SpecError, EncoderError
        fail(exc)
    print_report(done.report())
