"""`raystudy`: the thin command line over spec, study, evaluation and analysis. Each command
parses its options, calls the function that does its work (callable from Python the same
way), prints what it returns and maps its exceptions to exit codes (2: a user's mistake,
said in one line); no logic lives here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    no_args_is_help=True,
    # Docstrings are wrapped at 100 columns in the source: markdown joins their lines, so help
    # reflows to the terminal instead of breaking where the source did.
    rich_markup_mode="markdown",
    help="Distributed studies of disentangled representations and their OOD transfer.",
)

OutputOpt = Annotated[Path, typer.Option("--output", "-o", help="Folder that holds the studies.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a spec field: dotted.path=value (value parsed as YAML)."),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        envvar="RAY_ADDRESS",
        help="Ray cluster to join (auto, host:6379, ray://host:10001); default: $RAY_ADDRESS, "
        "else start a local one.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
TrackingOpt = Annotated[
    str | None,
    typer.Option(
        envvar="MLFLOW_TRACKING_URI",
        help="MLflow store of the study, in place of the spec's tracking.uri; from "
        "$MLFLOW_TRACKING_URI only where the spec leaves tracking.uri null (default: sqlite "
        "in the study folder).",
    ),
]
StudyArg = Annotated[str, typer.Argument(help="Study name (a folder under --output).")]
VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Print Ray's and Tune's own output (status tables, worker logs) here instead of "
        "a progress display, with those in the study's logs/ folder.",
    ),
]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite", help="Delete an existing study of the same name first.")
]


def _version(shown: bool) -> None:
    if shown:
        from raystudy.study.driver import code_version

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


#: Exit codes (docs/studies.md, "Exit codes"): 1 a study that ran but left trials unfinished;
#: 2 a mistake in what was given (spec, options, names); the rest from the error's class.
UNFINISHED, MISTAKE, NO_STUDY, STORE, CLUSTER, BUSY = 1, 2, 3, 4, 5, 6


def _exit_code(exc: BaseException) -> int:
    from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable

    if isinstance(exc, TrackingUnreachable | TrackingRejected):
        return STORE
    return int(getattr(exc, "exit_code", MISTAKE))


def _fail(problem: str | BaseException, code: int | None = None) -> None:
    """Say the problem on stderr in one line and exit: with `code`, else the error's own."""
    if code is None:
        code = MISTAKE if isinstance(problem, str) else _exit_code(problem)
    typer.secho(str(problem), fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


#: The exit status of a command ended by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130


def _interrupted(study: str, output: Path) -> None:
    """A Ctrl-C that reached raystudy itself: the second one, after Tune's own stop (the
    first) was under way, or one before Tune started. Said without a traceback; what the
    trials recorded up to their last checkpoints stays, and `resume` continues from it."""
    from raystudy.study.folder import STUDY_FILE, study_path

    _ignore_interrupts()
    folder = study_path(output, study)
    if (folder / STUDY_FILE).is_file():
        typer.secho(
            f"Interrupted: stopped at once, without waiting for Tune's last save of the "
            f"study's state; every trial keeps what it recorded up to its last checkpoint. "
            f"`raystudy resume {study} --output {output}` continues the study.",
            fg=typer.colors.YELLOW,
            err=True,
        )
    else:
        typer.secho("Interrupted before the study started: nothing was written.", err=True)
    raise typer.Exit(INTERRUPTED)


def _ignore_interrupts() -> None:
    """Once a study has stopped, what remains is printing and Ray's own shutdown (at exit, a
    second or two): a Ctrl-C there would only interrupt Ray mid-shutdown (a traceback, at
    worst a crash), so it is ignored."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _print(report: Any) -> None:
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


def _from_environment(ctx: typer.Context, name: str) -> bool:
    """Whether option `name` took its value from its environment variable (by the source's
    name: Typer carries its own copy of click's enum)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "ENVIRONMENT"


def _run(
    ctx: typer.Context,
    spec: Path,
    output: Path,
    overrides: list[str] | None,
    methods: tuple[str, ...],
    tracking_uri: str | None,
    **kw: Any,
) -> None:
    import json

    from raystudy.checks import load_spec
    from raystudy.spec import SpecError
    from raystudy.study.driver import check_search_method
    from raystudy.study.folder import StudyError
    from raystudy.study.report import outcome_report, start_line
    from raystudy.terminal.runs import run_watched
    from raystudy.tracking.retry import shown

    env_store = _from_environment(ctx, "tracking_uri")
    try:
        study_spec = load_spec(spec, overrides or [])
        if tracking_uri is not None and not (env_store and study_spec.tracking.uri):
            # Before the --sets, so that a --set tracking.uri still has the last word.
            store = [f"tracking.uri={json.dumps(tracking_uri)}"]  # a YAML string, as given
            try:
                study_spec = load_spec(spec, [*store, *(overrides or [])])
            except SpecError as exc:
                source = "MLFLOW_TRACKING_URI" if env_store else "--tracking-uri"
                _fail(f"{source}: {exc}", MISTAKE)
            if env_store:
                typer.echo(f"MLflow store from MLFLOW_TRACKING_URI: {shown(tracking_uri)}")
        check_search_method(study_spec, spec, methods)
    except (SpecError, StudyError) as exc:
        _fail(exc)
    typer.echo(start_line(study_spec, output))
    try:
        outcome, log = run_watched(study_spec, output=output, **kw)  # address, overwrite, verbose
    except StudyError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        _interrupted(study_spec.name, output)
    _ignore_interrupts()
    _print(outcome_report(outcome, output, log))


@app.command()
def run(
    ctx: typer.Context,
    spec: Annotated[Path, typer.Argument(help="Study YAML file.")],
    address: AddressOpt = None,
    output: OutputOpt = Path("studies"),
    set_: SetOpt = None,
    tracking_uri: TrackingOpt = None,
    overwrite: OverwriteOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run every trial of a study (grid, random or Optuna search) and log them to MLflow."""
    methods = ("grid", "random", "optuna")
    kw = {"address": address, "overwrite": overwrite, "verbose": verbose}
    _run(ctx, spec, output, set_, methods, tracking_uri, **kw)


@app.command()
def optimize(
    ctx: typer.Context,
    spec: Annotated[Path, typer.Argument(help="Study YAML file with search.method: optuna.")],
    address: AddressOpt = None,
    output: OutputOpt = Path("studies"),
    set_: SetOpt = None,
    tracking_uri: TrackingOpt = None,
    overwrite: OverwriteOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """`run` that accepts Optuna searches only (search.method: optuna), so that a spec meant
    for a guided search is never run as something else; the Optuna study persists beside the
    MLflow store."""
    kw = {"address": address, "overwrite": overwrite, "verbose": verbose}
    _run(ctx, spec, output, set_, ("optuna",), tracking_uri, **kw)


@app.command()
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
    ] = Path("studies"),
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
) -> None:
    """Trial count, resource plan and estimated cost of a study, before running it."""
    given = dict(locals())  # the options, named as plan_study names its parameters
    del given["output"]
    given["as_json"] = given.pop("json_")
    from raystudy.plan.study_plan import plan_study
    from raystudy.spec import OptionError, SpecError

    def measured(name: str) -> tuple[list[Any], str]:
        from raystudy.study.folder import STUDY_FILE, StudyError
        from raystudy.study.status import measured_runs
        from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable

        folder = output / name
        if not (folder / STUDY_FILE).is_file():
            return [], ""
        try:
            return measured_runs(folder)
        except (StudyError, TrackingUnreachable, TrackingRejected) as exc:
            typer.echo(
                f"raystudy: the runs of {folder} cannot be read ({exc}); the plan is "
                "calibrated alone",
                err=True,
            )
            return [], ""

    try:
        text = plan_study(
            **given, progress=lambda line: typer.echo(line, err=True), measured=measured
        )
    except (OptionError, SpecError) as exc:
        _fail(exc)
    typer.echo(text)


@app.command()
def resume(
    study: StudyArg,
    output: OutputOpt = Path("studies"),
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
        _fail(exc)
    except KeyboardInterrupt:
        _interrupted(study, output)
    _ignore_interrupts()
    _print(outcome_report(outcome, output, log))


@app.command()
def status(study: StudyArg, output: OutputOpt = Path("studies"), json_: JsonOpt = False) -> None:
    """Trial counts by state (Tune's view) and MLflow runs by status."""
    from raystudy.study.folder import StudyError, study_path
    from raystudy.study.status import status_data, status_report

    try:
        if json_:
            import json

            typer.echo(json.dumps(status_data(study_path(output, study), study)))
            return
        report = status_report(study_path(output, study), study)
    except StudyError as exc:
        _fail(exc)
    _print(report)


@app.command()
def ui(
    study: StudyArg,
    output: OutputOpt = Path("studies"),
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 5000,
) -> None:
    """Start the MLflow UI on the study's store, bound to 127.0.0.1, and print the URL of its
    trial runs with the columns to compare (objective, beta, input noise, seed, DCI-D,
    transfer MAEs). A study on a tracking server: the view is saved there and its URL on
    that server printed; nothing is started."""
    from raystudy.study.folder import StudyError
    from raystudy.study.ui import serve, study_ui
    from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable

    try:
        shown = study_ui(output, study, port)
    except (StudyError, TrackingUnreachable, TrackingRejected) as exc:
        _fail(exc)
    typer.echo("\n".join(shown.lines()))
    if shown.server is None:
        raise typer.Exit(serve(shown))


@app.command()
def analyze(
    study: Annotated[str, typer.Argument(help="Study name (a folder under --output).")],
    output: OutputOpt = Path("studies"),
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
        _fail(f"{exc}; {instead} reads the results from Tune's storage instead", STORE)
    except (StudyError, AnalysisError) as exc:
        _fail(exc)
    if from_tune:
        typer.echo("Read from Tune's storage, not MLflow: no artifacts, nothing logged.")
    typer.echo(format_summary(result))


@app.command()
def rescore(
    study: StudyArg,
    metrics: Annotated[
        list[str] | None,
        typer.Option(help="Metrics to add (comma-separated or repeated; see `raystudy list`)."),
    ] = None,
    probes: Annotated[
        list[str] | None,
        typer.Option(help="Transfer probes to add (comma-separated or repeated)."),
    ] = None,
    output: OutputOpt = Path("studies"),
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
        _fail(exc)
    except KeyboardInterrupt:
        _ignore_interrupts()
        typer.secho(
            f"Interrupted: runs rescored so far keep their keys; `raystudy rescore {study}` "
            "with the same names finishes the rest.",
            fg=typer.colors.YELLOW,
            err=True,
        )
        raise typer.Exit(INTERRUPTED) from None
    _print(outcome.report(output))


@app.command()
def relocate(study: StudyArg, output: OutputOpt = Path("studies")) -> None:
    """Point a study folder that was moved or copied at its new place: its study.json and
    the artifact paths of its sqlite store (a server or a database is left as it is)."""
    from raystudy.study.folder import StudyError, study_path
    from raystudy.study.relocate import relocate_study

    try:
        done = relocate_study(study_path(output, study))
    except StudyError as exc:
        _fail(exc)
    typer.echo("\n".join(done.lines()))


# --- evaluate: score any encoder as a trial is scored -----------------------------------------
@app.command()
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
    metrics: Annotated[
        list[str] | None,
        typer.Option(help="Metrics (comma-separated or repeated); default: a trial's."),
    ] = None,
    probes: Annotated[
        list[str] | None,
        typer.Option(help="Transfer probes (comma-separated or repeated); default: a trial's."),
    ] = None,
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
    output: OutputOpt = Path("studies"),
    device: Annotated[str, typer.Option(help="Where images are rendered and encoded.")] = "cpu",
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
        _fail(exc)
    _print(done.report())


# --- what a spec can name, and the spec's schema --------------------------------------------
@app.command("list")
def list_(
    kind: Annotated[
        str | None,
        typer.Argument(
            help="datasets, splits, objectives, architectures, metrics or probes; "
            "default: every kind."
        ),
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """The names a study spec can use, kind by kind, with a line on each (an objective's
    options with their defaults)."""
    import dataclasses
    import json

    from raystudy.checks.listing import KINDS, entries, format_entries

    try:
        kinds = [kind] if kind is not None else list(KINDS)
        listed = {k: entries(k) for k in kinds}
    except ValueError as exc:
        _fail(exc)
    if json_:
        typer.echo(json.dumps({k: [dataclasses.asdict(e) for e in v] for k, v in listed.items()}))
        return
    typer.echo("\n".join(format_entries(k, v) for k, v in listed.items()))


@app.command()
def schema(
    out: Annotated[
        Path | None, typer.Option("--out", help="File to write; default: print it.")
    ] = None,
) -> None:
    """The study spec's JSON Schema, for editors (yaml-language-server) and other tools."""
    from raystudy.spec.json_schema import schema_text

    text = schema_text()
    if out is None:
        typer.echo(text, nl=False)
        return
    out.write_text(text)
    typer.echo(f"JSON Schema of a study spec -> {out}")


# --- datasets: look at the data before a study ---------------------------------------------
datasets_app = typer.Typer(
    no_args_is_help=False,
    invoke_without_command=True,
    help="List the datasets (factors, sizes, domains), or show samples of one as a PNG.",
)
app.add_typer(datasets_app, name="datasets")


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
        _fail(exc)
    rows = ", ".join(f"row {i + 1}: {d}" for i, d in enumerate(ds.domains))
    typer.echo(f"{ds!r}\n{n} samples per domain ({rows}) -> {path}")


if __name__ == "__main__":
    app()
