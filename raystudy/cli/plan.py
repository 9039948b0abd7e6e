"""`raystudy plan`: what a study would run, on what, and at what cost, before it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from raystudy.cli.exits import fail
from raystudy.cli.options import STUDIES, JsonOpt, SetOpt


def plan(
    spec: Annotated[Path, typer.Argument(help="Study YAML file.")],
    overrides: SetOpt = None,
    cpus: Annotated[
        float | None, typer.Option(help="Cluster CPUs (default: this machine).")
    ] = None,
    gpus: Annotated[float, typer.Option(min=0, help="Cluster GPUs.")] = 0.0,
    calibrate: Annotated[
        bool,
        typer.Option(help="Time each group of trials here at small sizes and extrapolate."),
    ] = True,
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="Folder that holds the studies: where the study has run before, its "
            "finished runs' measured phase timings cost the kinds of trial they ran.",
        ),
    ] = STUDIES,
    steps: Annotated[
        int, typer.Option(min=1, help="Training steps timed per batch size (after a warm-up).")
    ] = 3,
    budget: Annotated[
        float,
        typer.Option(
            min=1,
            help="Seconds the whole command may take, its start included: groups whose "
            "timing would overrun it are costed as the most similar group timed (the first "
            "of each kind is always timed).",
        ),
    ] = 60.0,
    recalibrate: Annotated[
        bool,
        typer.Option(
            "--recalibrate",
            help="Time every group again instead of reading this machine's earlier timings "
            "(kept in $XDG_CACHE_HOME/raystudy/plan-calibration.json).",
        ),
    ] = False,
    json_: JsonOpt = False,
    gpu_speedup: Annotated[
        list[str] | None,
        typer.Option(
            help="training=X or probes=X: how many times faster one GPU runs that part than "
            "this machine's timing, in place of the assumed figure (repeatable).",
        ),
    ] = None,
) -> None:
    """Trial count, resource plan and estimated cost of a study, before running it."""
    given = dict(locals())  # the options, named as plan_study names its parameters
    del given["output"]
    given["as_json"] = given.pop("json_")
    given["gpu_speedup"] = given.pop("gpu_speedup") or ()
    from raystudy.plan.study_plan import plan_study
    from raystudy.spec import OptionError, SpecError
    from raystudy.study.plan_runs import measured_under

    def say(line: str) -> None:
        typer.echo(line, err=True)

    try:
        text = plan_study(**given, progress=say, measured=measured_under(output, say))
    except (OptionError, SpecError) as exc:
        fail(exc)
    typer.echo(text)
