"""`raystudy claims`: the papers' headline claims a study's Findings test, with their quotes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from raystudy.cli.exits import fail
from raystudy.cli.options import JsonOpt

if TYPE_CHECKING:
    from raystudy.analysis.claims.registry import Claim

PaperOpt = Annotated[
    str | None,
    typer.Option(
        "--paper",
        help="Only this paper's claims: dittadi2021, montero2021, montero2022, schott2022 or "
        "locatello2019.",
    ),
]

#: Below this many columns the table is laid out as if the terminal had this many.
MIN_WIDTH = 60
#: Columns the answer and where of a claim are indented by, under its id.
INDENT = 6
PRESET_DIR, PRESET_SUFFIX = "search_spaces/", ".yaml"


def claims(paper: PaperOpt = None, json_: JsonOpt = False) -> None:
    """The papers' headline claims (`raystudy/analysis/claims/claims.yaml`): what each paper
    says, quoted, what a study measures to test it, and the laptop preset that does. `analyze`
    answers them in `claims.csv`; `--json` gives every field (quote, test, needs, margin)."""
    import json

    from raystudy.analysis.claims.registry import PAPERS, all_claims

    if paper is not None and paper not in PAPERS:
        fail(f"no paper {paper!r}; allowed: {', '.join(PAPERS)}")
    chosen = [c for c in all_claims() if paper is None or c.paper == paper]
    if json_:
        typer.echo(json.dumps([c.model_dump() for c in chosen], indent=2))
        return
    typer.echo(claims_table(chosen, _width()))


def _width() -> int:
    import shutil

    return max(shutil.get_terminal_size((100, 24)).columns, MIN_WIDTH)


def preset_name(preset: str | None) -> str:
    """A preset as the table names it: `laptop` for `search_spaces/laptop.yaml`, `-` for none."""
    if preset is None:
        return "-"
    return preset.removeprefix(PRESET_DIR).removesuffix(PRESET_SUFFIX)


def expects_text(found: Claim) -> str:
    """What a claim expects in a few characters: `> 0`, `< 0`, `~0 +-0.3` (no effect, within
    its margin) or `ord > 0` (an ordering, each step of that sign)."""
    if found.expects == "none":
        return f"~0 +-{found.margin:g}"
    if found.expects == "ordering":
        return f"ord {found.direction}"
    return str(found.direction)


def claims_table(chosen: list[Claim], width: int) -> str:
    """The claims as a table `width` columns wide, paper by paper: a line per claim (id, what
    it expects, its laptop preset), then its tier, where the words stand and the paper's
    answer, wrapped under it."""
    import textwrap

    from raystudy.analysis.claims.registry import CITES, PAPERS

    if not chosen:
        return "no claims"
    id_width = max(len(c.id) for c in chosen)
    expects_width = max(len("expects"), *(len(expects_text(c)) for c in chosen))
    lines: list[str] = []
    for paper in PAPERS:
        own = [c for c in chosen if c.paper == paper]
        if not own:
            continue
        primary = sum(c.tier == "primary" for c in own)
        if lines:
            lines.append("")
        lines.append(f"{CITES[paper]} ({paper}): {len(own)} claims, {primary} primary")
        header = f"  {'id':<{id_width}}  {'expects':<{expects_width}}  preset"
        lines.append(header)
        for found in own:
            lines.append(
                f"  {found.id:<{id_width}}  {expects_text(found):<{expects_width}}"
                f"  {preset_name(found.preset)}"
            )
            said = f"{found.tier}; {found.where}: {found.paper_answer}"
            lines.extend(
                textwrap.wrap(
                    said,
                    width=max(width - 1, INDENT + 20),
                    initial_indent=" " * INDENT,
                    subsequent_indent=" " * INDENT,
                    break_on_hyphens=False,
                )
            )
    legend = (
        f"preset: {PRESET_DIR}<preset>{PRESET_SUFFIX}; expects: > 0 / < 0 an effect of that "
        "sign, ~0 +-m none (within margin m), ord an ordering; `raystudy claims --json` gives "
        "each claim's quote, test and needs."
    )
    return "\n".join([*lines, "", *textwrap.wrap(legend, width=max(width - 1, INDENT + 20))])
