"""A Finding said as a sentence: its question, its verdict, and the numbers behind it, as the
report and `raystudy analyze`'s summary show them (`finding_parts`, `finding_line`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from raystudy.analysis.core.groups import SUPERVISION
from raystudy.analysis.findings.rows import CONFOUNDED, CORRELATIONS, INCONCLUSIVE
from raystudy.analysis.stats.inference import POWER

#: Past this many, the seeds an observed effect needs are said as "more than" it: an
#: approximation that far out says only that the effect is out of reach.
MANY_SEEDS = 1000


def _p(value: float) -> str:
    return f"{value:.2g}" if math.isfinite(value) else "n/a"


def _interval(low: float, high: float) -> str:
    return f"[{low:+.2f}, {high:+.2f}]" if np.isfinite(low) and np.isfinite(high) else "[no CI]"


def finding_parts(row: pd.Series) -> tuple[str, str, str]:
    """A finding's question, its verdict ('Yes', 'No', 'Inconclusive', 'Confounded'), and the
    rest of its line: the pooled number with its interval, p-values (raw and Holm) and n; the
    same with the design held fixed; what carries a confounded one; the power of an
    inconclusive one; and what the paper reported."""
    if row["statistic"] == "difference" and str(row["x"]).startswith(SUPERVISION):
        measure = f"mean {row['y']}, {row['x'].replace(SUPERVISION + '=', '')}"
    elif row["statistic"] == "rho":
        measure = f"rho({row['x']}, {row['y']})"
    else:
        measure = f"{row['statistic']} of {row['y']} ({row['x']})"
    rest = (
        f"{measure} = {row['value']:+.2f} {_interval(row['ci_low'], row['ci_high'])}, "
        f"p = {_p(row['p_value'])} (Holm {_p(row['p_holm'])}), n = {row['n_text']}"
    )
    held = row["held_fixed"] if isinstance(row["held_fixed"], str) else ""
    if held:
        rest += (
            f"; with {held} held fixed: {row['within_value']:+.2f} "
            f"{_interval(row['within_ci_low'], row['within_ci_high'])}, "
            f"p = {_p(row['within_p'])} (Holm {_p(row['within_p_holm'])})"
        )
    carried = row["carried_by"] if isinstance(row["carried_by"], str) else ""
    if row["verdict"] == CONFOUNDED:
        rest += f", carried by {carried}" if carried else ", which the design cannot separate"
    if row["verdict"] in (INCONCLUSIVE, CONFOUNDED) and np.isfinite(row["detectable"]):
        size = "|rho|" if row["statistic"] in CORRELATIONS else "an effect"
        rest += f"; this n detects {size} >= {row['detectable']:.2f} ({POWER:.0%} power)"
        if np.isfinite(row["more_seeds"]) and row["more_seeds"] > MANY_SEEDS:
            rest += f", the observed one needs over {MANY_SEEDS:,} more seeds"
        elif np.isfinite(row["more_seeds"]):
            rest += f", the observed one needs ~{row['more_seeds']:.0f} more seeds"
    return str(row["text"]), str(row["verdict"]).capitalize(), f"{rest}. Paper: {row['paper']}."


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
