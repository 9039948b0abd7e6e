"""How a command ends: a problem said in one line with its exit code, a `Report` printed in its
styles, and a Ctrl-C said without a traceback."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from raystudy.study.report import Report

#: Exit codes (docs/studies/commands.md): 1 a study that ran but left trials unfinished;
#: 2 a mistake in what was given (spec, options, names); the rest from the error's class.
UNFINISHED, MISTAKE, NO_STUDY, STORE, CLUSTER, BUSY = 1, 2, 3, 4, 5, 6

#: The exit status of a command ended by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130


def exit_code(exc: BaseException) -> int:
    """The exit code of an error: an unreachable or refusing store's, else the error's own."""
    # Errors of the store's classes exist only once their module is loaded; importing it here
    # would load MLflow (seconds) to tell a missing study or a typo.
    retry = sys.modules.get("raystudy.tracking.retry")
    if retry is not None and isinstance(exc, retry.TrackingUnreachable | retry.TrackingRejected):
        return STORE
    return int(getattr(exc, "exit_code", MISTAKE))


def refuse_missing_study(output: Path, study: str) -> None:
    """Exit as `fail` does when the study `study` under `output` has no folder at all, before
    a command loads its stack (seconds); a folder without study.json is the command's to
    judge (`status` names a study being started)."""
    from raystudy.study.folder import StudyError, StudyInfo, study_path

    folder = study_path(output, study)
    if not folder.is_dir():
        try:
            StudyInfo.read(folder)  # says why it is no study, as every command does
        except StudyError as exc:
            fail(exc)


def fail(problem: str | BaseException, code: int | None = None) -> NoReturn:
    """Say the problem on stderr in one line and exit: with `code`, else the error's own."""
    if code is None:
        code = MISTAKE if isinstance(problem, str) else exit_code(problem)
    typer.secho(str(problem), fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def print_report(report: Report) -> None:
    """A `raystudy.study.report.Report`: each line in its style, then its exit code."""
    from raystudy.study.report import PROBLEM, WARNING

    colors = {PROBLEM: typer.colors.RED, WARNING: typer.colors.YELLOW}  # a problem on stderr
    for line in report.lines:
        if line.style in colors:
            typer.secho(line.text, fg=colors[line.style], err=line.style == PROBLEM)
        else:
            typer.echo(line.text)
    if report.exit_code:
        raise typer.Exit(report.exit_code)


def interrupted(study: str, output: Path) -> NoReturn:
    """A Ctrl-C that reached raystudy itself: the second one, after Tune's own stop (the
    first) was under way, or one before Tune started. Said without a traceback; what the
    trials recorded up to their last checkpoints stays, and `resume` continues from it."""
    from raystudy.study.report import WARNING, interrupted_line

    ignore_interrupts()
    line = interrupted_line(study, output)
    color = typer.colors.YELLOW if line.style == WARNING else None
    typer.secho(line.text, fg=color, err=True)
    raise typer.Exit(INTERRUPTED)


def ignore_interrupts() -> None:
    """Once a study has stopped, what remains is printing and, where the run did not stop
    its Ray already (`--verbose`), Ray's own shutdown at exit (a second or two):
    a Ctrl-C there would only interrupt Ray mid-shutdown (a traceback, at worst a crash), so
    it is ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
