"""One Finding as a row of `findings.csv`, before its family is adjusted.

Every module that answers a paper's question builds its rows with `finding_row`; the Findings
table (`raystudy.analysis.findings`) then adjusts the family's p-values (Holm), gives each row
its verdict and, where inconclusive, its power. The columns:

- `value`, `ci_low`, `ci_high`, `p_value`: the statistic over the trials pooled (its 95%
  interval, two-sided p-value against 0), `p_holm` the same p adjusted over the family;
- `within_*`: the same statistic with the design factors in `held_fixed` held fixed
  (`raystudy.analysis.design`); equal to the pooled one where nothing varies to hold fixed or
  the statistic is a contrast within each model already;
- `carried_by`: the design factor that, held fixed alone, moves the pooled statistic furthest
  towards 0; named in the verdict `confounded`;
- `detectable`, `more_seeds`: for an inconclusive row, the smallest effect the test could
  detect with 80% power at this n, and the seeds to add for the observed one (NaN: none can).
"""

from __future__ import annotations

import math

from raystudy.analysis.design import Adjusted
from raystudy.analysis.inference import Estimate

COLUMNS = [
    "paper_id",
    "question",
    "text",
    "statistic",
    "x",
    "y",
    "group",
    "value",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "n",
    "n_text",
    "within_value",
    "within_ci_low",
    "within_ci_high",
    "within_p",
    "within_p_holm",
    "held_fixed",
    "carried_by",
    "n_seeds",
    "detectable",
    "more_seeds",
    "yes_if",
    "verdict",
    "paper",
]
FLOATS = (
    "value",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "within_value",
    "within_ci_low",
    "within_ci_high",
    "within_p",
    "within_p_holm",
    "detectable",
    "more_seeds",
)
#: Statistics tested on Fisher's z scale (their power is said as a correlation).
CORRELATIONS = frozenset({"rho"})
#: Verdicts.
YES, NO, INCONCLUSIVE, CONFOUNDED = "yes", "no", "inconclusive", "confounded"
VERDICTS = (YES, NO, INCONCLUSIVE, CONFOUNDED)


def finding_row(
    paper_id: str,
    question: str,
    text: str,
    statistic: str,
    yes_if: str,
    paper: str,
    *,
    x: str,
    y: str,
    group: str,
    pooled: Estimate,
    n_text: str | None = None,
    within: Adjusted | None = None,
    n_seeds: int = 0,
) -> dict[str, object]:
    """A row before adjustment. `pooled` is the statistic over all the question's trials
    (its interval may be a bootstrap one; its p-value the test's); `within` the same with the
    design held fixed (None: nothing to hold fixed, or a contrast within each model: the
    pooled numbers stand for both); `yes_if` '> 0' or '< 0', the direction the question asks;
    `paper`, what the paper found, with its number."""
    if yes_if not in ("> 0", "< 0"):
        raise ValueError(f"yes_if must be '> 0' or '< 0', not {yes_if!r}")
    inner = pooled if within is None or not within.held_fixed else within.estimate
    return {
        "paper_id": paper_id,
        "question": question,
        "text": text,
        "statistic": statistic,
        "x": x,
        "y": y,
        "group": group,
        "value": pooled.value,
        "ci_low": pooled.ci_low,
        "ci_high": pooled.ci_high,
        "p_value": pooled.p_value,
        "p_holm": math.nan,
        "n": int(pooled.n),
        "n_text": n_text if n_text is not None else str(int(pooled.n)),
        "within_value": inner.value,
        "within_ci_low": inner.ci_low,
        "within_ci_high": inner.ci_high,
        "within_p": inner.p_value,
        "within_p_holm": math.nan,
        "held_fixed": ", ".join(within.held_fixed) if within is not None else "",
        "carried_by": within.carried_by if within is not None else "",
        "n_seeds": int(n_seeds),
        "detectable": math.nan,
        "more_seeds": math.nan,
        "yes_if": yes_if,
        "verdict": "",
        "paper": paper,
        # Kept for the power of the decisive test; dropped before the table is written.
        "_se": inner.se,
        "_k": inner.k,
        "_n_within": inner.n,
    }
