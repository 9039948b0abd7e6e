"""What the papers' Findings modules share (`montero2021`, `montero2022`, `schott`,
`locatello`; gathered by `table.paper_rows`).

Each row is one question answered by one statistic with a two-sided p-value against 0, built by
`raystudy.analysis.findings.rows.finding_row`; the Findings table adjusts the family, gives the
verdicts and the power. The questions, their statistics and the papers' answers are in
`montero2021`, `montero2022`, `schott` and `locatello`; this module holds what they share:

- a paired difference (held-out minus training NLL of one trial, a model's NLL after minus
  before its decoder was retrained, ...) is tested with a one-sample t-test of the differences
  (scipy.stats.ttest_1samp), its interval the t interval and its standard error |mean / t|;
- a rank correlation already in `correlations.csv` or `metric_agreement.csv` is read from its
  row (rho, its bootstrap interval, its p-value; the same rho with the design held fixed), never
  recomputed; only the count of dummies held fixed and the factor that carries the pooled rho,
  which the table does not keep, come from `raystudy.analysis.stats.design.adjusted_spearman` over
  the same trials;
- a difference of differences (an OLS interaction) with the design held fixed is
  `held_fixed_coefficient`, the counterpart of `design.adjusted_difference`.

`min_trials` is the fewest units a statistic is computed from: trials, or the rows of a table
that averages seeds (`decoder_test.csv`, `r2_table.csv`, `r2_modularity.csv`), where each row is
one model. A question with fewer, or with nothing to compare (no such split, no ground-truth
decoder, one objective), has no row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from raystudy.analysis.core.cells import CELL, SEPARATOR
from raystudy.analysis.core.columns import PARAM, SPLIT, transfer_scores
from raystudy.analysis.stats.design import Adjusted, adjusted_difference, held_fixed
from raystudy.analysis.stats.inference import (
    ALPHA,
    Estimate,
    difference_test,
    ols_coefficient,
    rho_test,
)

SEED = PARAM + "seed"


@dataclass(frozen=True)
class PaperTables:
    """The tables `raystudy.analysis.pipeline.compute` builds that the papers' questions read
    (each may be empty: the question it serves then has no row)."""

    #: `r2_table` and `r2_modularity` (Schott et al. 2022; Montero et al. 2022's encoder test).
    r2: pd.DataFrame = field(default_factory=pd.DataFrame)
    r2_modularity: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: `metric_agreement` and `objective_spread` (Locatello et al. 2019).
    agreement: pd.DataFrame = field(default_factory=pd.DataFrame)
    spread: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: `decoder_test_table` (Montero et al. 2022) and `composition_table` (Montero et al. 2021).
    decoder_test: pd.DataFrame = field(default_factory=pd.DataFrame)
    composition: pd.DataFrame = field(default_factory=pd.DataFrame)


def numbers(frame: pd.DataFrame, column: str) -> NDArray[np.float64]:
    """A column as floats (NaN where missing, or everywhere when the table lacks it)."""
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    return frame[column].to_numpy(dtype=np.float64, na_value=np.nan)


def seed_count(frame: pd.DataFrame) -> int:
    """Distinct `params.seed` values among `frame`'s trials (0 without the column)."""
    if SEED not in frame.columns:
        return 0
    return int(frame[SEED].dropna().astype(str).nunique())


def paired_estimate(differences: NDArray[np.float64], level: float = 1 - ALPHA) -> Estimate:
    """Mean of paired differences (NaN ones left out), its t interval and two-sided one-sample
    t-test against 0 (scipy.stats.ttest_1samp), se = |mean / t|; NaN interval and p with
    under two differences or none that differ."""
    d = np.asarray(differences, dtype=np.float64)
    d = d[np.isfinite(d)]
    n = int(d.size)
    if n < 2 or float(np.ptp(d)) == 0.0:
        mean = float(d.mean()) if n else math.nan
        return Estimate(mean, math.nan, math.nan, math.nan, math.nan, n, 0)
    test = stats.ttest_1samp(d, 0.0)
    ci = test.confidence_interval(level)
    mean, t = float(d.mean()), float(test.statistic)
    se = abs(mean / t) if t else float(stats.sem(d))
    return Estimate(mean, float(ci.low), float(ci.high), float(test.pvalue), se, n, 0, n - 1.0)


def where_labels(frame: pd.DataFrame) -> pd.Series:
    """Each trial's cell (`raystudy.analysis.core.cells`), or its split when the study has one
    cell, or `all`."""
    if CELL in frame.columns:
        return frame[CELL].astype(str)
    if SPLIT in frame.columns:
        return frame[SPLIT].astype(str)
    return pd.Series("all", index=frame.index, dtype=object)


def where_group(frame: pd.DataFrame, label: str) -> str:
    """How a row's `group` names the trials of one `where_labels` label."""
    if CELL in frame.columns:
        return f"{CELL}={label}"
    return f"split={label}" if SPLIT in frame.columns else "all"


def only_value(frame: pd.DataFrame, column: str) -> str:
    """The value of `column` that all of `frame`'s trials share ('' when none, several, or no
    such column)."""
    if column not in frame.columns:
        return ""
    names = frame[column].dropna().astype(str).unique()
    return str(names[0]) if len(names) == 1 else ""


def rho_estimates(row: pd.Series, adjusted: Adjusted) -> tuple[Estimate, Adjusted]:
    """The pooled and held-fixed rho of a `correlation_table` row as Estimates: value,
    bootstrap interval and p-value as the row has them, the Fisher-z standard errors of
    `rho_test`; the number of dummies held fixed and the carrying factor from `adjusted` (the
    same trials' `adjusted_spearman`), which the table does not keep."""
    n = int(row["n"])
    rho = float(row["rho"])
    pooled = Estimate(
        rho,
        float(row["ci_low"]),
        float(row["ci_high"]),
        float(row["p_value"]),
        rho_test(rho, n).se,
        n,
        0,
    )
    k = adjusted.estimate.k
    within_rho = float(row.get("within_rho", math.nan))
    if math.isfinite(within_rho):
        inner = Estimate(
            within_rho,
            float(row["within_ci_low"]),
            float(row["within_ci_high"]),
            float(row["within_p"]),
            rho_test(within_rho, n, k).se,
            n,
            k,
        )
    else:
        inner = adjusted.estimate
    return pooled, Adjusted(inner, adjusted.held_fixed, adjusted.carried_by)


def held_fixed_coefficient(
    frame: pd.DataFrame,
    values: NDArray[np.float64],
    base: NDArray[np.float64],
    factors: list[str],
) -> tuple[Estimate, Adjusted]:
    """`inference.ols_coefficient` of `base`'s last column over `frame`'s rows, pooled (no
    covariates) and with the dummies of `factors` held fixed (`design.held_fixed`: those
    aliased with `base` left out, and the factor that carries the pooled coefficient)."""

    def test(covariates: NDArray[np.float64]) -> Estimate:
        return ols_coefficient(values, base, covariates)

    return test(np.empty((len(frame), 0))), held_fixed(test, frame, factors, base)


def test_r2(runs: pd.DataFrame) -> dict[str, pd.Series]:
    """Per readout, each trial's `transfer/test/<probe>/r2` (its cell's column where the
    study's transfer columns are split by cell)."""
    out: dict[str, pd.Series] = {}
    for score in transfer_scores(runs, ("r2",)):
        if score.scenario.split(SEPARATOR)[0] != "test":
            continue
        values = pd.Series(numbers(runs, score.column), index=runs.index)
        previous = out.get(score.probe)
        out[score.probe] = values if previous is None else previous.fillna(values)
    return {probe: values for probe, values in out.items() if np.isfinite(values).any()}


def split_columns(frame: pd.DataFrame) -> tuple[str, ...]:
    return tuple(c for c in frame.columns if c == SPLIT or c.startswith(SPLIT + "."))


def two_group_difference(
    trials: pd.DataFrame,
    values: NDArray[np.float64],
    first: NDArray[np.bool_],
    exclude: tuple[str, ...],
) -> tuple[Estimate, Adjusted]:
    """mean(values | first) - mean(values | not first) over `trials`: pooled (Welch's test)
    and with every design factor but `exclude` (those that define the two groups) held fixed
    (`design.adjusted_difference`)."""
    pooled = difference_test(values, first, np.empty((len(trials), 0)))
    within = adjusted_difference(trials.assign(_values=values), "_values", first, exclude=exclude)
    return pooled, within
