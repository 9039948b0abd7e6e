"""`raystudy`: thin command line over spec, study and analysis. No logic lives here."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Distributed studies of disentangled representations and their OOD transfer.",
)

OutputOpt = Annotated[Path, typer.Option("--output", "-o", help="Folder that holds the studies.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a spec field: dotted.path=value (value parsed as YAML)."),
]


def _fail(message: str) -> None:
    typer.secho(message, fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


@app.command()
def run(
    spec: Annotated[Path, typer.Argument(help="Study YAML file.")],
    address: Annotated[
        str | None, typer.Option(help="Ray cluster to join (auto, ray://host:port); default local.")
    ] = None,
    output: OutputOpt = Path("studies"),
    set_: SetOpt = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Delete an existing study of the same name first.")
    ] = False,
) -> None:
    """Run every trial of a study and log them to MLflow."""
    from raystudy.spec import SpecError, load_spec
    from raystudy.study import StudyError, run_study

    try:
        study_spec = load_spec(spec, set_ or [])
    except SpecError as exc:
        _fail(str(exc))
    n = len(study_spec.points())
    typer.echo(f"Study {study_spec.name!r}: {n} trials -> {(output / study_spec.name).resolve()}")
    try:
        outcome = run_study(study_spec, output=output, address=address, overwrite=overwrite)
    except StudyError as exc:
        _fail(str(exc))
    states = ", ".join(f"{v} {k.lower()}" for k, v in sorted(outcome.states.items()))
    typer.echo(f"Study {study_spec.name!r} ended in {outcome.wall_s:.0f} s: {states}.")
    typer.echo(f"MLflow UI: mlflow ui --backend-store-uri {outcome.info.tracking_uri}")
    typer.echo(f"Analysis:  raystudy analyze {study_spec.name} --output {output}")
    if not outcome.ok:
        raise typer.Exit(1)


@app.command()
def analyze(
    study: Annotated[str, typer.Argument(help="Study name (a folder under --output).")],
    output: OutputOpt = Path("studies"),
) -> None:
    """Read a study's runs into a Parquet table and print the Spearman correlations."""
    import pandas as pd

    from raystudy.analysis.correlations import format_table, spearman_table
    from raystudy.analysis.results import load_results, write_results
    from raystudy.study import StudyError

    study_dir = (output / study).resolve()
    try:
        frame = load_results(study_dir)
    except StudyError as exc:
        _fail(str(exc))
    if frame.empty:
        _fail(f"study {study!r} has no trial runs yet in its MLflow store")
    path = write_results(frame, study_dir)
    finished = frame[frame["status"] == "FINISHED"]
    typer.echo(f"{len(frame)} trial runs ({len(finished)} finished) -> {path}")
    table = spearman_table(finished)
    table.to_csv(path.with_name("spearman_mae.csv"))
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        typer.echo(
            "\nSpearman rank correlation, rows: transfer MAE (lower is better); "
            "columns: dis/* and eval/* metrics\n"
        )
        typer.echo(format_table(table))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
