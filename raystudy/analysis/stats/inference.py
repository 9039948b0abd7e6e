"""Tests, multiple-comparison corrections and power for the Findings: pure functions of numbers.

- Spearman's rho (plain or partial) is tested on Fisher's z = atanh(rho) with Bonett & Wright's
  (2000, Psychometrika 65:23-28) variance for Spearman's rho, (1 + rho^2 / 2) / (n - 3 - k),
  k the number of covariates partialled out (Fisher 1924 for the n - 3 - k; k = 0 for a plain
  rho). Its interval is tanh(z +- z_{1-a/2} se); its two-sided p-value 2 (1 - Phi(|z| / se)).
- A partial Spearman rho is the Pearson correlation of the residuals of the ranks of x and y
  after least-squares regression on the covariates (the rank-based partial correlation of
  Kim 2015, "ppcor", Commun. Stat. Appl. Methods 22:665-674; covariates here are design dummies,
  whose ranks span the same space as themselves).
- A difference of group means, with covariates held fixed, is the coefficient of the group
  indicator in an ordinary least-squares fit (statsmodels OLS, t-test on n - p degrees of
  freedom); without covariates, Welch's t-test (scipy.stats.ttest_ind, equal_var=False).
- A family of tests is adjusted by Holm's step-down (1979) and a table of many by the
  Benjamini-Hochberg (1995) false discovery rate: with p_(1) <= ... <= p_(m) sorted,
  Holm's p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)) and BH's
  q_(i) = min_{j >= i} min(1, m p_(j) / j), each mapped back to its test. (What statsmodels'
  `multipletests` gives for "holm" and "fdr_bh", tested against it; computed here because
  statsmodels 0.15 runs `gc.collect()` on every call, 0.15 s each.)
- Power is that of the test the verdict comes from, on its scale (Fisher's z for rho, a t
  with the test's degrees of freedom otherwise; `Estimate.dof`, infinite for a normal test):
  with standard error se the smallest effect detected with probability `power` at two-sided
  level a is (t_{1-a/2, dof} + t_{power, dof}) se, so an observed effect beyond it is always
  significant at a; the trials needed for an observed effect e are the fewest n' at which
  (t_{1-a/2, dof'} + t_{power, dof'}) se sqrt(m / m') <= e, m the part of n that the
  variance scales with (n - 3 - k for a correlation, n otherwise) and dof' = dof + n' - n.
- Equivalence (a claim of no effect): two one-sided tests (Schuirmann 1987) against a margin
  d on the same scale, p = max(P(T > (v + d) / se), P(T < (v - d) / se)); below the level,
  the effect lies within +-d. This n confirms equivalence, when the true effect is 0, with
  probability `power` for margins of at least (t_{1-a, dof} + t_{1-(1-power)/2, dof}) se.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

#: The level every Finding is judged at, after adjustment.
ALPHA = 0.05
#: The coverage of the intervals of a difference of means and of an OLS coefficient.
LEVEL = 1 - ALPHA
#: The power the detectable effect of an inconclusive Finding is quoted at.
POWER = 0.8


@dataclass(frozen=True)
class Estimate:
    """A statistic, its interval, two-sided p-value (H0: 0) and standard error on the scale
    the test uses (Fisher's z for a correlation, the statistic's own otherwise); NaN where the
    data cannot give it."""

    value: float
    ci_low: float
    ci_high: float
    p_value: float
    se: float
    n: int
    #: Covariate columns held fixed (0 for a plain statistic).
    k: int = 0
    #: Degrees of freedom of the t the test uses (infinite: a normal test, as rho's).
    dof: float = math.inf

    @classmethod
    def missing(cls, n: int = 0, k: int = 0) -> Estimate:
        nan = math.nan
        return cls(nan, nan, nan, nan, nan, n, k)


def rho_test(rho: float, n: int, k: int = 0, level: float = 1 - ALPHA) -> Estimate:
    """Fisher-z interval and p-value of a (partial) Spearman rho from n trials with k
    covariates held fixed (Bonett & Wright 2000's variance); NaN when n - 3 - k < 1."""
    dof = n - 3 - k
    if dof < 1 or not math.isfinite(rho):
        return Estimate(rho, math.nan, math.nan, math.nan, math.nan, n, k)
    r = float(np.clip(rho, -0.999999, 0.999999))
    se = math.sqrt((1.0 + r * r / 2.0) / dof)
    z = math.atanh(r)
    half = _normal_quantile(0.5 + level / 2.0) * se
    # Two-sided normal tail, 2 (1 - Phi(t)) = erfc(t / sqrt 2): scipy's per-call overhead
    # is most of the time of a table of thousands of cells.
    p = math.erfc(abs(z) / se / math.sqrt(2.0))
    return Estimate(rho, math.tanh(z - half), math.tanh(z + half), p, se, n, k)


@functools.lru_cache(maxsize=8)
def _normal_quantile(q: float) -> float:
    return float(stats.norm.ppf(q))


def ranks(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Average ranks (ties share their mean rank)."""
    return stats.rankdata(values).astype(np.float64)


def residuals(y: NDArray[np.float64], covariates: NDArray[np.float64]) -> NDArray[np.float64]:
    """y (n,) or (n, c) minus its least-squares fit on an intercept and `covariates` (n, k)."""
    design = np.column_stack([np.ones(y.shape[0]), covariates])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return y - design @ coef


def partial_spearman(
    x: NDArray[np.float64], y: NDArray[np.float64], covariates: NDArray[np.float64]
) -> Estimate:
    """Spearman's rho of x and y with `covariates` (n, k, full column rank with an intercept)
    held fixed: Pearson r of the rank residuals, tested as `rho_test` with k covariates.
    With k = 0 it is Spearman's rho itself."""
    n, k = x.size, covariates.shape[1]
    rx, ry = residuals(ranks(x), covariates), residuals(ranks(y), covariates)
    scale = math.sqrt(float(rx @ rx) * float(ry @ ry))
    if scale <= 1e-12 * max(1, n) ** 2:  # a rank that the covariates explain entirely
        return Estimate.missing(n, k)
    return rho_test(float(rx @ ry) / scale, n, k)


def difference_test(
    values: NDArray[np.float64], indicator: NDArray[np.bool_], covariates: NDArray[np.float64]
) -> Estimate:
    """mean(values | indicator) - mean(values | not indicator), with `covariates` held fixed
    (the indicator's OLS coefficient) or, with none, Welch's t-test; NaN interval and p when
    the fit has no residual degrees of freedom."""
    n, k = values.size, covariates.shape[1]
    a, b = values[indicator], values[~indicator]
    if a.size < 2 or b.size < 2:
        return Estimate.missing(n, k)
    if k == 0:
        welch = stats.ttest_ind(a, b, equal_var=False)
        ci = welch.confidence_interval(LEVEL)
        value = float(a.mean() - b.mean())
        t = float(welch.statistic)
        se = abs(value / t) if t else math.inf
        dof = float(welch.df)
        return Estimate(value, float(ci.low), float(ci.high), float(welch.pvalue), se, n, 0, dof)
    return ols_coefficient(values, indicator[:, None].astype(np.float64), covariates)


def ols_coefficient(
    values: NDArray[np.float64], base: NDArray[np.float64], covariates: NDArray[np.float64]
) -> Estimate:
    """The coefficient of `base`'s last column in an OLS of `values` on an intercept, `base`
    (n, b) and `covariates` (n, k), with its t interval and two-sided p (statsmodels); NaN
    when the fit has no residual degrees of freedom or is rank-deficient."""
    import statsmodels.api as sm  # heavy import, only here

    n, k = values.size, covariates.shape[1]
    design = np.column_stack([np.ones(n), base, covariates])
    if n - design.shape[1] < 1 or np.linalg.matrix_rank(design) < design.shape[1]:
        return Estimate.missing(n, k)
    fit = sm.OLS(values, design).fit()
    j = base.shape[1]
    low, high = fit.conf_int(1 - LEVEL)[j]
    return Estimate(
        float(fit.params[j]),
        float(low),
        float(high),
        float(fit.pvalues[j]),
        float(fit.bse[j]),
        n,
        k,
        float(fit.df_resid),
    )


def _adjusted(p_values: NDArray[np.float64], method: str) -> NDArray[np.float64]:
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = _holm(p[ok]) if method == "holm" else _bh(p[ok])
    return out


def _holm(p: NDArray[np.float64]) -> NDArray[np.float64]:
    order = np.argsort(p, kind="stable")
    m = p.size
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.maximum.accumulate(steps)
    return out


def _bh(p: NDArray[np.float64]) -> NDArray[np.float64]:
    order = np.argsort(p, kind="stable")
    m = p.size
    steps = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
    out = np.empty(m)
    out[order] = np.minimum.accumulate(steps[::-1])[::-1]
    return out


def holm(p_values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Holm (1979) adjusted p-values of a family (NaN stays NaN and is not counted)."""
    return _adjusted(p_values, "holm")


def benjamini_hochberg(p_values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Benjamini-Hochberg (1995) q-values (NaN stays NaN and is not counted)."""
    return _adjusted(p_values, "fdr_bh")


@dataclass(frozen=True)
class Power:
    """What an inconclusive result could have found: the smallest effect detectable at `n`
    trials, and the trials needed to detect the observed effect (NaN: cannot be said)."""

    detectable: float
    trials_needed: float


def _quantile(q: float, dof: float) -> float:
    return float(stats.norm.ppf(q) if not math.isfinite(dof) else stats.t.ppf(q, dof))


def _tail(x: float, dof: float) -> float:
    """P(T > x)."""
    return float(stats.norm.sf(x) if not math.isfinite(dof) else stats.t.sf(x, dof))


#: The most trials a power statement looks for; past it the effect is out of reach.
_MOST_TRIALS = 10_000_000


def power(
    estimate: Estimate, *, correlation: bool, alpha: float = ALPHA, power_: float = POWER
) -> Power:
    """The power of `estimate`'s own test (module docstring); `correlation`: the standard
    error is on Fisher's z scale, so effects are given as rho."""
    se, n, dof = estimate.se, estimate.n, estimate.dof
    if not (math.isfinite(se) and se > 0 and n > 0) or dof <= 0:
        return Power(math.nan, math.nan)

    def reach(extra: float) -> float:
        d = dof + extra
        return _quantile(1 - alpha / 2, d) + _quantile(power_, d)

    detectable = reach(0.0) * se
    observed = abs(estimate.value) if math.isfinite(estimate.value) else math.nan
    if correlation:
        detectable = math.tanh(detectable)
        observed = math.atanh(min(observed, 0.999999)) if math.isfinite(observed) else observed
    if not (math.isfinite(observed) and observed > 0):
        return Power(detectable, math.nan)
    # Only the part of the n that the variance scales with grows.
    fixed = 3 + estimate.k if correlation else 0
    scaled = n - fixed

    def enough(trials: int) -> bool:
        grown = trials - n
        return reach(grown) * se * math.sqrt(scaled / (trials - fixed)) <= observed

    if enough(n):
        return Power(detectable, float(n))
    low, high = n, n + 1
    while not enough(high):
        if high > _MOST_TRIALS:
            return Power(detectable, math.inf)
        low, high = high, n + 2 * (high - n)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return Power(detectable, float(high))


def equivalence_p(estimate: Estimate, margin: float, *, correlation: bool) -> float:
    """The two one-sided tests' p-value that `estimate`'s effect lies within +-`margin`
    (module docstring); NaN where the estimate has no standard error."""
    se, value = estimate.se, estimate.value
    if not (math.isfinite(se) and se > 0 and math.isfinite(value)) or estimate.dof <= 0:
        return math.nan
    if correlation:
        value = math.atanh(float(np.clip(value, -0.999999, 0.999999)))
        margin = math.atanh(min(margin, 0.999999))
    lower = _tail((value + margin) / se, estimate.dof)
    upper = _tail((margin - value) / se, estimate.dof)
    return max(lower, upper)


def equivalence_reach(
    estimate: Estimate, *, correlation: bool, alpha: float = ALPHA, power_: float = POWER
) -> float:
    """The smallest margin this estimate's n confirms with probability `power_` when the true
    effect is 0 (module docstring), as rho for a correlation; NaN without a standard error."""
    se, dof = estimate.se, estimate.dof
    if not (math.isfinite(se) and se > 0) or dof <= 0:
        return math.nan
    reach = (_quantile(1 - alpha, dof) + _quantile(1 - (1 - power_) / 2, dof)) * se
    return math.tanh(reach) if correlation else reach
