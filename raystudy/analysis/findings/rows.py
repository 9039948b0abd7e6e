"""One Finding as a row of `findings.csv`, and the family of them adjusted.

Every module that answers a paper's question builds its rows with `finding_row`;
`adjusted_family` then adjusts the family's p-values (Holm), gives each row its verdict and,
where inconclusive or confounded, its power; `order_findings` puts a study's own paper
first. The columns:

- `value`, `ci_low`, `ci_high`, `p_value`: the statistic over the trials pooled (its 95%
  interval, two-sided p-value against 0), `p_holm` the same p adjusted over the family;
- `within_*`: the same statistic with the design factors in `held_fixed` held fixed
  (`raystudy.analysis.stats.design`); equal to the pooled one where nothing varies to hold fixed or
  the statistic is a contrast within each model already;
- `carried_by`: the design factor that, held fixed alone, moves the pooled statistic furthest
  towards 0; named in the verdict `confounded`;
- `detectable`, `more_seeds`: for an inconclusive row, the smallest effect the test could
  detect with 80% power at this n, and the seeds to add for the observed one (NaN: none can).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from raystudy.analysis.stats.design import Adjusted
from raystudy.analysis.stats.inference import ALPHA, Estimate, holm, power

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


#: The order a study's Findings are shown in when its name names none of the papers.
PAPER_ORDER = ("dittadi2021", "montero2021", "montero2022", "schott2022", "locatello2019")


def adjusted_family(rows: list[dict[str, object]]) -> pd.DataFrame:
    """The rows as a table: Holm-adjusted p-values over the family, verdicts, and the power
    of every row that is not a yes or a no."""
    table = pd.DataFrame(rows, columns=[*COLUMNS, "_se", "_k", "_n_within"])
    table["p_holm"] = holm(table["p_value"].to_numpy(dtype=np.float64))
    table["within_p_holm"] = holm(table["within_p"].to_numpy(dtype=np.float64))
    table["verdict"] = [verdict(row) for _, row in table.iterrows()]
    # What carries a pooled statistic is named only where it decides the verdict.
    table["carried_by"] = table["carried_by"].where(table["verdict"] == CONFOUNDED, "")
    tests = int(np.isfinite(table["within_p"].to_numpy(dtype=np.float64)).sum())
    for i, row in table.iterrows():
        if row["verdict"] in (YES, NO):
            continue
        detectable, more = _power(row, tests)
        table.loc[i, ["detectable", "more_seeds"]] = [detectable, more]
    table = table[COLUMNS]
    return table.astype({"n": "int64", "n_seeds": "int64", **dict.fromkeys(FLOATS, "float64")})


def verdict(row: pd.Series) -> str:
    """`yes` / `no` when the statistic with the design held fixed is significant after Holm's
    adjustment (in the asked direction / the other); `confounded` when only the pooled one
    is; else `inconclusive`."""
    within_p = float(row["within_p_holm"])
    if math.isfinite(within_p) and within_p < ALPHA:
        positive = float(row["within_value"]) > 0.0
        return YES if positive == (row["yes_if"] == "> 0") else NO
    pooled_p = float(row["p_holm"])
    if row["held_fixed"] and math.isfinite(pooled_p) and pooled_p < ALPHA:
        return CONFOUNDED
    return INCONCLUSIVE


def _power(row: pd.Series, tests: int) -> tuple[float, float]:
    """(smallest detectable effect, seeds to add for the observed one) of the decisive test,
    at the Bonferroni level ALPHA / tests."""
    estimate = Estimate(
        float(row["within_value"]),
        math.nan,
        math.nan,
        float(row["within_p"]),
        float(row["_se"]),
        int(row["_n_within"]),
        int(row["_k"]),
    )
    got = power(estimate, correlation=row["statistic"] in CORRELATIONS, alpha=ALPHA / max(tests, 1))
    if not math.isfinite(got.trials_needed):
        return got.detectable, math.nan
    n, seeds = int(row["n"]), int(row["n_seeds"]) or int(row["n"])
    # Every seed added repeats the design once: n / seeds trials.
    more = max(0.0, got.trials_needed - estimate.n) / (n / seeds)
    return got.detectable, float(math.ceil(more))


def order_findings(table: pd.DataFrame, study: str) -> pd.DataFrame:
    """The study's own paper's Findings first (a study named after a paper, `montero2021`,
    `schott2022_small`), then the others in `PAPER_ORDER`."""
    own = next((p for p in PAPER_ORDER if study.lower().startswith(p)), None)
    order = [own, *(p for p in PAPER_ORDER if p != own)] if own else list(PAPER_ORDER)
    rank = {p: i for i, p in enumerate(order)}
    keys = table["paper_id"].map(lambda p: rank.get(p, len(rank)))
    return table.iloc[np.argsort(keys.to_numpy(), kind="stable")].reset_index(drop=True)
