"""`raystudy`: the thin command line over spec, study, evaluation and analysis. Each command
(a module here) parses its options, calls the function that does its work (callable from
Python the same way), prints what it returns and maps its exceptions to exit codes
(`exits`: 2, a user's mistake, said in one line); no logic lives here. This module builds
the app from them.
"""

from __future__ import annotations

from typing import Annotated

import typer

from raystudy.cli import (
    analyze,
    claims,
    datasets,
    evaluate,
    listing,
    plan,
    relocate,
    rescore,
    run,
    schema,
    status,
    ui,
)

app = typer.Typer(
    no_args_is_help=True,
    # Docstrings are wrapped at 100 columns in the source: markdown joins their lines, so help
    # reflows to the terminal instead of breaking where the source did.
    rich_markup_mode="markdown",
    help="Distributed studies of disentangled representations and their OOD transfer.",
)


def _version(shown: bool) -> None:
    if shown:
        from raystudy.version import code_version

        typer.echo(f"raystudy {code_version()}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Distributed studies of disentangled representations and their OOD transfer."""


#: The commands by name, in the order `raystudy --help` lists them (`datasets` last).
COMMANDS = {
    "run": run.run,
    "optimize": run.optimize,
    "plan": plan.plan,
    "resume": run.resume,
    "status": status.status,
    "ui": ui.ui,
    "analyze": analyze.analyze,
    "rescore": rescore.rescore,
    "relocate": relocate.relocate,
    "evaluate": evaluate.evaluate,
    "list": listing.list_,
    "claims": claims.claims,
    "schema": schema.schema,
}
for _name, _command in COMMANDS.items():
    app.command(_name)(_command)
app.add_typer(datasets.datasets_app, name="datasets")
