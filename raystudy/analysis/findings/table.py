"""The Findings table (`findings.csv`): every paper's questions the study can answer, one row
each, each naming the claim it tests (`raystudy.analysis.claims`). The questions and their
statistics are in `dittadi`, `montero2021`, `montero2022`, `schott` and `locatello`; what they
share (paired tests, rows read from the correlation tables) in `shared`; the claims answered
as a whole in `claims`.

Every Finding is also computed with the study's design held fixed (the grid axes that vary
among its trials, `raystudy.analysis.stats.design`), its p-values are adjusted (Holm) within
its family (a paper's primary claims, or the rest of its rows), and what was measured and its
agreement with the paper are read from the adjusted numbers (`rows.measured`,
`rows.agreement`):

- measured `> 0` / `< 0`: the adjusted p-value of the statistic with the design held fixed is
  below 0.05, that sign (where nothing varies to hold fixed, the pooled statistic is that
  statistic); `~ 0`: a claim of no effect's two one-sided tests place it within the margin;
- `pooled only`, agreement "confounded": the pooled statistic is significant after adjustment
  but the one with the design held fixed is not (or cannot be computed): a design factor,
  named in `carried_by`, moves both scores, and the study cannot separate the effect from it;
- `undetermined`, agreement "inconclusive": neither; the row then says what effect this n
  could have detected and how many more seeds the observed one would need, from the same
  test (`raystudy.analysis.stats.inference.power`, at the Bonferroni level 0.05 / m of its
  family, the strictest step of Holm's procedure).
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from raystudy.analysis.findings.dittadi import disentanglement_metric, dittadi_rows
from raystudy.analysis.findings.locatello import locatello_rows
from raystudy.analysis.findings.montero2021 import montero2021_rows
from raystudy.analysis.findings.montero2022 import montero2022_rows
from raystudy.analysis.findings.orderings import ordering_rows
from raystudy.analysis.findings.rows import adjusted_family, order_findings
from raystudy.analysis.findings.schott import schott_rows
from raystudy.analysis.findings.shared import PaperTables


def findings_table(
    frame: pd.DataFrame,
    correlations: pd.DataFrame,
    proxy_correlations: pd.DataFrame,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    min_trials: int = 5,
    extra_rows: Iterable[dict[str, object]] = (),
) -> pd.DataFrame:
    """One row per question the study can answer (the table of `findings.csv`), adjusted
    within its family and with its agreement: Dittadi et al.'s questions (`dittadi_rows`), then
    `extra_rows`, other papers' questions (`paper_rows`).

    `frame`: the finished trials with a `supervision` column (as `compute` analyses them);
    `correlations` and `proxy_correlations`: `transfer_correlations` and the ELBO /
    reconstruction vs disentanglement table of the same trials.
    """
    options = {"n_boot": n_boot, "seed": seed, "min_trials": min_trials}
    rows = dittadi_rows(frame, correlations, proxy_correlations, **options)
    # Each paper's rows together (the orderings are asked after the papers' own questions).
    return order_findings(adjusted_family([*rows, *extra_rows]), "")


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
    with a bootstrap interval (Locatello et al.'s share of variance, `locatello`)."""
    least = max(int(min_trials), 2)
    dis = disentanglement_metric(frame)
    return [
        *montero2021_rows(frame, correlations, tables, min_trials=least),
        *montero2022_rows(frame, tables, min_trials=least),
        *schott_rows(frame, tables, min_trials=least),
        *locatello_rows(frame, tables, min_trials=least, n_boot=n_boot, seed=seed),
        *ordering_rows(frame, dis, min_trials=least, n_boot=n_boot, seed=seed),
    ]
