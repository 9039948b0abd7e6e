"""Locatello et al.'s questions as Findings rows ("Challenging common assumptions in the
unsupervised learning of disentangled representations", ICML 2019).

The paper studies unsupervised models: where a study has others (weakly supervised, reference
or external encoders), both questions are asked of its unsupervised trials only
(`supervision=unsupervised`).

- `METRICS_AGREE`, per pair of headline metrics (`agreement.HEADLINE`, in that order): their
  Spearman rho over the trials, read from metric_agreement.csv (Sec. 5.2, Fig. 2), with the
  same rho with the design (objective, hyperparameters) held fixed; yes_if '> 0'.
- The variance of each metric of objective_spread.csv (Sec. 5.3, Figs. 3-4), decomposed by
  sequential (type I) sums of squares of nested OLS fits on cell dummies, computed as group
  means: within each stratum s (the trials' dataset and split, `shared.where_labels`),
  RSS_0 = sum (y - mean_s)^2, RSS_1 = sum (y - mean_{s, objective})^2 and RSS_2 =
  sum (y - mean_{s, model})^2, a model being an objective with its hyperparameter values
  (`groups.model_labels`); the shares of RSS_0 are objective (RSS_0 - RSS_1) / RSS_0,
  hyperparameters (RSS_1 - RSS_2) / RSS_0 and seed RSS_2 / RSS_0 (the residual: trials of one
  model differ only in seed). Rows:
  - `OBJECTIVE_SHARE` and `HYPERPARAMETER_SHARE`: the share, its p-value the F-test of its
    block, F = (SS_block / df_block) / (RSS_2 / (n - models)) on (df_block, n - models)
    degrees of freedom (df_objective = objective cells - strata, df_hyperparameters = model
    cells - objective cells); yes_if '> 0';
  - `SEED_AND_HYPERPARAMETERS_OUTWEIGH`: (hyperparameter + seed share) - objective share,
    i.e. 1 - 2 x objective share; yes_if '> 0'; its p-value the bootstrap test that inverts
    its interval (`_bootstrap_p`).
  The value, interval and standard error of all three come from `n_boot` resamples of the
  trials within each model cell (the design kept, the seeds redrawn), seeded by `seed` and the
  metric: each share corrected for the bias that the seeds' noise gives the blocks' sums of
  squares, with its basic bootstrap interval (`_interval`), which can hold 0; the three
  corrected shares still sum to 1.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from raystudy.analysis.core.columns import LASSO_D, OBJECTIVE, metric
from raystudy.analysis.core.groups import SUPERVISION, model_labels
from raystudy.analysis.findings.rows import finding_row
from raystudy.analysis.findings.shared import (
    PaperTables,
    numbers,
    rho_estimates,
    seed_count,
    where_labels,
)
from raystudy.analysis.stats.bootstrap import in_chunks
from raystudy.analysis.stats.design import adjusted_spearman
from raystudy.analysis.stats.inference import ALPHA, Estimate
from raystudy.analysis.tables.agreement import HEADLINE
from raystudy.keys import metric_key

LOCATELLO2019 = "locatello2019"
METRICS_AGREE = "metrics_agree"
OBJECTIVE_SHARE = "objective_explains_variance"
HYPERPARAMETER_SHARE = "hyperparameters_explain_variance"
SEED_AND_HYPERPARAMETERS_OUTWEIGH = "seed_and_hyperparameters_outweigh_objective"

_L = "Locatello et al. 2019"
_NO_NUMBER = "no number quoted here"
PAPER_AGREE = f"yes: all metrics but Modularity correlate ({_L}, Sec. 5.2, Fig. 2); {_NO_NUMBER}"
PAPER_MODULARITY = (
    f"less: Modularity stands apart from the other metrics ({_L}, Sec. 5.2, Fig. 2); {_NO_NUMBER}"
)
PAPER_SAP = (
    "less than the others: Dittadi et al. (2021, Sec. 3) cite the paper for SAP and Modularity"
    f" capturing disentanglement poorly ({_L}, Sec. 5.2, Fig. 2); {_NO_NUMBER}"
)
PAPER_LASSO = (
    f"the paper has no Lasso DCI (Montero et al. 2021's D); its metrics but Modularity correlate"
    f" ({_L}, Sec. 5.2, Fig. 2)"
)
PAPER_OBJECTIVE = (
    f"the paper reports no number ({_NO_NUMBER}); it says the objective matters less than the"
    f" random seed and the hyperparameters, not that it explains nothing ({_L}, Sec. 5.3,"
    " Figs. 3-4)"
)
PAPER_HYPERPARAMETERS = (
    f"yes: the scores depend heavily on the regularisation strength ({_L}, Sec. 5.3,"
    f" Figs. 3-4); {_NO_NUMBER}"
)
PAPER_OUTWEIGH = (
    "yes: the random seed and the hyperparameters matter more than the choice of objective"
    f" ({_L}, Sec. 5.3, Figs. 3-4); {_NO_NUMBER}"
)
#: The questions of each metric's variance: (statistic, what x says, the paper's answer) ...
_SHARE_QUESTIONS = {
    OBJECTIVE_SHARE: ("share", "objective", PAPER_OBJECTIVE),
    HYPERPARAMETER_SHARE: (
        "share",
        "hyperparameters (models within an objective)",
        PAPER_HYPERPARAMETERS,
    ),
    SEED_AND_HYPERPARAMETERS_OUTWEIGH: (
        "share_difference",
        "seed + hyperparameter shares - objective share",
        PAPER_OUTWEIGH,
    ),
}
#: ... and each asked of a metric.
_SHARE_TEXTS = {
    OBJECTIVE_SHARE: "Does the choice of objective explain part of {}'s variance?",
    HYPERPARAMETER_SHARE: (
        "Do the hyperparameters explain part of {}'s variance beyond the objective?"
    ),
    SEED_AND_HYPERPARAMETERS_OUTWEIGH: (
        "Do the random seed and the hyperparameters together explain more of {}'s variance than"
        " the objective?"
    ),
}
#: Resampled values held at once: bounds the bootstrap's memory (~32 MB of floats).
_MAX_DRAWS = 4_000_000


def locatello_rows(
    frame: pd.DataFrame, tables: PaperTables, *, min_trials: int, n_boot: int, seed: int
) -> list[dict[str, object]]:
    """Locatello et al. 2019's questions (module docstring) that the tables can answer."""
    return [
        *_agreement_rows(frame, tables.agreement, min_trials=min_trials),
        *_variance_rows(frame, tables.spread, min_trials=min_trials, n_boot=n_boot, seed=seed),
    ]


def _unsupervised(frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The trials the paper's questions are asked of and their group's name in the tables:
    all of them when every one is unsupervised, else the unsupervised ones."""
    if SUPERVISION not in frame.columns or (frame[SUPERVISION] == "unsupervised").all():
        return frame, "all"
    return frame[frame[SUPERVISION] == "unsupervised"], f"{SUPERVISION}=unsupervised"


#: The claims the variance rows test; the objective's own share is none of the paper's claims
#: (it says the objective matters less than seed and hyperparameters, not that it explains
#: nothing).
_SHARE_CLAIMS = {
    HYPERPARAMETER_SHARE: "locatello2019.hyperparameters_matter",
    SEED_AND_HYPERPARAMETERS_OUTWEIGH: "locatello2019.seed_and_hyperparameters_outweigh",
}


def _agreement_claim(x: str, y: str) -> str | None:
    """The claim a pair of metrics tests: metrics_agree for two of the paper's metrics that are
    neither Modularity nor SAP (its words set those apart); none for a pair with the Lasso DCI,
    which the paper does not have."""
    pair = {x, y}
    if pair & {metric_key("dis", "modularity"), metric_key("dis", "sap"), LASSO_D}:
        return None
    return "locatello2019.metrics_agree"


def _paper_agreement(x: str, y: str) -> str:
    pair = {x, y}
    if metric_key("dis", "modularity") in pair:
        return PAPER_MODULARITY
    if metric_key("dis", "sap") in pair:
        return PAPER_SAP
    return PAPER_LASSO if LASSO_D in pair else PAPER_AGREE


def _agreement_rows(frame: pd.DataFrame, table: pd.DataFrame, *, min_trials: int) -> Iterator[dict]:
    """rho of each pair of headline metrics over all trials, from metric_agreement.csv."""
    if table.empty:
        return
    trials, group = _unsupervised(frame)
    order = {name: i for i, name in enumerate(HEADLINE)}
    rows = table[table["group"] == group]
    first = [
        order.get(x, math.inf) < order.get(y, math.inf)
        for x, y in zip(rows["x"], rows["y"], strict=True)
    ]
    rows = rows[np.asarray(first, dtype=bool)]
    rows = rows[np.isfinite(rows["rho"].astype("float64")) & (rows["n"] >= min_trials)]
    for _, row in rows.iterrows():
        x, y = metric(row["x"]), metric(row["y"])
        pooled, within = rho_estimates(row, adjusted_spearman(trials, x, y))
        both = np.isfinite(numbers(trials, x)) & np.isfinite(numbers(trials, y))
        yield finding_row(
            LOCATELLO2019,
            METRICS_AGREE,
            f"Do {row['x']} and {row['y']} rank the models alike?",
            "rho",
            "> 0",
            "" if _agreement_claim(row["x"], row["y"]) else _paper_agreement(row["x"], row["y"]),
            x=row["x"],
            y=row["y"],
            group=group,
            pooled=pooled,
            within=within,
            n_seeds=seed_count(trials[both]),
            claim_id=_agreement_claim(row["x"], row["y"]),
        )


def _codes(labels: pd.Series) -> tuple[NDArray[np.intp], int]:
    codes, uniques = pd.factorize(labels.astype(str), sort=True)
    return codes.astype(np.intp), len(uniques)


def _rss(values: NDArray[np.float64], codes: NDArray[np.intp], groups: int) -> NDArray[np.float64]:
    """Residual sums of squares about the group means, per row of `values` (B, n): the sum of
    squares minus each group's squared sum over its count."""
    counts = np.bincount(codes, minlength=groups).astype(np.float64)
    onehot = np.zeros((codes.size, groups))
    onehot[np.arange(codes.size), codes] = 1.0
    sums = values @ onehot
    with np.errstate(invalid="ignore", divide="ignore"):
        explained = np.where(counts > 0, sums**2 / counts, 0.0).sum(axis=1)
    return np.maximum((values**2).sum(axis=1) - explained, 0.0)


@dataclass(frozen=True)
class _Shares:
    """The sequential shares (objective, hyperparameters, seed) of B resamples or of one."""

    objective: NDArray[np.float64]
    hyperparameters: NDArray[np.float64]
    seed: NDArray[np.float64]


def _shares(values: NDArray[np.float64], codes: list[tuple[NDArray[np.intp], int]]) -> _Shares:
    # Centred first: the sums-of-squares identity then loses no precision to a large mean.
    centred = values - values.mean(axis=1, keepdims=True)
    rss0, rss1, rss2 = (_rss(centred, c, g) for c, g in codes)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(rss0 > 0, rss0, np.nan)
        return _Shares((rss0 - rss1) / total, (rss1 - rss2) / total, rss2 / total)


def _bootstrap(
    values: NDArray[np.float64],
    codes: list[tuple[NDArray[np.intp], int]],
    n_boot: int,
    rng: np.random.Generator,
) -> _Shares:
    """Shares of `n_boot` resamples, each trial drawn again from its own model cell (the last
    of `codes`), so every cell keeps its count and the design its degrees of freedom."""
    cells, n_cells = codes[-1]
    members = [np.flatnonzero(cells == c) for c in range(n_cells)]

    def draw(size: int) -> NDArray[np.float64]:
        index = np.empty((size, values.size), dtype=np.intp)
        for rows in members:
            index[:, rows] = rows[rng.integers(0, rows.size, (size, rows.size))]
        shares = _shares(values[index], codes)
        return np.column_stack([getattr(shares, f.name) for f in fields(_Shares)])

    boot = in_chunks(n_boot, max(1, _MAX_DRAWS // max(1, values.size)), draw)
    return _Shares(*boot.T)


def _interval(point: float, boot: NDArray[np.float64], p_value: float, n: int) -> Estimate:
    """`point` corrected for its bias, 2 point - mean(v*), with the basic (reverse percentile)
    bootstrap interval [2 point - q_hi, 2 point - q_lo] and the resamples' sd as its se
    (bias: Efron & Tibshirani 1993, Ch. 10; basic interval:
    Davison & Hinkley 1997, Sec. 5.2). A resample redraws the seeds of each model
    cell, which adds their noise to the cell means again, so the resampled shares of the
    objective and the hyperparameters sit above the sample's by about what the sample's sit
    above the design's own (each block's sums of squares hold its degrees of freedom times the
    seed variance): the shift estimates that bias, and the percentile interval, shifted the
    other way, becomes the basic one, which for a share can hold 0. Without resamples, the
    uncorrected share and no interval."""
    valid = boot[np.isfinite(boot)]
    if valid.size < 2:
        return Estimate(point, math.nan, math.nan, p_value, math.nan, n, 0)
    tail = ALPHA / 2 * 100
    low, high = np.percentile(valid, [tail, 100 - tail])
    return Estimate(
        2 * point - float(valid.mean()),
        2 * point - float(high),
        2 * point - float(low),
        p_value,
        float(valid.std(ddof=1)),
        n,
        0,
    )


def _bootstrap_p(point: float, boot: NDArray[np.float64]) -> float:
    """The two-sided p-value that inverts the basic interval: the smallest level at which it
    excludes 0, 2 min(#{v* >= 2 v}, #{v* <= 2 v}) / B, with +1 in numerator and denominator."""
    valid = boot[np.isfinite(boot)]
    if valid.size == 0:
        return math.nan
    tail = min(int((valid >= 2 * point).sum()), int((valid <= 2 * point).sum()))
    return min(1.0, 2.0 * (tail + 1) / (valid.size + 1))


def _f_test(share: float, df: int, seed_share: float, df_seed: int) -> float:
    """p of the F-test of a block: F = (share / df) / (seed share / df_seed), the residual's
    (the seed's) degrees of freedom df_seed; 0 when the seeds leave no variance at all."""
    if seed_share == 0:
        return 0.0 if share > 0 else math.nan
    return float(stats.f.sf((share / df) / (seed_share / df_seed), df, df_seed))


def _variance_rows(
    frame: pd.DataFrame, spread: pd.DataFrame, *, min_trials: int, n_boot: int, seed: int
) -> Iterator[dict]:
    """Objective, hyperparameter and seed shares of each metric's variance (docstring)."""
    if spread.empty or OBJECTIVE not in frame.columns:
        return
    frame, group = _unsupervised(frame)
    for name in spread["metric"]:
        yield from _share_rows(
            frame, group, str(name), min_trials=min_trials, n_boot=n_boot, seed=seed
        )


def _share_rows(
    frame: pd.DataFrame, group: str, name: str, *, min_trials: int, n_boot: int, seed: int
) -> Iterator[dict]:
    """The share rows of one metric (`name`) over `frame`'s trials, the group `group`."""
    column = metric(name)
    y = numbers(frame, column)
    keep = np.isfinite(y) & frame[OBJECTIVE].notna().to_numpy()
    sub, y = frame[keep], y[keep]
    n = len(sub)
    if n < min_trials:
        return
    strata = where_labels(sub)
    objective = strata + "|" + sub[OBJECTIVE].astype(str)
    models = strata + "|" + model_labels(sub)
    codes = [_codes(strata), _codes(objective), _codes(models)]
    (_, g0), (_, g1), (_, g2) = codes
    df_objective, df_hyper, df_seed = g1 - g0, g2 - g1, n - g2
    point = _shares(y[None, :], codes)
    if df_objective < 1 or df_seed < 1 or not np.isfinite(point.objective[0]):
        return
    rng = np.random.default_rng([seed, zlib.crc32(f"locatello2019:{name}".encode())])
    boot = _bootstrap(y, codes, n_boot, rng) if n_boot > 0 else _Shares(*[np.array([])] * 3)
    objective_share, hyper_share = float(point.objective[0]), float(point.hyperparameters[0])
    seed_share = float(point.seed[0])

    def f_tested(share: float, resampled: NDArray[np.float64], df: int) -> Estimate:
        """A block's share, its p-value the F-test of the block."""
        return _interval(share, resampled, _f_test(share, df, seed_share, df_seed), n)

    n_objectives = int(sub[OBJECTIVE].astype(str).nunique())
    n_models = int(model_labels(sub).nunique())
    common = {
        "y": name,
        "group": group if g0 == 1 else f"{group}, within each of {g0} cells",
        "n_text": f"{n} trials: {n_objectives} objectives, {n_models} models",
        "n_seeds": seed_count(sub),
    }
    pooled = {OBJECTIVE_SHARE: f_tested(objective_share, boot.objective, df_objective)}
    if df_hyper >= 1:
        pooled[HYPERPARAMETER_SHARE] = f_tested(hyper_share, boot.hyperparameters, df_hyper)
    outweigh, boot_outweigh = 1.0 - 2.0 * objective_share, 1.0 - 2.0 * boot.objective
    p_outweigh = _bootstrap_p(outweigh, boot_outweigh)
    pooled[SEED_AND_HYPERPARAMETERS_OUTWEIGH] = _interval(outweigh, boot_outweigh, p_outweigh, n)
    for question, estimate in pooled.items():
        statistic, x, paper = _SHARE_QUESTIONS[question]
        text = _SHARE_TEXTS[question].format(name)
        claimed = _SHARE_CLAIMS.get(question)
        yield finding_row(
            LOCATELLO2019,
            question,
            text,
            statistic,
            "> 0",
            "" if claimed else paper,
            x=x,
            pooled=estimate,
            claim_id=claimed,
            **common,
        )
