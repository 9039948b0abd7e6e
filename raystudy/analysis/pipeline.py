"""`raystudy analyze`: a study's runs -> tables, figures and a report, on disk and in MLflow.

Everything is computed from the results table (architecture.md Sec. 7): `compute` is a pure function
of it, `write_analysis` puts the files in `<study>/analysis/`, and `analyze_study` adds the
reading from MLflow and the logging back to the study's parent run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from raystudy.analysis.core import results
from raystudy.analysis.core.cells import transfer_by_cell
from raystudy.analysis.core.columns import disentanglement_columns, downstream_columns, metric
from raystudy.analysis.core.errors import AnalysisError
from raystudy.analysis.core.groups import trial_groups, with_supervision
from raystudy.analysis.core.results import ANALYSIS_DIR, RESULTS_FILE, finished, load_results
from raystudy.analysis.figures.study import StudyFigure, study_figures
from raystudy.analysis.findings.claims import claims_table
from raystudy.analysis.findings.rows import order_findings
from raystudy.analysis.findings.shared import PaperTables
from raystudy.analysis.findings.table import findings_table, paper_rows
from raystudy.analysis.report import ReportInputs, render_report
from raystudy.analysis.tables.agreement import metric_agreement, objective_spread
from raystudy.analysis.tables.composition import composition_table
from raystudy.analysis.tables.correlations import correlation_table, transfer_correlations
from raystudy.analysis.tables.decoder_arms import decoder_test_table
from raystudy.analysis.tables.r2 import r2_modularity, r2_table
from raystudy.analysis.tables.selection import selection_table
from raystudy.keys import eval_key

FINDINGS_FILE = "findings.csv"
CLAIMS_FILE = "claims.csv"
CORRELATIONS_FILE = "correlations.csv"
PROXY_FILE = "unsupervised_vs_disentanglement.csv"
SELECTION_FILE = "selection.csv"
R2_FILE = "r2_table.csv"
MODULARITY_FILE = "r2_modularity.csv"
AGREEMENT_FILE = "metric_agreement.csv"
SPREAD_FILE = "objective_spread.csv"
DECODER_TEST_FILE = "decoder_test.csv"
COMPOSITION_FILE = "composition.csv"
REPORT_FILE = "report.html"


#: Told each step of an analysis as it starts (a line to show); None: told nothing.
Progress = Callable[[str], None] | None


def _silent(message: str) -> None:
    del message


@dataclass(frozen=True)
class Settings:
    """How the analysis is run; recorded in the report."""

    by: tuple[str, ...] = ()
    n_boot: int = 1000
    seed: int = 0
    min_trials: int = 5


def _of_frame(read: Callable[[pd.DataFrame], pd.DataFrame | pd.Series]) -> property:
    """An attribute of an `Analysis` read from its results table by `read`."""
    return property(lambda analysis: read(analysis.frame))


@dataclass(frozen=True, kw_only=True)
class Analysis(PaperTables):
    """What `compute` finds: the tables and figures of one results table, the papers' own
    tables (`PaperTables`; each empty, and not written, where it does not apply) among them."""

    frame: pd.DataFrame
    correlations: pd.DataFrame
    proxy_correlations: pd.DataFrame
    selection: pd.DataFrame
    figures: list[StudyFigure]
    settings: Settings
    #: The papers' questions this study answers, one row each (`raystudy.analysis.findings`);
    #: written even when empty, since no question answered is itself a finding.
    findings: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Every claim of the papers and whether the study agrees (`claims.csv`).
    claims: pd.DataFrame = field(default_factory=pd.DataFrame)

    status_counts = _of_frame(results.status_counts)
    unfinished = _of_frame(results.unfinished)
    nonfinite = _of_frame(results.nonfinite)
    unscored = _of_frame(results.unscored)
    probes = _of_frame(results.probe_implementations)


def proxy_columns(frame: pd.DataFrame) -> list[str]:
    """ELBO, reconstruction and downstream accuracy: the rows of Dittadi et al. Fig. 3 right."""
    own = [metric(m) for m in (eval_key("elbo"), eval_key("recon")) if metric(m) in frame.columns]
    return own + downstream_columns(frame)


def compute(
    frame: pd.DataFrame, settings: Settings = Settings(), progress: Progress = None
) -> Analysis:
    """Correlations, model selection and figures of the finished trials of `frame`.

    `frame` is a results table (any statuses); failed and running trials are counted, never
    analysed. `progress` is told each step as it starts.
    """
    say = progress or _silent
    # Groups are sets of row labels: a table concatenated without fresh labels would
    # count every repeated label's rows again.
    frame = frame.reset_index(drop=True)
    frame = with_supervision(frame) if "supervision" not in frame.columns else frame
    # Before the cells rename scenarios: the R^2 table keeps split and scenario apart.
    r2, modularity = r2_table(finished(frame)), r2_modularity(finished(frame))
    done = transfer_by_cell(finished(frame))
    groups = trial_groups(done, settings.by)
    say(
        f"rank correlations of {len(done)} finished trials in {len(groups)} groups, "
        f"{settings.n_boot} bootstrap resamples each"
    )
    # Every bootstrapped table and Finding draws and counts alike.
    options = {"n_boot": settings.n_boot, "seed": settings.seed, "min_trials": settings.min_trials}
    correlations = transfer_correlations(done, groups, **options)
    proxy = correlation_table(
        done, proxy_columns(done), disentanglement_columns(done), groups, **options
    )
    say("model selection and the metrics' agreement")
    selection = selection_table(done, groups, min_trials=settings.min_trials)
    agreement = metric_agreement(done, groups, **options)
    spread = objective_spread(done)
    decoder_test = decoder_test_table(finished(frame))
    composition = composition_table(finished(frame))
    say("findings: the papers' questions and claims this study can answer, adjusted per family")
    tables = PaperTables(r2, modularity, agreement, spread, decoder_test, composition)
    papers = paper_rows(done, correlations, tables, **options)
    findings = findings_table(done, correlations, proxy, **options, extra_rows=papers)
    say("figures")
    figures = study_figures(done, correlations, proxy, r2, agreement)
    return Analysis(
        frame=frame,
        settings=settings,
        **vars(tables),
        correlations=correlations,
        proxy_correlations=proxy,
        selection=selection,
        findings=findings,
        claims=claims_table(findings),
        figures=figures,
    )


def write_analysis(
    analysis: Analysis,
    folder: Path,
    *,
    study: str,
    planned_trials: int,
    spec_text: str = "",
) -> list[Path]:
    """Every output file in `folder`: results.parquet, findings.csv and the other CSV tables
    (the R^2 ones only for a study of Schott splits, the agreement ones only with two metrics
    or objectives, composition.csv only with composition trials), the PNGs, report.html."""
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / RESULTS_FILE]
    analysis.frame.to_parquet(files[0], index=False)
    for name, table in (
        (FINDINGS_FILE, analysis.findings),
        (CLAIMS_FILE, analysis.claims),
        (CORRELATIONS_FILE, analysis.correlations),
        (PROXY_FILE, analysis.proxy_correlations),
        (SELECTION_FILE, analysis.selection),
    ):
        table.to_csv(folder / name, index=False)
        files.append(folder / name)
    optional = (
        (R2_FILE, analysis.r2),
        (MODULARITY_FILE, analysis.r2_modularity),
        (AGREEMENT_FILE, analysis.agreement),
        (SPREAD_FILE, analysis.spread),
        (DECODER_TEST_FILE, analysis.decoder_test),
        (COMPOSITION_FILE, analysis.composition),
    )
    for name, table in optional:
        if table.empty:  # does not apply (now): no table, nor one left from an earlier run
            (folder / name).unlink(missing_ok=True)
            continue
        table.to_csv(folder / name, index=False)
        files.append(folder / name)
    for figure in analysis.figures:
        png = figure.png()
        if png is not None:
            (folder / figure.name).write_bytes(png)
            files.append(folder / figure.name)
    stale = {f.name for f in analysis.figures if f.figure is None}
    for name in stale:  # a figure that no longer applies must not linger from an earlier run
        (folder / name).unlink(missing_ok=True)
    settings = analysis.settings
    report = render_report(
        ReportInputs(
            study=study,
            findings=analysis.findings,
            claims=analysis.claims,
            status_counts=analysis.status_counts,
            planned_trials=planned_trials,
            unfinished=analysis.unfinished,
            nonfinite=analysis.nonfinite,
            probes=analysis.probes,
            correlations=analysis.correlations,
            proxy_correlations=analysis.proxy_correlations,
            selection=analysis.selection,
            r2=analysis.r2,
            r2_modularity=analysis.r2_modularity,
            figures=analysis.figures,
            spec_text=spec_text,
            settings={
                "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "bootstrap resamples": settings.n_boot,
                "seed": settings.seed,
                "min trials per cell": settings.min_trials,
                "grouped by": ", ".join(settings.by) or "supervision only",
            },
            min_trials=settings.min_trials,
        )
    )
    (folder / REPORT_FILE).write_text(report, encoding="utf-8")
    files.append(folder / REPORT_FILE)
    return files


@dataclass(frozen=True)
class StudyAnalysis:
    analysis: Analysis
    folder: Path
    files: list[Path]
    parent_run_id: str | None


def analyze_study(
    study_dir: Path,
    settings: Settings = Settings(),
    *,
    log: bool = True,
    from_tune: bool = False,
    progress: Progress = None,
) -> StudyAnalysis:
    """Read a study's runs, write its analysis to `<study_dir>/analysis/` and (with `log`)
    log the same files to the study's parent MLflow run, under `analysis/`.

    `from_tune` reads the results from Tune's storage instead of MLflow (and logs nothing):
    the way to analyse a study whose tracking server is gone. `progress` is told each step
    as it starts.
    """
    from raystudy.study.folder import SPEC_FILE, StudyInfo
    from raystudy.tracking.study_run import StudyTracker

    say = progress or _silent
    info = StudyInfo.read(study_dir)
    where = "Tune storage" if from_tune else f"MLflow store ({info.tracking_uri})"
    say(f"reading the trial runs of {info.models} planned models from the {where}")
    if from_tune:
        from raystudy.analysis.core.tune_results import load_tune_results

        frame, log = load_tune_results(study_dir), False
    else:
        frame = load_results(study_dir)
    if frame.empty:
        raise AnalysisError(f"study {info.name!r} has no trial runs yet in its {where}")
    analysis = compute(frame, settings, progress)
    # A paper's own study opens with that paper's questions.
    analysis = replace(
        analysis,
        findings=order_findings(analysis.findings, info.name),
        claims=claims_table(analysis.findings, info.name),
    )
    spec = study_dir / SPEC_FILE
    folder = study_dir / ANALYSIS_DIR
    say(f"writing tables, figures and the report to {folder}")
    files = write_analysis(
        analysis,
        folder,
        study=info.name,
        planned_trials=info.models,
        spec_text=spec.read_text() if spec.is_file() else "(no spec.yaml in the study folder)",
    )
    parent = None
    if log:
        say(f"logging {len(files)} files to the study's parent MLflow run")
        tracker = StudyTracker(info.tracking_uri, info.experiment_id, info.parent_run_id)
        tracker.log_analysis(files)
        parent = info.parent_run_id
    return StudyAnalysis(analysis, folder, files, parent)
