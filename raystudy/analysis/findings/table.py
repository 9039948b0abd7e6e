"""The Findings table (`findings.csv`): every paper's questions the study can answer, one row
each, adjusted as one family. The questions, their statistics and the papers' answers are in
`dittadi`, `montero2021`, `montero2022`, `schott` and `locatello`; what they share (paired
tests, rows read from the correlation tables) in `shared`.

Every Finding is also computed with the study's design held fixed (the grid axes that vary
among its trials, `raystudy.analysis.stats.design`), its p-values are adjusted over the family
(Holm), and its verdict (`rows.VERDICTS`) is read from the adjusted numbers:

- "yes" / "no": the adjusted p-value of the statistic with the design held fixed is below
  0.05, in the direction the question asks / the other way (where nothing varies to hold
  fixed, the pooled statistic is that statistic);
- "confounded": the pooled statistic is significant after adjustment but the one with the
  design held fixed is not (or cannot be computed): a design factor, named in `carried_by`,
  moves both scores, and the study cannot separate the effect from it;
- "inconclusive": neither; the row then says what effect this n could have detected and how
  many more seeds the observed one would need (`raystudy.analysis.stats.inference.power`, at the
  Bonferroni level 0.05 / m, the strictest step of Holm's procedure).

"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from raystudy.analysis.findings.dittadi import dittadi_rows
from raystudy.analysis.findings.locatello import locatello_rows
from raystudy.analysis.findings.montero2021 import montero2021_rows
from raystudy.analysis.findings.montero2022 import montero2022_rows
from raystudy.analysis.findings.rows import adjusted_family
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
    """One row per question the study can answer (the table of `findings.csv`), adjusted as
    one family and with its verdicts: Dittadi et al.'s questions (`dittadi_rows`), then
    `extra_rows`, other papers' questions (`paper_rows`).

    `frame`: the finished trials with a `supervision` column (as `compute` analyses them);
    `correlations` and `proxy_correlations`: `transfer_correlations` and the ELBO /
    reconstruction vs disentanglement table of the same trials.
    """
    options = {"n_boot": n_boot, "seed": seed, "min_trials": min_trials}
    rows = dittadi_rows(frame, correlations, proxy_correlations, **options)
    return adjusted_family([*rows, *extra_rows])


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
    return [
        *montero2021_rows(frame, correlations, tables, min_trials=least),
        *montero2022_rows(frame, tables, min_trials=least),
        *schott_rows(frame, tables, min_trials=least),
        *locatello_rows(frame, tables, min_trials=least, n_boot=n_boot, seed=seed),
    ]
