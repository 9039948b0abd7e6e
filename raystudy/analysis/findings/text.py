"""A Finding said as a sentence: its question, its agreement with the paper, what was measured
and the numbers behind it, as the report and `raystudy analyze`'s summary show them
(`finding_parts`, `finding_line`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from raystudy.analysis.core.groups import SUPERVISION
from raystudy.analysis.findings.rows import NO_CLAIM, POOLED_ONLY


def _p(value: float) -> str:
    return f"{value:.2g}" if math.isfinite(value) else "n/a"


def _interval(low: float, high: float) -> str:
    return f"[{low:+.2f}, {high:+.2f}]" if np.isfinite(low) and np.isfinite(high) else "[no CI]"


def finding_parts(row: pd.Series) -> tuple[str, str, str]:
    """A finding's question, its agreement with the paper ('Agrees', 'Disagrees',
    'Inconclusive', 'Confounded'; 'No claim' for a question the paper does not answer), and the
    rest of its line: what was measured against the paper's answer, the pooled number with its
    interval, p-values (raw and Holm, in its family) and n; the same with the design held
    fixed; the equivalence test of a claim of no effect; what an open row lacks; and what the
    paper says."""
    if row["statistic"] == "difference" and str(row["x"]).startswith(SUPERVISION):
        measure = f"mean {row['y']}, {row['x'].replace(SUPERVISION + '=', '')}"
    elif row["statistic"] == "rho":
        measure = f"rho({row['x']}, {row['y']})"
    else:
        measure = f"{row['statistic']} of {row['y']} ({row['x']})"
    said = f"measured {row['measured']}"
    if row["paper_answer"]:
        said += f", paper {row['paper_answer']}"
    rest = (
        f"{said}; {measure} = {row['value']:+.2f} {_interval(row['ci_low'], row['ci_high'])}, "
        f"p = {_p(row['p_value'])} (Holm {_p(row['p_holm'])}, {row['family']}), "
        f"n = {row['n_text']}"
    )
    held = row["held_fixed"] if isinstance(row["held_fixed"], str) else ""
    if held:
        rest += (
            f"; with {held} held fixed: {row['within_value']:+.2f} "
            f"{_interval(row['within_ci_low'], row['within_ci_high'])}, "
            f"p = {_p(row['within_p'])} (Holm {_p(row['within_p_holm'])})"
        )
    if np.isfinite(row["margin"]):
        rest += (
            f"; within +-{row['margin']:.2f} (two one-sided tests): p = {_p(row['tost_p'])}"
            f" (Holm {_p(row['tost_p_holm'])})"
        )
    carried = row["carried_by"] if isinstance(row["carried_by"], str) else ""
    if row["measured"] == POOLED_ONLY:
        rest += f", carried by {carried}" if carried else ", which the design cannot separate"
    why = row["why"] if isinstance(row["why"], str) else ""
    if why and row["measured"] != POOLED_ONLY:
        rest += f"; {why}"
    answer = "No claim" if row["agreement"] == NO_CLAIM else str(row["agreement"]).capitalize()
    return str(row["text"]), answer, f"{rest}. Paper: {row['paper']}."


def finding_line(row: pd.Series) -> str:
    """One finding as a sentence: `<question> <Verdict>: <number> [CI], n. Paper: <...>.`"""
    question, answer, rest = finding_parts(row)
    return f"{question} {answer}: {rest}"


def finding_lines(table: pd.DataFrame) -> list[str]:
    return [finding_line(row) for _, row in table.iterrows()]


#: Said in place of the findings when the study can answer none of the questions.
NO_FINDINGS = (
    "None of the papers' questions can be answered from these trials: they need a"
    " disentanglement score (dis/*) logged beside transfer scores of OOD1 / OOD2 scenarios"
    " (split dittadi_hues), weakly supervised and unsupervised models, or input noise varied,"
    " with enough finished trials for each."
)
