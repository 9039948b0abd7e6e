"""Do the disentanglement metrics agree, and does the objective matter more than the seed?
Locatello et al. (2019), Sec. 5.2-5.3: the rank correlation between the six metrics' headline
scores over every trained model (their Fig. 2), and each metric's spread within and between
objectives (their Figs. 3-4: random seeds and hyperparameters move a score more than the
choice of objective does)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from raystudy.analysis.core.columns import OBJECTIVE, metric, short
from raystudy.analysis.core.groups import Groups
from raystudy.analysis.tables.correlations import correlation_table
from raystudy.keys import metric_key

#: One score per metric, as Locatello et al. compare them; DCI's completeness and
#: informativeness, and the metrics' training-set diagnostics, are other quantities.
HEADLINE = tuple(
    metric_key("dis", score)
    for score in ("beta_vae", "factor_vae", "mig", "dci_d", "dci_lasso_d", "modularity", "sap")
)

#: The columns of `objective_spread` (`metric_agreement.csv` has correlation_table's).
SPREAD_COLUMNS = [
    "metric",
    "objectives",
    "trials",
    "between_sd",
    "within_sd",
    "best_objective",
    "best_beaten_by",
]


def headline_columns(frame: pd.DataFrame) -> list[str]:
    """The headline `dis/*` columns the table holds values of, in Locatello et al.'s order."""
    columns = [metric(name) for name in HEADLINE]
    return [c for c in columns if c in frame.columns and frame[c].notna().any()]


def metric_agreement(
    frame: pd.DataFrame, groups: Groups, *, n_boot: int = 1000, seed: int = 0, min_trials: int = 5
) -> pd.DataFrame:
    """Spearman rho of every headline metric with every other, per group, with bootstrap
    intervals (`metric_agreement.csv`); empty when fewer than two metrics were logged.

    Locatello et al. (2019), Fig. 2: rank correlation of the metrics over all models."""
    columns = headline_columns(frame)
    if len(columns) < 2:
        return correlation_table(frame, [], [], [])
    return correlation_table(
        frame, columns, columns, groups, n_boot=n_boot, seed=seed, min_trials=min_trials
    )


def objective_spread(frame: pd.DataFrame) -> pd.DataFrame:
    """Per headline metric: the standard deviation of the objectives' mean scores (between)
    beside the pooled standard deviation of trials around their objective's mean (within:
    seeds and hyperparameters), and how many trials of other objectives beat the best
    objective's median trial.

    Locatello et al. (2019), Sec. 5.3: within_sd >= between_sd is their finding that the
    objective matters less than random seeds and hyperparameters. Empty with one objective."""
    if OBJECTIVE not in frame.columns or frame[OBJECTIVE].nunique() < 2:
        return pd.DataFrame(columns=SPREAD_COLUMNS)
    rows = []
    for column in headline_columns(frame):
        # An infinite score (logged as +-inf) is left out like a missing one.
        scores = frame[[OBJECTIVE, column]].replace([np.inf, -np.inf], np.nan).dropna()
        by = scores.groupby(OBJECTIVE)[column]
        if by.ngroups < 2:
            continue
        means = by.mean()
        residual = scores[column] - by.transform("mean")
        dof = len(scores) - by.ngroups
        within = float(np.sqrt((residual**2).sum() / dof)) if dof > 0 else float("nan")
        best = str(means.idxmax())
        median = by.median()[best]
        others = scores.loc[scores[OBJECTIVE] != best, column]
        rows.append(
            {
                "metric": short(column),
                "objectives": by.ngroups,
                "trials": len(scores),
                "between_sd": float(means.std(ddof=1)),
                "within_sd": within,
                "best_objective": best,
                "best_beaten_by": f"{int((others > median).sum())}/{len(others)}",
            }
        )
    return pd.DataFrame(rows, columns=SPREAD_COLUMNS)
