"""Findings rows for the questions of the papers besides Dittadi et al. (2021): Montero et al.
2021 and 2022, Schott et al. 2022 and Locatello et al. 2019. The questions, their statistics
and the papers' answers are in `findings_montero`, `findings_schott` and `findings_locatello`;
what they share (paired tests, rows read from the correlation tables) in `findings_shared`.
"""

from __future__ import annotations

import pandas as pd

from raystudy.analysis.findings_locatello import locatello_rows
from raystudy.analysis.findings_montero import montero2021_rows, montero2022_rows
from raystudy.analysis.findings_schott import schott_rows
from raystudy.analysis.findings_shared import PaperTables

__all__ = ["PaperTables", "paper_rows"]


def paper_rows(
    frame: pd.DataFrame,
    correlations: pd.DataFrame,
    tables: PaperTables,
    *,
    min_trials: int,
    n_boot: int = 1000,
    seed: int = 0,
) -> list[dict[str, object]]:
    """The rows (`finding_row` dicts) of every question of Montero et al. 2021 and 2022, Schott
    et al. 2022 and Locatello et al. 2019 that these trials can answer.

    `frame`: the finished trials as `compute` analyses them (`done`: transfer columns split by
    cell, a `supervision` column); `correlations`: `transfer_correlations` of the same trials;
    `tables`: the other tables `compute` builds. `n_boot` and `seed` serve the one statistic
    with a bootstrap interval (Locatello et al.'s share of variance, `findings_locatello`)."""
    least = max(int(min_trials), 2)
    return [
        *montero2021_rows(frame, correlations, tables, min_trials=least),
        *montero2022_rows(frame, tables, min_trials=least),
        *schott_rows(frame, tables, min_trials=least),
        *locatello_rows(frame, tables, min_trials=least, n_boot=n_boot, seed=seed),
    ]
