"""Montero et al. (NeurIPS 2022)'s decoder test drawn from its table
(`raystudy.analysis.tables.decoder_arms`), as `decoder_test.png`."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from raystudy.analysis.core.groups import natural_order
from raystudy.analysis.figures.plotting import grid, palette

#: The figure's x positions: (label, held-out column, training column).
STAGES = [
    ("end to end", "heldout_nll", "train_nll"),
    ("decoder retrained", "heldout_nll_retrained", "train_nll_retrained"),
    ("encoder retrained", "heldout_nll_encoder_retrained", "train_nll_encoder_retrained"),
]


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
