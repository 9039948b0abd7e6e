"""Montero et al. (ICLR 2021)'s Table 1 from a study's composition trials: per condition
(split) and dataset, D and the composition task's NLL on training and on held-out triples
(`raystudy.metrics.composition`), seed means, beside the paper's numbers, as
`composition.csv`.

The paper's D is DCI disentanglement with Lasso importances (its App. A), `dis/dci_lasso_d`;
a study that did not log it falls back to the GBT DCI, `dis/dci_d`, and the table's `D_metric`
says which. The paper's values are for dSprites; other datasets get none. They are printed
for comparison, not as a target: the paper gives no seed count or spread.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from raystudy.analysis.core.cells import DATASET
from raystudy.analysis.core.columns import (
    COMPOSITION_HELDOUT_NLL,
    COMPOSITION_NLL,
    GBT_D,
    LASSO_D,
    SPLIT,
    metric,
)

#: Table 1 of Montero et al. (2021), dSprites: split -> (D, NLL training, NLL testing).
PAPER_TABLE1 = {
    "montero_extrapolation": (0.82, 31.73, 19138.82),
    "montero_range": (0.71, 50.10, 346.10),
    "montero_element": (0.96, 36.57, 13.74),
}
PAPER_DATASETS = ("dsprites", "dsprites_file")
KEYS = ["condition", "dataset"]
COLUMNS = [
    *KEYS,
    "n",
    "D_metric",
    "D",
    "nll_train",
    "nll_heldout",
    "nll_heldout_std",
    "paper_D",
    "paper_nll_train",
    "paper_nll_heldout",
]


def _d_column(frame: pd.DataFrame) -> str | None:
    for name in (LASSO_D, GBT_D):
        col = metric(name)
        if col in frame.columns and frame[col].notna().any():
            return name
    return None


def composition_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per condition and dataset of the finished runs that logged the composition
    NLL: n runs, seed means of D and both NLLs, the held-out NLL's seed std (ddof 1), and
    the paper's Table 1 values where it has them. Empty (with its columns) when no run
    logged the task."""
    train = metric(COMPOSITION_NLL)
    if train not in frame.columns or frame[train].isna().all():
        return pd.DataFrame(columns=COLUMNS)
    runs = frame[frame[train].notna()]
    d_name = _d_column(runs)
    heldout = metric(COMPOSITION_HELDOUT_NLL)
    values = pd.DataFrame(
        {
            "D": runs[metric(d_name)] if d_name else np.nan,
            "nll_train": runs[train],
            "nll_heldout": runs[heldout] if heldout in runs.columns else np.nan,
        },
        index=runs.index,
        dtype="float64",
    )
    values["condition"] = runs[SPLIT].astype(str) if SPLIT in runs.columns else ""
    values["dataset"] = runs[DATASET].astype(str) if DATASET in runs.columns else ""
    grouped = values.groupby(KEYS, sort=True)
    table = grouped[["D", "nll_train", "nll_heldout"]].mean()
    table.insert(0, "n", grouped.size())
    table.insert(1, "D_metric", d_name or "")
    table["nll_heldout_std"] = grouped["nll_heldout"].std()
    table = table.reset_index()
    paper = [
        PAPER_TABLE1.get(c, (np.nan,) * 3) if d in PAPER_DATASETS else (np.nan,) * 3
        for c, d in zip(table["condition"], table["dataset"], strict=True)
    ]
    table[["paper_D", "paper_nll_train", "paper_nll_heldout"]] = pd.DataFrame(
        paper, index=table.index, dtype="float64"
    )
    return table[COLUMNS]
