"""Spearman rank correlations between representation scores and transfer errors, with
bootstrap confidence intervals.

Dittadi et al. (2021), Sec. 5 and Figs. 4-5, 13: the rank correlation between each
disentanglement / unsupervised metric and each OOD transfer score, across trained models. The
papers print point estimates; here each comes with a 95% percentile-bootstrap interval over
trials (resampling whole trials, seeded) and the number of trials behind it, and a cell with
too few trials, or a score that does not vary, is blank rather than a number.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.stats import rankdata, spearmanr

from raystudy.analysis.core.cells import CELL, SEPARATOR
from raystudy.analysis.core.columns import (
    HELDOUT_NLL,
    NOISE_X,
    PARAM,
    metric,
    noise_indicator,
    predictor_columns,
    short,
    transfer_columns,
)
from raystudy.analysis.core.groups import Groups
from raystudy.analysis.stats.bootstrap import bootstrap_spearman
from raystudy.analysis.stats.design import design_factors, dummies
from raystudy.analysis.stats.inference import (
    Estimate,
    benjamini_hochberg,
    residuals,
    rho_test,
)
from raystudy.keys import DIS, HELDOUT_SUFFIX

COLUMNS = [
    "x",
    "y",
    "group",
    "n",
    "rho",
    "ci_low",
    "ci_high",
    "p_value",
    "q_bh",
    "within_rho",
    "within_ci_low",
    "within_ci_high",
    "within_p",
    "within_q_bh",
    "held_fixed",
]
_FLOATS = [c for c in COLUMNS if c not in ("x", "y", "group", "n", "held_fixed")]


def correlation_table(
    frame: pd.DataFrame,
    x_columns: Sequence[str],
    y_columns: Sequence[str],
    groups: Groups,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    min_trials: int = 5,
    level: float = 0.95,
) -> pd.DataFrame:
    """One row per (x, y, group): n trials with both values, rho and its bootstrap interval,
    its p-value and the table's Benjamini-Hochberg q-value, and the same rho with the design
    factors that vary among those trials held fixed (`raystudy.analysis.stats.design`).

    Each pair uses the trials where both scores exist; pairs with the same such trials share
    their resamples. The resamples of a group depend only on `seed`, the group name and its
    trials, so adding a column or a group changes no other cell.
    """
    rows: list[dict[str, object]] = []
    for group, index in groups:
        sub = frame.loc[index]
        x = sub[list(x_columns)].to_numpy(dtype=np.float64, na_value=np.nan)
        y = sub[list(y_columns)].to_numpy(dtype=np.float64, na_value=np.nan)
        results = _group_cells(x, y, group, n_boot, seed, min_trials, level)
        within = _within_cells(sub, x, y, x_columns, results)
        for (j, k), (n, rho, low, high) in sorted(results.items()):
            held, estimate = within.get((j, k), ("", Estimate.missing(n)))
            rows.append(
                {
                    "x": short(x_columns[j]),
                    "y": short(y_columns[k]),
                    "group": group,
                    "n": n,
                    "rho": rho,
                    "ci_low": low,
                    "ci_high": high,
                    "p_value": rho_test(rho, n).p_value if n >= min_trials else np.nan,
                    "within_rho": estimate.value,
                    "within_ci_low": estimate.ci_low,
                    "within_ci_high": estimate.ci_high,
                    "within_p": estimate.p_value,
                    "held_fixed": held,
                }
            )
    table = pd.DataFrame(rows, columns=COLUMNS)
    return with_q_values(table.astype({"n": "int64", **dict.fromkeys(_FLOATS, "float64")}))


def with_q_values(table: pd.DataFrame) -> pd.DataFrame:
    """`q_bh` and `within_q_bh`: Benjamini-Hochberg q-values over every row of `table` (one
    family: a table of many pairs tested at once)."""
    return table.assign(
        q_bh=benjamini_hochberg(table["p_value"].to_numpy(dtype=np.float64)),
        within_q_bh=benjamini_hochberg(table["within_p"].to_numpy(dtype=np.float64)),
    )


def _group_cells(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    group: str,
    n_boot: int,
    seed: int,
    min_trials: int,
    level: float,
) -> dict[tuple[int, int], tuple[int, float, float, float]]:
    """(x index, y index) -> (n, rho, low, high) for one group's rows."""
    present_x, present_y = np.isfinite(x), np.isfinite(y)
    by_rows: dict[bytes, list[tuple[int, int]]] = {}
    for j in range(x.shape[1]):
        for k in range(y.shape[1]):
            both = present_x[:, j] & present_y[:, k]
            by_rows.setdefault(np.packbits(both).tobytes() + bytes([both.size % 8]), []).append(
                (j, k)
            )
    out: dict[tuple[int, int], tuple[int, float, float, float]] = {}
    blank = (np.nan, np.nan, np.nan)
    for key, pairs in by_rows.items():
        j0, k0 = pairs[0]
        rows = present_x[:, j0] & present_y[:, k0]
        n = int(rows.sum())
        if n < min_trials:
            out.update({pair: (n, *blank) for pair in pairs})
            continue
        xs = sorted({j for j, _ in pairs})
        ys = sorted({k for _, k in pairs})
        rng = np.random.default_rng([seed, zlib.crc32(group.encode()), zlib.crc32(key)])
        rho, low, high = bootstrap_spearman(
            x[rows][:, xs], y[rows][:, ys], n_boot=n_boot, rng=rng, level=level
        )
        for j, k in pairs:
            a, b = xs.index(j), ys.index(k)
            out[(j, k)] = (n, float(rho[a, b]), float(low[a, b]), float(high[a, b]))
    return out


def _within_cells(
    sub: pd.DataFrame,
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    x_columns: Sequence[str],
    results: dict[tuple[int, int], tuple[int, float, float, float]],
) -> dict[tuple[int, int], tuple[str, Estimate]]:
    """(x index, y index) -> (factors held fixed, partial rho) for each answered cell: the
    design dummies are built, and the ranks of every column residualised on them, once per
    set of trials (x's own parameter is never held fixed: a key of its own)."""
    present_x, present_y = np.isfinite(x), np.isfinite(y)
    batches: dict[tuple[bytes, str], list[tuple[int, int]]] = {}
    for (j, k), (_, rho, _, _) in results.items():
        if not np.isfinite(rho):
            continue
        rows = present_x[:, j] & present_y[:, k]
        own = PARAM + short(x_columns[j])
        key = (np.packbits(rows).tobytes() + bytes([rows.size % 8]), own)
        batches.setdefault(key, []).append((j, k))
    out: dict[tuple[int, int], tuple[str, Estimate]] = {}
    for (_, own), pairs in batches.items():
        j0, k0 = pairs[0]
        rows = present_x[:, j0] & present_y[:, k0]
        trials = sub[rows]
        covariates, held = dummies(trials, [f for f in design_factors(trials) if f != own])
        xs = sorted({j for j, _ in pairs})
        ys = sorted({k for _, k in pairs})
        rx = _rank_residuals(x[rows][:, xs], covariates)
        ry = _rank_residuals(y[rows][:, ys], covariates)
        n, dof = int(rows.sum()), covariates.shape[1]
        for j, k in pairs:
            a, b = rx[:, xs.index(j)], ry[:, ys.index(k)]
            scale = float(np.sqrt((a @ a) * (b @ b)))
            if scale <= 1e-12 * max(1, n) ** 2:  # a rank the design explains entirely
                estimate = Estimate.missing(n, dof)
            else:
                estimate = rho_test(float(a @ b) / scale, n, dof)
            out[(j, k)] = (", ".join(held), estimate)
    return out


def _rank_residuals(
    columns: NDArray[np.float64], covariates: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Each column's average ranks minus their least-squares fit on an intercept and the
    covariates (`inference.partial_spearman`, for many columns at once)."""
    ranks = np.column_stack([rankdata(columns[:, c]) for c in range(columns.shape[1])])
    return residuals(ranks.astype(np.float64), covariates)


def heldout_nll_targets(frame: pd.DataFrame) -> pd.DataFrame:
    """The held-out reconstruction NLL (Montero et al. 2021) as correlation targets: one
    column per cell (`eval/recon_heldout@<cell>`, empty outside it) when the table has a
    `cell` column (`raystudy.analysis.core.cells`), else the one column; none when not logged.

    Each split holds out its own combinations, so NLLs of two splits are never pooled (the
    same reason transfer scores are split by cell)."""
    column = metric(HELDOUT_NLL)
    if column not in frame.columns or frame[column].isna().all():
        return pd.DataFrame(index=frame.index)
    if CELL not in frame.columns:
        return frame[[column]]
    pieces = {
        f"{column}{SEPARATOR}{cell}": frame[column].where(frame[CELL] == cell)
        for cell in sorted(frame[CELL].dropna().unique())
    }
    return pd.DataFrame({k: v for k, v in pieces.items() if v.notna().any()}, index=frame.index)


def transfer_correlations(
    frame: pd.DataFrame, groups: Groups, *, n_boot: int = 1000, seed: int = 0, min_trials: int = 5
) -> pd.DataFrame:
    """The table of `correlations.csv`: every predictor (`dis/*`, `eval/*`, `down/*`, and
    input noise as 0/1 when it varies: Dittadi et al. 2021, Fig. 6 top row) against every
    aggregate transfer score (`transfer/<scenario>/<probe>/mae` and `r2`), then against the
    held-out reconstruction NLL per cell (Montero et al. 2021), the held-out scores
    themselves left out of that second x set (an NLL against itself says nothing)."""
    extra = pd.DataFrame(index=frame.index)
    noise = noise_indicator(frame)
    if noise is not None:
        extra[NOISE_X] = noise
    nll = heldout_nll_targets(frame)
    scores = pd.concat([frame, extra, nll.drop(columns=frame.columns, errors="ignore")], axis=1)
    x = predictor_columns(frame) + list(extra.columns)
    options = {"n_boot": n_boot, "seed": seed, "min_trials": min_trials}
    table = correlation_table(scores, x, transfer_columns(frame), groups, **options)
    if nll.columns.empty:
        return table
    unheld = [c for c in x if not c.endswith(HELDOUT_SUFFIX)]
    reconstruction = correlation_table(scores, unheld, list(nll.columns), groups, **options)
    return with_q_values(pd.concat([table, reconstruction], ignore_index=True))


def pivot(table: pd.DataFrame, group: str = "all", value: str = "rho") -> pd.DataFrame:
    """Rows x, columns y, for one group (in the table's order)."""
    sub = table[table["group"] == group]
    wide = sub.pivot(index="x", columns="y", values=value)
    wide = wide.reindex(index=pd.unique(sub["x"]), columns=pd.unique(sub["y"]))
    return wide.rename_axis(index=None, columns=None)


def spearman_table(frame: pd.DataFrame, score: str = "mae", min_trials: int = 3) -> pd.DataFrame:
    """Rows: dis/*, eval/* and down/* metrics; columns: transfer/*/<score>; cells: rho.

    A cell is NaN when fewer than `min_trials` trials have both values or either is constant
    (rho is undefined then, not zero). No intervals: see `correlation_table` for those.
    """
    rows = predictor_columns(frame)
    cols = transfer_columns(frame, (score,))
    table = pd.DataFrame(np.nan, index=[short(r) for r in rows], columns=[short(c) for c in cols])
    for r in rows:
        for c in cols:
            pair = frame[[r, c]].dropna()
            if len(pair) < min_trials or pair[r].nunique() < 2 or pair[c].nunique() < 2:
                continue
            table.loc[short(r), short(c)] = float(spearmanr(pair[r], pair[c]).statistic)
    return table


def format_table(table: pd.DataFrame) -> str:
    """Transposed for reading in a terminal: one line per transfer score."""
    if table.empty:
        return "(no metric pairs to correlate)"
    shown = table.T.copy()
    shown.columns = [c.removeprefix(DIS) for c in shown.columns]
    return shown.to_string(float_format=lambda v: f"{v:+.2f}", na_rep="  .  ")
