"""Spearman rank correlations between representation scores and transfer errors.

Dittadi et al. (2021), Sec. 5 and Fig. 4: rank correlation between each disentanglement /
unsupervised metric and each OOD transfer score, across trained models.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

PREDICTOR_PREFIXES = ("metrics.dis/", "metrics.eval/")


def predictor_columns(frame: pd.DataFrame) -> list[str]:
    return sorted(c for c in frame.columns if c.startswith(PREDICTOR_PREFIXES))


def transfer_columns(frame: pd.DataFrame, score: str = "mae") -> list[str]:
    """`transfer/<scenario>/<probe>/<score>` columns (the per-factor ones excluded)."""
    return sorted(
        c
        for c in frame.columns
        if c.startswith("metrics.transfer/") and c.count("/") == 3 and c.endswith(f"/{score}")
    )


def spearman_table(frame: pd.DataFrame, score: str = "mae", min_trials: int = 3) -> pd.DataFrame:
    """Rows: dis/* and eval/* metrics; columns: transfer/*/<score>; cells: Spearman's rho.

    A cell is NaN when fewer than `min_trials` trials have both values or either is constant
    (rho is undefined then, not zero).
    """
    rows = predictor_columns(frame)
    cols = transfer_columns(frame, score)
    table = pd.DataFrame(
        np.nan,
        index=[r.removeprefix("metrics.") for r in rows],
        columns=[c.removeprefix("metrics.") for c in cols],
    )
    for r in rows:
        for c in cols:
            pair = frame[[r, c]].dropna()
            if len(pair) < min_trials or pair[r].nunique() < 2 or pair[c].nunique() < 2:
                continue
            rho = spearmanr(pair[r], pair[c]).statistic
            table.loc[r.removeprefix("metrics."), c.removeprefix("metrics.")] = float(rho)
    return table


def format_table(table: pd.DataFrame) -> str:
    """Transposed for reading in a terminal: one line per transfer score."""
    if table.empty:
        return "(no metric pairs to correlate)"
    shown = table.T.copy()
    shown.columns = [c.removeprefix("dis/") for c in shown.columns]
    return shown.to_string(float_format=lambda v: f"{v:+.2f}", na_rep="  .  ")
