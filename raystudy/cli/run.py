"""`raystudy run` and `optimize`, which start a study, and `resume`, which finishes one."""

# No `from __future__ import annotations`: Typer reads the options of the commands `study_command`
# makes from their annotations, which name its own arguments and so must be evaluated here.

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer

from raystudy.cli.exits import fail, ignore_interrupts, interrupted, print_report
from raystudy.cli.options import (
    STUDIES,
    AddressOpt,
    OutputOpt,
    OverwriteOpt,
    SetOpt,
    StudyArg,
    TrackingOpt,
    VerboseOpt,
    from_environment,
)


def study_command(spec_help: str, methods: Sequence[str], doc: str) -> Callable[..., None]:
    """A command that runs the study of a spec searching by one of `methods`: the one `run`
    and `optimize` are, with the spec argument explained by `spec_help` and the help `doc`."""

    def command(
        ctx: typer.Context,
        spec: Annotated[Path, typer.Argument(help=spec_help)],
        address: AddressOpt = None,
        output: OutputOpt = STUDIES,
        set_: SetOpt = None,
        tracking_uri: TrackingOpt = None,
        overwrite: OverwriteOpt = False,
        verbose: VerboseOpt = False,
    ) -> None:
        from raystudy.spec import OptionError, SpecError
        from raystudy.spec.yaml_io import apply_overrides, read_spec_file

        # A missing file, broken YAML or a malformed --set is said before the study's stack
        # loads (about a second, not ten).
        try:
            apply_overrides(read_spec_file(spec), set_ or [], str(spec))
        except SpecError as exc:
            fail(exc)
        from raystudy.study.folder import StudyError
        from raystudy.study.report import outcome_report, start_line
        from raystudy.study.run_spec import spec_to_run
        from raystudy.terminal.runs import run_watched

        store_from_env = from_environment(ctx, "tracking_uri")
        try:
            study_spec = spec_to_run(
                spec, set_ or [], methods, tracking_uri, store_from_env, typer.echo
            )
        except (SpecError, OptionError, StudyError) as exc:
            fail(exc)
        typer.echo(start_line(study_spec, output))
        try:
            outcome, log = run_watched(
                study_spec, output=output, address=address, overwrite=overwrite, verbose=verbose
            )
        except StudyError as exc:
            fail(exc)
        except KeyboardInterrupt:
            interrupted(study_spec.name, output)
        ignore_interrupts()
        print_report(outcome_report(outcome, output, log))

    command.__doc__ = doc
    return command


run = study_command(
    "Study YAML file.",
    ("grid", "random", "optuna"),
    "Run every trial of a study (grid, random or Optuna search) and log them to MLflow.",
)

optimize = study_command(
    "Study YAML file with search.method: optuna.",
    ("optuna",),
    """`run` that accepts Optuna searches only (search.method: optuna), so that a spec meant
    for a guided search is never run as something else; the Optuna study persists beside the
    MLflow store.""",
)


def resume(
    study: StudyArg,
    output: OutputOpt = STUDIES,
    address: AddressOpt = None,
    restart_errored: Annotated[
        bool, typer.Option(help="Start errored trials from scratch instead of their checkpoint.")
    ] = False,
    verbose: VerboseOpt = False,
) -> None:
    """Finish an interrupted study: unfinished trials continue from their checkpoints."""
    from raystudy.study.folder import StudyError, study_path
    from raystudy.study.report import outcome_report
    from raystudy.terminal.runs import resume_watched

    try:
        outcome, log = resume_watched(
            study_path(output, study),
            name=study,
            address=address,
            restart_errored=restart_errored,
            verbose=verbose,
        )
    except StudyError as exc:
        fail(exc)
    except KeyboardInterrupt:
        interrupted(study, output)
    ignore_interrupts()
    print_report(outcome_report(outcome, output, log))
