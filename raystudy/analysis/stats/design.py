"""A study's design factors and associations with them held fixed.

A grid study sets its axes (objective, beta, input noise, latent size, architecture, dataset,
split...) by design and repeats each point over seeds. Two scores that both move with an axis
correlate across trials whether or not they have anything to do with each other: Dittadi et
al. (2021) report their correlations within each supervision type for that reason (weak
supervision raises disentanglement and transfer at once). Here every axis that varies among the
trials of a comparison is held fixed at once (additive dummies, one per level but the first)
and the factor that carries a pooled association is the one that, held fixed alone, moves it
most towards 0. Seeds are replicates and never held fixed. See `raystudy.analysis.stats.inference`
for the statistics.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from raystudy.analysis.core.columns import OBJECTIVE, PARAM
from raystudy.analysis.core.groups import SUPERVISION
from raystudy.analysis.stats.inference import Estimate, difference_test, partial_spearman
from raystudy.data.splits.papers.dittadi import HELD_OUT_HUES_PARAM

#: Params that are not design axes: the replicate index, and what follows from the axes (and
#: the seed: Dittadi's held-out hues under `held_out: per_seed` are drawn per seed).
NOT_DESIGN = frozenset(
    {
        PARAM + "seed",
        PARAM + "model.num_params",
        PARAM + "model.flops_per_step",
        PARAM + HELD_OUT_HUES_PARAM,
    }
)
#: How a held-fixed factor is named: the param key, or `supervision`.
MISSING_LEVEL = "(none)"


def design_factors(frame: pd.DataFrame) -> list[str]:
    """Columns of `frame` that are design axes varying across its rows: every `params.*`
    column with two or more values (a value absent in some rows counts as a level of its
    own: a factor_vae has no beta), but seeds and derived sizes; `supervision` first when it
    varies and the objective does not name it already."""
    out = []
    for column in sorted(c for c in frame.columns if c.startswith(PARAM)):
        if column in NOT_DESIGN:
            continue
        if _levels(frame[column]).nunique() > 1:
            out.append(column)
    if SUPERVISION in frame.columns and frame[SUPERVISION].nunique() > 1 and OBJECTIVE not in out:
        out.insert(0, SUPERVISION)
    return out


def factor_name(column: str) -> str:
    return column.removeprefix(PARAM)


def _levels(values: pd.Series) -> pd.Series:
    return values.astype(object).where(values.notna(), MISSING_LEVEL).astype(str)


def dummies(
    frame: pd.DataFrame, factors: list[str], base: NDArray[np.float64] | None = None
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """(n, k) columns: each factor's levels but its first as 0/1 dummies (a numeric axis
    sampled at many values, as an Optuna or random search draws them, as its ranks: one
    column), leaving out columns that an
    intercept, `base` (n, b) and the earlier columns already span (nested or aliased axes), so
    that intercept, base and dummies have full column rank; and the factors that kept a
    column (an axis aliased with `base` cannot be held fixed apart from it)."""
    n = len(frame)
    kept = np.ones((n, 1)) if base is None else np.column_stack([np.ones(n), base])
    columns: list[NDArray[np.float64]] = []
    used: list[str] = []
    for factor in factors:
        for column in _encoded(frame[factor]):
            candidate = np.column_stack([kept, column])
            if np.linalg.matrix_rank(candidate) == candidate.shape[1]:
                kept = candidate
                columns.append(column)
                if factor not in used:
                    used.append(factor)
    matrix = np.column_stack(columns) if columns else np.empty((n, 0))
    return matrix, tuple(factor_name(f) for f in used)


#: A numeric factor with more distinct values than this (and than a third of the trials) is a
#: sampled axis, held fixed by its ranks rather than one dummy per value.
MAX_LEVELS = 8


def _encoded(values: pd.Series) -> list[NDArray[np.float64]]:
    """The columns that hold one factor fixed: a dummy per level but the first, or, for a
    numeric factor with more than MAX_LEVELS values (and a third of the rows) and none
    missing, the ranks of its values."""
    numbers = pd.to_numeric(values, errors="coerce")
    distinct = int(numbers.nunique())
    if numbers.notna().all() and distinct > max(MAX_LEVELS, len(values) // 3):
        return [stats.rankdata(numbers.to_numpy(dtype=np.float64))]
    onehot = pd.get_dummies(_levels(values), drop_first=True, dtype=np.float64)
    return [onehot[name].to_numpy() for name in onehot.columns]


@dataclass(frozen=True)
class Adjusted:
    """An association with the design held fixed, and what carried the pooled one."""

    estimate: Estimate
    #: The factors held fixed (their names), in the order given.
    held_fixed: tuple[str, ...]
    #: The factor that, held fixed alone, moves the statistic furthest towards 0 ('' if none).
    carried_by: str


Test = Callable[[NDArray[np.float64]], Estimate]


def _carrier(test: Test, covariates: dict[str, NDArray[np.float64]], pooled: Estimate) -> str:
    """The factor whose dummies alone leave the smallest |z| (value / se) of the statistic,
    if smaller than the pooled one's."""
    best, best_z = "", abs(pooled.value / pooled.se) if pooled.se > 0 else np.inf
    for name, matrix in covariates.items():
        alone = test(matrix)
        if not np.isfinite(alone.se) or alone.se <= 0:
            continue
        z = abs(alone.value / alone.se)
        if z < best_z:
            best, best_z = name, z
    return best


def held_fixed(
    test: Test, frame: pd.DataFrame, factors: list[str], base: NDArray[np.float64] | None
) -> Adjusted:
    """`test` (a statistic of the covariates held fixed) with the dummies of `factors`
    beside `base` (the tested columns, or None), what carries the pooled statistic, and no
    statistic at all when a factor is aliased with a 0/1 `base` (`_aliased`)."""
    covariates, held = dummies(frame, factors, base)
    singles = {}
    # Supervision first: a coarser name for what the objective carries wins a tie with it.
    candidates = [*factors]
    if SUPERVISION in frame.columns and SUPERVISION not in candidates and OBJECTIVE in factors:
        candidates.insert(0, SUPERVISION)
    for factor in candidates:
        matrix, used = dummies(frame, [factor], base)
        if used:
            singles[factor_name(factor)] = matrix
    pooled = test(np.empty((len(frame), 0)))
    aliased = _aliased(frame, factors, held, base, covariates)
    if aliased:
        # The tested variable and this factor move together in every trial: no statistic
        # can tell their effects apart, so none is given.
        return Adjusted(Estimate.missing(pooled.n, covariates.shape[1]), held, aliased[0])
    carried = _carrier(test, singles, pooled) if held else ""
    return Adjusted(test(covariates), held, carried)


def _aliased(
    frame: pd.DataFrame,
    factors: list[str],
    held: tuple[str, ...],
    base: NDArray[np.float64] | None,
    covariates: NDArray[np.float64],
) -> list[str]:
    """Factors that vary but kept no column, because a 0/1 `base` (the compared groups)
    spans them, except hyperparameters only one group's models have (a `model.k` that only
    the weakly supervised objective reads is part of what is compared, not a confounder),
    and factors the other factors held fixed span already (an objective whose models are told
    apart by which hyperparameters they have) and so are held fixed with them."""
    if base is None or base.shape[1] != 1:
        return []
    side = base[:, 0] > 0.5
    kept = np.column_stack([np.ones(len(frame)), covariates])
    rank = np.linalg.matrix_rank(kept)
    out = []
    for factor in factors:
        if factor_name(factor) in held:
            continue
        columns = _encoded(frame[factor])
        if np.linalg.matrix_rank(np.column_stack([kept, *columns])) == rank:
            continue
        levels = _levels(frame[factor])
        if (levels[side] == MISSING_LEVEL).all() or (levels[~side] == MISSING_LEVEL).all():
            continue
        out.append(factor_name(factor))
    return out


def adjusted_spearman(
    frame: pd.DataFrame, x: str, y: str, *, exclude: tuple[str, ...] = ()
) -> Adjusted:
    """rho(x, y) over the rows of `frame` where both are finite, with every design factor
    that varies there (but `exclude` and the columns themselves) held fixed."""
    both = frame[np.isfinite(_numbers(frame, x)) & np.isfinite(_numbers(frame, y))]
    factors = [f for f in design_factors(both) if f not in (*exclude, x, y)]
    xs, ys = _numbers(both, x), _numbers(both, y)

    def test(covariates: NDArray[np.float64]) -> Estimate:
        return partial_spearman(xs, ys, covariates)

    return held_fixed(test, both, factors, None)


def adjusted_difference(
    frame: pd.DataFrame, y: str, indicator: NDArray[np.bool_], *, exclude: tuple[str, ...]
) -> Adjusted:
    """mean(y | indicator) - mean(y | not), over rows with a finite y, every design factor
    but `exclude` (the factors that define the indicator) held fixed; a factor aliased with
    the indicator cannot be and is left out."""
    values = _numbers(frame, y)
    keep = np.isfinite(values)
    rows, values, flag = frame[keep], values[keep], np.asarray(indicator, dtype=bool)[keep]
    factors = [f for f in design_factors(rows) if f not in exclude]

    def test(covariates: NDArray[np.float64]) -> Estimate:
        return difference_test(values, flag, covariates)

    return held_fixed(test, rows, factors, flag[:, None].astype(np.float64))


def _numbers(frame: pd.DataFrame, column: str) -> NDArray[np.float64]:
    return frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
