"""`raystudy datasets`: the datasets listed, and `datasets show`: samples of one as a PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from raystudy.cli.exits import fail
from raystudy.cli.options import JsonOpt

datasets_app = typer.Typer(
    no_args_is_help=False,
    invoke_without_command=True,
    help="List the datasets (factors, sizes, domains), or show samples of one as a PNG.",
)


@datasets_app.callback()
def datasets(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """List every dataset with its factors, sizes and domains."""
    if ctx.invoked_subcommand is None:
        import dataclasses
        import json

        from raystudy.data.core.catalog import catalog, format_catalog

        if json_:
            typer.echo(json.dumps([dataclasses.asdict(e) for e in catalog()]))
            return
        typer.echo(format_catalog(catalog()))


@datasets_app.command("show")
def datasets_show(
    name: Annotated[str, typer.Argument(help="Dataset name (see `raystudy datasets`).")],
    # --out, not -o: -o is the studies folder in every command that has one.
    out: Annotated[Path, typer.Option("--out", help="PNG file to write.")] = Path("grid.png"),
    n: Annotated[int, typer.Option("--n", min=1, help="Samples per domain.")] = 8,
    seed: Annotated[int, typer.Option(help="Seed of the sampled factor combinations.")] = 0,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option", "-O", help="Dataset option key=value (YAML value), e.g. path=3dshapes.h5."
        ),
    ] = None,
) -> None:
    """Write a grid of samples: one row per domain, the same factor combinations in each."""
    from raystudy.data import get_dataset
    from raystudy.data.preview import write_preview
    from raystudy.spec import parse_options

    try:
        ds = get_dataset(name, **parse_options(option or [], "--option"))  # as a spec reads them
        path = write_preview(ds, out, n=n, seed=seed)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        fail(exc)
    rows = ", ".join(f"row {i + 1}: {d}" for i, d in enumerate(ds.domains))
    typer.echo(f"{ds!r}\n{n} samples per domain ({rows}) -> {path}")
