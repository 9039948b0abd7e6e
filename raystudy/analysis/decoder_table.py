"""Montero et al. (NeurIPS 2022)'s decoder test, per model: the reconstruction NLL of the
held-out combinations before and after the decoder was trained again on the frozen encoder's
codes, and after the encoder was trained again against the frozen decoder where trials ran that
arm too (`raystudy.training.decoder_retrain`), as `decoder_test.csv` and `decoder_test.png`.

A retrained decoder that renders the held-out combinations much better than the end-to-end
one says the decoder had failed and the codes were enough; one that does not says the codes
(the encoder) failed, unless the ground-truth decoder, put through the same test, fails as
much. Training's NLLs stand beside: a retrained decoder that is worse on the held-out
combinations only because it is worse everywhere has not learnt what the first one had. The
encoder arm asks whether a new encoder, trained on the training combinations against the frozen
decoder, maps the held-out ones where that decoder renders them. A composition-trained model
has no end-to-end single-image NLL (its eval/* are the composition task's): its row holds the
retrained ones alone.
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
from raystudy.keys import ENCODER_TEST, eval_key

KEYS = ["model", "split", "dataset"]
#: The table's NLLs (seed means) and the metric each is of: end to end, then with the decoder
#: retrained, then with the encoder retrained (the decoder test's two arms).
NLLS = {
    "train_nll": metric(eval_key("recon")),
    "train_nll_retrained": metric(DECODER_TEST_NLL),
    "train_nll_encoder_retrained": metric(eval_key(ENCODER_TEST)),
    "heldout_nll": metric(HELDOUT_NLL),
    "heldout_nll_retrained": metric(DECODER_TEST_HELDOUT_NLL),
    "heldout_nll_encoder_retrained": metric(eval_key(ENCODER_TEST, heldout=True)),
}
#: The NLLs whose seed spread (sample std, ddof 1) the table also gives.
SPREAD = ("heldout_nll", "heldout_nll_retrained", "heldout_nll_encoder_retrained")
#: The figure's x positions: (label, held-out column, training column).
STAGES = [
    ("end to end", "heldout_nll", "train_nll"),
    ("decoder retrained", "heldout_nll_retrained", "train_nll_retrained"),
    ("encoder retrained", "heldout_nll_encoder_retrained", "train_nll_encoder_retrained"),
]
COLUMNS = [*KEYS, "n", *NLLS, *(f"{name}_std" for name in SPREAD)]


def decoder_test_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model (`groups.model_labels`), split and dataset of the finished runs that logged
    the decoder test (either arm): the run count n and the seed mean of each NLL of `NLLS`
    (NaN where a run did not log it: a split without a held-out set, an arm not run), with the
    std of the held-out ones. Empty (with its columns) when no run logged the test."""
    arms = [metric(DECODER_TEST_NLL), metric(eval_key(ENCODER_TEST))]
    logged = pd.Series(False, index=frame.index)
    for col in arms:
        if col in frame.columns:
            logged |= frame[col].notna()
    if not logged.any():
        return pd.DataFrame(columns=COLUMNS)
    runs = frame[logged]
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
    std as bars) and training NLL (circles, dashed) end to end, with the decoder retrained on
    the frozen encoder, and with the encoder retrained against the frozen decoder (the last
    only where trials ran that arm). None when no row has a held-out NLL after either arm."""
    stages = [s for s in STAGES if s[1] in table.columns and table[s[1]].notna().any()]
    after = [held for _, held, _ in stages if held != "heldout_nll"]
    rows = table.dropna(subset=after, how="all") if after else table.iloc[:0]
    if rows.empty:
        return None
    panels = list(dict.fromkeys(zip(rows["dataset"], rows["split"], strict=True)))
    colours = palette(natural_order(rows["model"]))
    cols = min(len(panels), 3)
    fig, axes = grid(-(-len(panels) // cols), cols, 3.6, 3.2)
    xs = np.arange(len(stages))
    for ax, (dataset, split) in zip(axes.flat, panels, strict=False):
        sub = rows[(rows["dataset"] == dataset) & (rows["split"] == split)]
        for _, row in sub.iterrows():
            colour = colours[row["model"]]
            held = np.array([row[h] for _, h, _ in stages], dtype=float)
            spread = np.array([row.get(f"{h}_std", np.nan) for _, h, _ in stages], dtype=float)
            train = np.array([row[t] for _, _, t in stages], dtype=float)
            shown = np.isfinite(held)
            ax.errorbar(
                xs[shown],
                held[shown],
                yerr=np.nan_to_num(spread[shown]),
                color=colour,
                marker="^",
                capsize=2,
            )
            ax.plot(
                xs[np.isfinite(train)],
                train[np.isfinite(train)],
                color=colour,
                marker="o",
                ls="--",
                alpha=0.6,
            )
        ax.set_xticks(xs)
        ax.set_xticklabels([label for label, _, _ in stages], fontsize=8)
        ax.set_xlim(-0.3, len(stages) - 0.7)
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
    fig.suptitle("Decoder test: NLL end to end and with one part retrained, the other frozen")
    return fig
