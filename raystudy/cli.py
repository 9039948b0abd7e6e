"""`raystudy`: thin command line over spec, study, evaluation and analysis. No logic lives
here; it is longer than a module should be (~540 lines) because each command's options and
messages are spelled out in it, one command after another.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Any

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


AddressOpt = Annotated[
    str | None,
    typer.Option(help="Ray cluster to join (auto, ray://host:10001); default: start a local one."),
]
StudyArg = Annotated[str, typer.Argument(help="Study name (a folder under --output).")]


#: How the run summary and `status` name a trial outcome (others: its name, lower case).
STATE_NAMES = {"STOPPED": "stopped early", "ERROR": "failed"}


VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Print Ray's and Tune's own output (status tables, worker logs) here instead of "
        "a progress display, with those in the study's logs/ folder.",
    ),
]


def _report(outcome: Any, output: Path, log: Path | None = None) -> None:
    """Say what finished, what did not, and what to do next."""
    from raystudy.study.driver import STOPPED_BY
    from raystudy.tags import STOPPED_TAG
    from raystudy.tune.state import ERROR, OUTCOMES, STOPPED, TUNE_DIR

    name = outcome.info.name
    order = [*OUTCOMES, *sorted(set(outcome.states) - set(OUTCOMES))]
    states = ", ".join(
        f"{outcome.states[k]} {STATE_NAMES.get(k, k.lower())}" for k in order if k in outcome.states
    )
    typer.echo(f"Study {name!r} ended in {outcome.wall_s:.0f} s: {states}.")
    if outcome.states.get(STOPPED):
        typer.echo(
            f"{outcome.states[STOPPED]} trials were stopped early by the scheduler (ASHA) "
            "before their final scores: pruned in Optuna, their MLflow runs KILLED with the "
            f"tag {STOPPED_TAG}={STOPPED_BY}; they are done, not resumed."
        )
    if log is not None:
        typer.echo(f"Log (Ray, Tune, trial output): {log}")
    typer.echo(f"MLflow UI: raystudy ui {name} --output {output}")
    typer.echo(f"Analysis:  raystudy analyze {name} --output {output}")
    if outcome.synced:
        typer.echo(f"Logged {outcome.synced} finished trials to MLflow from Tune's storage.")
    if outcome.tracking_error:
        typer.secho(
            f"MLflow is incomplete: {outcome.tracking_error}. Finished trials it lacks are in "
            f"Tune's storage ({outcome.info.study_dir / TUNE_DIR}): `raystudy analyze {name} "
            f"--output {output} --from-tune` analyses them now, and `raystudy resume {name} "
            f"--output {output}` logs them to MLflow once the store is back.",
            fg=typer.colors.RED,
            err=True,
        )
    if not outcome.ok:
        done = outcome.done  # finished, or stopped by the scheduler: nothing to resume
        total = outcome.info.num_tune_trials
        typer.secho(
            f"{total - done} of {total} trials did not "
            f"finish. Continue with: raystudy resume {name} --output {output}"
            + (" --restart-errored" if outcome.states.get(ERROR) else ""),
            fg=typer.colors.YELLOW,
        )
        raise typer.Exit(1)
    if outcome.tracking_error:
        raise typer.Exit(1)


def _run(
    spec: Path,
    address: str | None,
    output: Path,
    overrides: list[str],
    overwrite: bool,
    methods: tuple[str, ...],
    verbose: bool,
) -> None:
    from raystudy.checks import load_spec
    from raystudy.spec import SpecError
    from raystudy.study.driver import run_study
    from raystudy.study.folder import StudyError

    try:
        study_spec = load_spec(spec, overrides)
    except SpecError as exc:
        _fail(str(exc))
    if study_spec.search.method not in methods:
        _fail(
            f"{spec}: search.method is {study_spec.search.method!r}; this command runs "
            f"{' or '.join(methods)} searches"
        )
    n = study_spec.num_trials()
    stacked = ""
    if study_spec.execution.seeds_per_trial > 1:
        stacked = (
            f" in {study_spec.num_tune_trials()} Tune trials of up to "
            f"{study_spec.execution.seeds_per_trial} "
            f"{'models' if study_spec.execution.stack_over else 'seeds'} each"
        )
    typer.echo(
        f"Study {study_spec.name!r}: {n} trials{stacked} -> {(output / study_spec.name).resolve()}"
    )
    run = functools.partial(run_study, study_spec, output=output, address=address)
    try:
        if verbose:
            outcome, log = run(overwrite=overwrite), None
        else:
            from raystudy.terminal import log_path, watched

            metric, _ = study_spec.search.first_target()
            with watched(
                study_spec.name,
                study_spec.num_tune_trials(),
                command="run",
                metric=metric,
            ) as captured:
                outcome = run(
                    overwrite=overwrite,
                    on_study_dir=lambda folder: captured.move_to(log_path(folder, "run")),
                )
            log = captured.path
    except StudyError as exc:
        _fail(str(exc))
    _report(outcome, output, log)


OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite", help="Delete an existing study of the same name first.")
]


@app.command()
def run(
    spec: Annotated[Path, typer.Argument(help="Study YAML file.")],
    address: AddressOpt = None,
    output: OutputOpt = Path("studies"),
    set_: SetOpt = None,
    overwrite: OverwriteOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run every trial of a study (grid or random search) and log them to MLflow."""
    _run(spec, address, output, set_ or [], overwrite, ("grid", "random", "optuna"), verbose)


@app.command()
def optimize(
    spec: Annotated[Path, typer.Argument(help="Study YAML file with search.method: optuna.")],
    address: AddressOpt = None,
    output: OutputOpt = Path("studies"),
    set_: SetOpt = None,
    overwrite: OverwriteOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run an Optuna-guided search; the Optuna study persists beside the MLflow store."""
    _run(spec, address, output, set_ or [], overwrite, ("optuna",), verbose)


@app.command()
def plan(
    spec: Annotated[Path, typer.Argument(help="Study YAML file.")],
    set_: SetOpt = None,
    cpus: Annotated[
        float | None, typer.Option(help="Cluster CPUs (default: this machine).")
    ] = None,
    gpus: Annotated[float, typer.Option(min=0, help="Cluster GPUs.")] = 0.0,
    calibrate: Annotated[
        bool,
        typer.Option(help="Time each group of trials here at small sizes and extrapolate."),
    ] = True,
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
) -> None:
    """Trial count, resource plan and estimated cost of a study, before running it."""
    import math
    import os

    from raystudy.checks import load_spec
    from raystudy.plan import format_plan, make_plan
    from raystudy.plan.cache import CalibrationCache, default_path
    from raystudy.plan.calibrate import calibration_budget
    from raystudy.spec import SpecError

    # A cluster needs at least some CPU (min=0 would let 0 through), and a finite count.
    if cpus is not None and not (cpus > 0 and math.isfinite(cpus)):
        _fail(f"--cpus: must be a number greater than 0 (the cluster's CPUs), got {cpus:g}")
    if not math.isfinite(gpus):
        _fail(f"--gpus: must be a finite number of GPUs (0 or more), got {gpus:g}")
    try:
        study_spec = load_spec(spec, set_ or [])
    except SpecError as exc:
        _fail(str(exc))
    result = make_plan(
        study_spec,
        cpus if cpus is not None else float(os.cpu_count() or 1),
        gpus,
        calibration_steps=steps if calibrate else None,
        budget_s=calibration_budget(budget),
        progress=lambda line: typer.echo(line, err=True),
        cache=CalibrationCache(default_path()),
        recalibrate=recalibrate,
    )
    typer.echo(format_plan(result, study_spec.name))


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
    from raystudy.study.driver import resume_study
    from raystudy.study.folder import StudyError, StudyInfo, load_study_spec

    study_dir = (output / study).resolve()
    resume = functools.partial(
        resume_study, study_dir, address=address, restart_errored=restart_errored
    )
    try:
        if verbose:
            outcome, log = resume(), None
        else:
            from raystudy.terminal import watched

            info = StudyInfo.read(study_dir)
            metric, _ = load_study_spec(study_dir).search.first_target()
            with watched(
                study,
                info.num_tune_trials,
                command="resume",
                metric=metric,
                study_dir=study_dir,
            ) as captured:
                outcome = resume()
            log = captured.path
    except StudyError as exc:
        _fail(str(exc))
    _report(outcome, output, log)


@app.command()
def status(study: StudyArg, output: OutputOpt = Path("studies")) -> None:
    """Trial counts by state (Tune's view) and MLflow runs by status."""
    from raystudy.analysis.results import load_results
    from raystudy.study.folder import StudyError, StudyInfo
    from raystudy.study.status import study_status
    from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable
    from raystudy.tune.state import OUTCOMES

    study_dir = (output / study).resolve()
    try:
        info = StudyInfo.read(study_dir)
        counts = study_status(study_dir)
    except StudyError as exc:
        _fail(str(exc))
    typer.echo(f"Study {study!r} ({info.num_tune_trials} trials) in {study_dir}")
    for state in OUTCOMES:
        if counts.get(state):
            typer.echo(f"  {STATE_NAMES.get(state, state.lower()):13s} {counts[state]}")
    try:
        runs = load_results(study_dir)
    # Tune's counts above are still worth having (a store refused: e.g. a ${VAR} unset here).
    except (TrackingUnreachable, TrackingRejected) as exc:
        typer.secho(f"  MLflow runs unknown: {exc}", fg=typer.colors.YELLOW)
        return
    except StudyError as exc:
        _fail(str(exc))
    if not runs.empty:
        by_status = runs["status"].value_counts().to_dict()
        typer.echo("  MLflow runs: " + ", ".join(f"{v} {k.lower()}" for k, v in by_status.items()))


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
    import os
    import subprocess
    import sys
    from urllib.parse import urlsplit

    from raystudy.spec.url_secrets import expand
    from raystudy.study.folder import StudyError, StudyInfo
    from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable
    from raystudy.tracking.ui_view import write_study_view

    try:
        info = StudyInfo.read((output / study).resolve())
        view = write_study_view(info.tracking_uri, info.experiment_id, info.name)
    except (StudyError, TrackingUnreachable, TrackingRejected) as exc:
        _fail(str(exc))
    if info.tracking_uri.startswith(("http://", "https://")):
        # The study's tracking server serves the UI itself (MLflow cannot serve a UI over
        # another server): print its address, with any user and password left out.
        parts = urlsplit(expand(info.tracking_uri))
        base = f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"
        typer.echo(f"The runs of {study!r} are on the MLflow server at {base}, which serves")
        typer.echo(f"their UI; the view with their columns: {view.url_at(base + parts.path)}")
        return
    typer.echo(f"MLflow UI for {study!r} on http://127.0.0.1:{port} (Ctrl-C stops it); its runs:")
    typer.echo(f"  {view.url(port)}")
    command = [
        sys.executable,
        "-m",
        "mlflow",
        "ui",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    # MLflow 3 also starts a job runner for its GenAI jobs (7 huey processes, most of a core
    # while they start), which a study never submits.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    # The store through the environment, not argv: any user's `ps` shows argv, and a
    # ${VAR} in the URI is a password once expanded.
    env["MLFLOW_BACKEND_STORE_URI"] = expand(info.tracking_uri)
    raise typer.Exit(subprocess.call(command, env=env))


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
            help="Read the results from Tune's storage (<study>/tune/), not MLflow; logs nothing.",
        ),
    ] = False,
) -> None:
    """Correlations with bootstrap CIs, model selection, figures and an HTML report of a
    study, written to <output>/<study>/analysis/ and logged to its parent MLflow run."""
    from raystudy.analysis.pipeline import AnalysisError, Settings, analyze_study
    from raystudy.analysis.summary import format_summary
    from raystudy.study.folder import StudyError
    from raystudy.terminal.steps import StepLines
    from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable

    settings = Settings(by=tuple(by or ()), n_boot=bootstrap, seed=seed, min_trials=min_trials)
    try:
        with StepLines("analyze") as steps:
            result = analyze_study(
                (output / study).resolve(),
                settings,
                log=log and not from_tune,
                from_tune=from_tune,
                progress=steps,
            )
    except (TrackingUnreachable, TrackingRejected) as exc:
        _fail(
            f"{exc}; `raystudy analyze {study} --output {output} --from-tune` reads the "
            "results from Tune's storage instead"
        )
    except (StudyError, AnalysisError) as exc:
        _fail(str(exc))
    if from_tune:
        typer.echo("Read from Tune's storage, not MLflow: no artifacts, nothing logged.")
    typer.echo(format_summary(result))


# --- evaluate: score any encoder as a trial is scored -----------------------------------------


def _names(values: list[str] | None) -> list[str] | None:
    """`--metrics dci,mig` or `--metrics dci --metrics mig`; `--metrics ''` is none."""
    if values is None:
        return None
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


def _options(items: list[str], flag: str) -> dict[str, Any]:
    """key=value pairs, values parsed as YAML (as a spec reads them)."""
    from raystudy.spec import parse_yaml

    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _fail(f"{flag} {item!r}: expected key=value")
        try:
            options[key] = parse_yaml(value)
        except ValueError as exc:
            _fail(f"{flag} {key}: value is {exc}")
    return options


def _evaluate_store(
    tracking_uri: str | None, experiment: str | None, output: Path
) -> tuple[str | None, str | None]:
    """The tracking URI to load from and log to, and the parent run of the study that
    `--experiment` names under `--output` (its store is the default), if it is one."""
    import os

    from raystudy.study.folder import StudyError, StudyInfo

    if experiment is not None and (output / experiment / "study.json").is_file():
        try:
            info = StudyInfo.read((output / experiment).resolve())
        except StudyError as exc:
            _fail(str(exc))
        return tracking_uri or info.tracking_uri, info.parent_run_id
    return tracking_uri or os.environ.get("MLFLOW_TRACKING_URI"), None


@app.command()
def evaluate(
    encoder: Annotated[
        str,
        typer.Option(
            help="runs:/<run id>/model (a logged model), models:/..., or package.module:function "
            "(a callable images -> codes, or a factory that returns an nn.Module)."
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
        int | None, typer.Option(help="evaluation.seed: the ground-truth draws (a study's).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Another evaluation field: num_train=2000, probe_test=1000, ..."
        ),
    ] = None,
    option: Annotated[
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
    """Score an encoder with exactly the dis/*, down/* and transfer/* keys a trial logs, on
    the same ground-truth draws (evaluation.seed); print them, and write or log them."""
    import json

    from raystudy.evaluate import (
        MLFLOW_SCHEMES,
        EncoderError,
        evaluation_setup,
        resolve_encoder,
        score_encoder,
    )
    from raystudy.spec import SpecError, parse_yaml

    uri, parent = _evaluate_store(tracking_uri, experiment, output)
    if uri is None and (experiment is not None or encoder.startswith(MLFLOW_SCHEMES)):
        _fail(
            f"{'--experiment' if experiment else '--encoder ' + encoder} needs an MLflow "
            "store: --tracking-uri URI, MLFLOW_TRACKING_URI, or --experiment <study> with "
            "--output <the folder that holds it>"
        )
    fields = _options([s.removeprefix("evaluation.") for s in set_ or []], "--set")
    if seed is not None:
        fields["seed"] = seed
    try:
        split_value = parse_yaml(split) if split.lstrip().startswith("{") else split
    except ValueError as exc:
        _fail(f"--split: {exc}")
    try:
        data, split_, config = evaluation_setup(
            dataset,
            split_value,
            fields,
            metrics=_names(metrics),
            probes=_names(probes),
            dataset_options=_options(option or [], "--option"),
        )
        fn, name = resolve_encoder(encoder, uri)
        from raystudy.terminal.steps import StepLines

        with StepLines("evaluate") as steps:
            results = score_encoder(
                fn, name, data, split_, config.evaluation, _device(device), n_jobs, steps
            )
    except (SpecError, EncoderError) as exc:
        _fail(str(exc))
    width = max((len(k) for k in results), default=0)
    for key in sorted(results):
        typer.echo(f"{key:{width}s}  {results[key]:.6g}")
    if json_path is not None:
        json_path.write_text(json.dumps(dict(sorted(results.items())), indent=2))
        typer.echo(f"Scores -> {json_path}")
    if experiment is not None:
        from raystudy.tracking.external import log_external_run
        from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable

        try:
            run_id = log_external_run(uri, experiment, name, config, results, parent_run_id=parent)
        except (TrackingUnreachable, TrackingRejected) as exc:
            _fail(f"the scores were not logged: {exc}")
        typer.echo(f"Logged as run {run_id} of experiment {experiment!r} ({uri})")


def _device(name: str) -> Any:
    import torch

    try:
        return torch.device(name)
    except RuntimeError as exc:
        _fail(f"--device {name!r}: {exc}")


# --- datasets: look at the data before a study ---------------------------------------------

datasets_app = typer.Typer(
    no_args_is_help=False,
    invoke_without_command=True,
    help="List the datasets (factors, sizes, domains), or show samples of one as a PNG.",
)
app.add_typer(datasets_app, name="datasets")


@datasets_app.callback()
def datasets(ctx: typer.Context) -> None:
    """List every dataset with its factors, sizes and domains."""
    if ctx.invoked_subcommand is None:
        from raystudy.data.catalog import catalog, format_catalog

        typer.echo(format_catalog(catalog()))


@datasets_app.command("show")
def datasets_show(
    name: Annotated[str, typer.Argument(help="Dataset name (see `raystudy datasets`).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="PNG file to write.")] = Path("grid.png"),
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

    options = _options(option or [], "--option")  # as a spec's dataset.options reads them
    try:
        ds = get_dataset(name, **options)
        path = write_preview(ds, out, n=n, seed=seed)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        _fail(str(exc))
    rows = ", ".join(f"row {i + 1}: {d}" for i, d in enumerate(ds.domains))
    typer.echo(f"{ds!r}\n{n} samples per domain ({rows}) -> {path}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
