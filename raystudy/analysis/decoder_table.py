"""Montero et al. (NeurIPS 2022)'s decoder test, per model: the reconstruction NLL of the
held-out combinations before and after the decoder was trained again on the frozen encoder's
codes (`raystudy.training.decoder_retrain`), as `decoder_test.csv` and `decoder_test.png`.

A retrained decoder that renders the held-out combinations much better than the end-to-end
one says the decoder had failed and the codes were enough; one that does not says the codes
(the encoder) failed, unless the ground-truth decoder, put through the same test, fails as
much. Training's NLLs stand beside: a retrained decoder that is worse on the held-out
combinations only because it is worse everywhere has not learnt what the first one had.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from raystudy.analysis.cells import DATASET
from raystudy.analysis.columns import (
    DECODER_TEST_HELDOUT_NLL,
    DECODER_TEST_NLL,
    HELDOUT_NLL,
    SPLIT,
    metric,
)
from raystudy.analysis.groups import model_labels, natural_order
from raystudy.analysis.plotting import grid, palette
from raystudy.keys import eval_key

KEYS = ["model", "split", "dataset"]
#: The table's NLLs (seed means) and the metric each is of: end to end, then retrained.
NLLS = {
    "train_nll": metric(eval_key("recon")),
    "train_nll_retrained": metric(DECODER_TEST_NLL),
    "heldout_nll": metric(HELDOUT_NLL),
    "heldout_nll_retrained": metric(DECODER_TEST_HELDOUT_NLL),
}
#: The NLLs whose seed spread (sample std, ddof 1) the table also gives.
SPREAD = ("heldout_nll", "heldout_nll_retrained")
COLUMNS = [*KEYS, "n", *NLLS, *(f"{name}_std" for name in SPREAD)]


def decoder_test_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model (`groups.model_labels`), split and dataset of the finished runs that logged
    the decoder test: the run count n and the seed mean of each NLL of `NLLS` (NaN where a
    run did not log it: a split without a held-out set), with the std of the held-out ones.
    Empty (with its columns) when no run logged the test."""
    after = metric(DECODER_TEST_NLL)
    if after not in frame.columns or frame[after].isna().all():
        return pd.DataFrame(columns=COLUMNS)
    runs = frame[frame[after].notna()]
    values = pd.DataFrame(
        {name: runs[col] if col in runs.columns else np.nan for name, col in NLLS.items()},
        index=runs.index,
        dtype="float64",
    )
    values["model"] = model_labels(runs)
    values["split"] = runs[SPLIT].astype(str) if SPLIT in runs.columns else ""
    values["dataset"] = runs[DATASET].astype(str) if DATASET in runs.columns else ""
    grouped = values.groupby(KEYS, sort=False)
    table = grouped[list(NLLS)].mean()
    table.insert(0, "n", grouped.size())
    for name in SPREAD:
        table[f"{name}_std"] = grouped[name].std()
    table = table.reset_index()
    rank = {m: i for i, m in enumerate(natural_order(table["model"]))}
    table = table.assign(_model=table["model"].map(rank)).sort_values(
        ["dataset", "split", "_model"]
    )
    return table.drop(columns="_model").reset_index(drop=True)[COLUMNS]


def decoder_test_figure(table: pd.DataFrame) -> Figure | None:
    """One panel per dataset and split: each model's held-out NLL (triangles, solid, the seed
    std as bars) and training NLL (circles, dashed) with its end-to-end decoder and with the
    decoder retrained on the frozen encoder. None when no row has both held-out NLLs."""
    rows = table.dropna(subset=["heldout_nll", "heldout_nll_retrained"])
    if rows.empty:
        return None
    panels = list(dict.fromkeys(zip(rows["dataset"], rows["split"], strict=True)))
    colours = palette(natural_order(rows["model"]))
    cols = min(len(panels), 3)
    fig, axes = grid(-(-len(panels) // cols), cols, 3.6, 3.2)
    for ax, (dataset, split) in zip(axes.flat, panels, strict=False):
        sub = rows[(rows["dataset"] == dataset) & (rows["split"] == split)]
        for _, row in sub.iterrows():
            colour = colours[row["model"]]
            spread = [row["heldout_nll_std"], row["heldout_nll_retrained_std"]]
            ax.errorbar(
                [0, 1],
                [row["heldout_nll"], row["heldout_nll_retrained"]],
                yerr=np.nan_to_num(np.asarray(spread, dtype=float)),
                color=colour,
                marker="^",
                capsize=2,
            )
            ax.plot(
                [0, 1],
                [row["train_nll"], row["train_nll_retrained"]],
                color=colour,
                marker="o",
                ls="--",
                alpha=0.6,
            )
        ax.set_xticks([0, 1])
        ax.set_xticklabels(["end to end", "decoder retrained"], fontsize=8)
        ax.set_xlim(-0.3, 1.3)
        ax.set_ylabel("reconstruction NLL (nats / image)", fontsize=8)
        ax.set_title(" · ".join(p for p in (dataset, split) if p), fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    first = axes.flat[0]
    for model, colour in colours.items():
        first.plot([], [], color=colour, marker="s", ls="", label=model)
    first.plot([], [], color="#555555", marker="^", label="held-out combinations")
    first.plot([], [], color="#555555", marker="o", ls="--", label="training combinations")
    first.legend(fontsize=6)
    fig.suptitle("Decoder test: NLL before and after retraining the decoder on the frozen encoder")
    return fig
