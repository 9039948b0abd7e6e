"""`raystudy rescore`: a finished study's models scored with metrics and probes it did not
train with."""

from __future__ import annotations

import typer

from raystudy.cli.exits import INTERRUPTED, fail, ignore_interrupts, print_report
from raystudy.cli.options import STUDIES, AddressOpt, OutputOpt, StudyArg, names_opt

MetricsOpt = names_opt("Metrics to add (comma-separated or repeated; see `raystudy list`).")
ProbesOpt = names_opt("Transfer probes to add (comma-separated or repeated).")


def rescore(
    study: StudyArg,
    metrics: MetricsOpt = None,
    probes: ProbesOpt = None,
    output: OutputOpt = STUDIES,
    address: AddressOpt = None,
) -> None:
    """Score a finished study's logged models with metrics or probes it did not train with,
    as Ray tasks with its trials' resources, writing the keys into the trial runs (`analyze`
    then reads them). Runs that have them already are skipped, so a killed rescore is finished
    by running it again."""
    from raystudy.study.evaluation import names
    from raystudy.study.folder import StudyError, study_path
    from raystudy.study.rescore import rescore_study
    from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable

    try:
        outcome = rescore_study(
            study_path(output, study),
            names(metrics) or [],
            names(probes) or [],
            address=address,
            progress=typer.echo,
        )
    except (StudyError, TrackingUnreachable, TrackingRejected) as exc:
        fail(exc)
    except KeyboardInterrupt:
        ignore_interrupts()
        typer.secho(
            f"Interrupted: runs rescored so far keep their keys; `raystudy rescore {study}` "
            "with the same names finishes the rest.",
            fg=typer.colors.YELLOW,
            err=True,
        )
        raise typer.Exit(INTERRUPTED) from None
    print_report(outcome.report(output))
