"""What `raystudy analyze` prints: runs, files, and the headline tables, for a terminal."""

from __future__ import annotations

import numpy as np
import pandas as pd

from raystudy.analysis.core.columns import HELDOUT_NLL
from raystudy.analysis.findings.claims import claim_counts
from raystudy.analysis.findings.rows import NOT_TESTABLE
from raystudy.analysis.findings.text import NO_FINDINGS, finding_lines
from raystudy.analysis.pipeline import (
    CLAIMS_FILE,
    COMPOSITION_FILE,
    FINDINGS_FILE,
    MODULARITY_FILE,
    R2_FILE,
    REPORT_FILE,
    StudyAnalysis,
)
from raystudy.analysis.tables.correlations import format_table, pivot
from raystudy.phases import phase_lines


def format_summary(result: StudyAnalysis) -> str:
    a = result.analysis
    counts = a.status_counts
    # The Findings first: they are what the study was run to answer.
    lines = [
        _claims(a.claims),
        _findings(a.findings),
        "",
        "Runs: " + ", ".join(f"{v} {k.lower()}" for k, v in counts.items()),
    ]
    for row in a.unfinished.itertuples():
        why = f": {row.error[:120]}" if row.error else ""
        lines.append(f"  not analysed: {row.trial} ({row.status.lower()}{why})")
    for row in a.unscored.itertuples():
        lines.append(f"  scores left out (NaN codes): {row.trial}: {row.invalid[:160]}")
    for row in a.nonfinite.itertuples():
        lines.append(f"  left out as +-inf: {row.score} in {row.runs} run(s) ({row.trials[:120]})")
    lines += _probes(a.probes)
    lines += phase_lines(a.frame)
    drawn = [f.name for f in a.figures if f.figure is not None]
    lines.append(f"Wrote {len(result.files)} files ({len(drawn)} figures) to {result.folder}")
    for f in a.figures:
        if f.figure is None:
            lines.append(f"  not drawn: {f.name} ({f.reason})")
    if result.parent_run_id:
        lines.append(f"Logged to the parent MLflow run {result.parent_run_id} under analysis/")
    lines.append(f"Report: {(result.folder / REPORT_FILE).as_uri()}")
    lines += ["", _correlations(a.correlations, a.settings.min_trials), ""]
    lines.append(_regret(a.selection))
    if not a.r2.empty:
        lines += ["", _r2(a.r2, a.r2_modularity)]
    if not a.composition.empty:
        lines += ["", _composition(a.composition)]
    return "\n".join(lines)


def _probes(table: pd.DataFrame) -> list[str]:
    """A line per probe: what computed it; a probe computed two ways is flagged."""
    lines = []
    for probe, rows in table.groupby("probe", sort=True):
        ways = "; ".join(f"{r['computed by']} ({r['runs']} runs)" for _, r in rows.iterrows())
        mixed = "  MIXED: tables pool both" if len(rows) > 1 else ""
        lines.append(f"  probe {probe}: {ways}{mixed}")
    return lines


def _composition(table: pd.DataFrame) -> str:
    """Montero et al. 2021's Table 1 beside what the study measured (composition.csv)."""
    head = (
        f"Composition task (Montero et al. 2021, Table 1), seed means; {COMPOSITION_FILE}; "
        "paper_*: the paper's dSprites values"
    )
    shown = table.drop(columns=["nll_heldout_std"]).set_index(["condition", "dataset"])
    return head + "\n" + shown.to_string(float_format=lambda v: f"{v:.2f}")


def _claims(claims: pd.DataFrame) -> str:
    """The count of the papers' claims by agreement, and each tested claim's line."""
    if claims.empty:
        return ""
    lines = [f"Claims ({CLAIMS_FILE}): {claim_counts(claims)}"]
    for row in claims[claims["agreement"] != NOT_TESTABLE].itertuples():
        lines.append(f"  {row.claim_id}: {row.agreement} ({row.detail})")
    return "\n".join(lines) + "\n"


def _findings(findings: pd.DataFrame) -> str:
    """The report's Findings section as plain lines (the same sentences)."""
    head = (
        f"Findings ({FINDINGS_FILE}): the papers' questions, answered from this study's trials "
        "(measured: > 0 / < 0 significant with the design held fixed, ~ 0 within the claim's "
        "margin, pooled only: a design factor carries it; p-values Holm-adjusted within each "
        "paper's primary or secondary family)"
    )
    body = finding_lines(findings) if not findings.empty else [NO_FINDINGS]
    return "\n".join([head, *(f"  {line}" for line in body)])


def _r2(r2: pd.DataFrame, modularity: pd.DataFrame) -> str:
    """Schott et al.'s headline: R^2 of each split, averaged over the models' seed means."""
    files = f"{R2_FILE} ({len(r2)} rows)"
    if not modularity.empty:
        files += f", {MODULARITY_FILE} ({len(modularity)} rows)"
    main = r2[r2["scenario"] == "test"]
    head = f"R^2 per split (Schott et al. 2022), mean over models of their seed means; {files}"
    if main.empty:
        return head + "\n(no scenario 'test' in the R^2 table)"
    wide = main.pivot_table(index="split", columns=["dataset", "probe"], values="r2", sort=False)
    wide.columns = [" / ".join(str(p) for p in c if p) for c in wide.columns]
    return head + "\n" + wide.to_string(float_format=lambda v: f"{v:+.3f}")


def _correlations(table: pd.DataFrame, min_trials: int) -> str:
    # Errors only (lower is better), so every sign reads the same way: MAE and held-out NLL.
    maes = table[table["y"].str.endswith("/mae") | table["y"].str.startswith(HELDOUT_NLL)]
    head = (
        "Spearman rho with transfer MAE (and held-out reconstruction NLL), all finished trials "
        f"(lower is better; '.': fewer than {min_trials} trials or a constant score; CIs in "
        "correlations.csv)\n"
    )
    if maes.empty:
        return head + "(no metric pairs to correlate)"
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        return head + format_table(pivot(maes, "all"))


def _regret(selection: pd.DataFrame) -> str:
    """Mean regret of each selector over scenarios and probes, all finished trials."""
    sub = selection[selection["group"] == "all"]
    if sub.empty or sub["regret"].isna().all():
        return "Model selection: too few finished trials to compare selectors."
    mean = sub.groupby("selector", sort=False)["regret"].mean()
    baseline = sub.groupby(["scenario", "probe"])["random_regret"].first().mean()
    lines = ["Model selection, mean regret in transfer MAE over scenarios and probes (0 is best):"]
    lines += [f"  {name:24s} {v:.4f}" for name, v in mean.items() if np.isfinite(v)]
    lines.append(f"  {'(random choice)':24s} {baseline:.4f}")
    return "\n".join(lines)
