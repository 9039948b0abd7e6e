"""The report's figures of the models themselves: disentanglement by supervision type and
its correlation with unsupervised scores (Dittadi et al. 2021, Figs. 3 and 14), the
reconstruction of seen vs unseen combinations (Montero et al. 2021), and the metrics'
agreement and spread by objective (Locatello et al. 2019, Figs. 2-4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from raystudy.analysis.core.columns import (
    GBT_D,
    HELDOUT_NLL,
    LASSO_D,
    OBJECTIVE,
    SPLIT,
    TRAIN_NLL,
    disentanglement_columns,
    first_present,
    metric,
    short,
)
from raystudy.analysis.core.groups import SUPERVISION, model_labels, natural_order
from raystudy.analysis.figures.plotting import (
    COLOURS,
    dot,
    grid,
    heatmap,
    jitter,
    palette,
    points_and_violin,
    rho_label,
    supervision_kinds,
)
from raystudy.analysis.figures.transfer import DCI
from raystudy.analysis.tables.agreement import headline_columns
from raystudy.analysis.tables.correlations import pivot
from raystudy.keys import eval_key, metric_key

#: More models than this are coloured by objective: a legend of 30 colours tells none apart.
_MAX_MODELS = 10


def disentanglement_violins(frame: pd.DataFrame) -> Figure | None:
    """Each disentanglement metric by supervision type (Dittadi et al. 2021, Fig. 3 left)."""
    columns = disentanglement_columns(frame)
    if not columns or frame.empty:
        return None
    kinds = supervision_kinds(frame)
    cols = min(len(columns), 5)
    rows = -(-len(columns) // cols)
    fig, axes = grid(rows, cols, 2.6, 3.0)
    for ax, column in zip(axes.flat, columns, strict=False):
        counts = []
        for i, kind in enumerate(kinds):
            values = frame.loc[frame[SUPERVISION] == kind, column].to_numpy(dtype=float)
            points_and_violin(ax, i, values, COLOURS[kind])
            counts.append(int(np.isfinite(values).sum()))  # the points drawn, not the runs
        ax.set_xticks(range(len(kinds)))
        ax.set_xticklabels(
            [f"{k}\n(n={n})" for k, n in zip(kinds, counts, strict=True)], fontsize=8
        )
        ax.set_ylabel(short(column))
        ax.set_title(short(column))
        ax.grid(axis="y", alpha=0.3)
    for ax in axes.flat[len(columns) :]:
        ax.set_visible(False)
    fig.suptitle("Disentanglement scores by supervision type (each point is a trial)")
    return fig


def _group_heatmaps(
    table: pd.DataFrame, title: str, size: tuple[float, float], *, transpose: bool = False
) -> Figure:
    """One heatmap panel of `table` for `all` and each supervision type, two to a row (which
    keeps the cell text legible when the report scales the image down), one colour bar."""
    kinds = [g for g in pd.unique(table["group"]) if g.startswith(SUPERVISION)]
    counts = {g: table.loc[table["group"] == g, "n"].max() for g in ["all", *kinds]}
    titles = {g: f"{g} (n={n})" for g, n in counts.items()}
    if len(kinds) == 1 and counts[kinds[0]] == counts["all"]:
        # One supervision type holds every trial: its panel would repeat `all`'s.
        titles["all"] = f"all: {kinds[0]} (n={counts['all']})"
        kinds = []
    groups = ["all", *kinds] if "all" in set(table["group"]) else kinds
    width, height = size
    cols = min(2, len(groups))
    rows = -(-len(groups) // cols)
    fig = Figure(figsize=(width * cols + 1.0, height * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    image = None
    for ax, group in zip(axes, groups, strict=False):
        image = heatmap(ax, table, group, titles[group], transpose=transpose)
        ax.tick_params(axis="x", labelrotation=45)
    for ax in axes[len(groups) :]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=list(axes), shrink=0.6, label="Spearman rho")
    fig.suptitle(f"{title}\n(rho, 95% bootstrap CI; bold: CI excludes 0)")
    return fig


def proxy_heatmaps(proxy_table: pd.DataFrame) -> Figure | None:
    """Rank correlation of ELBO, reconstruction and downstream accuracy with each
    disentanglement metric, per supervision type (Dittadi et al. 2021, Fig. 3 right)."""
    if proxy_table.empty:
        return None
    # Transposed, as in the paper: disentanglement metrics down, unsupervised scores across.
    shape = pivot(proxy_table, str(proxy_table["group"].iloc[0])).T.shape
    size = (1.05 * shape[1] + 1.8, 0.5 * shape[0] + 1.6)
    title = "Unsupervised scores vs disentanglement"
    return _group_heatmaps(proxy_table, title, size, transpose=True)


def proxy_scatter(frame: pd.DataFrame, proxy_table: pd.DataFrame | None = None) -> Figure | None:
    """ELBO and reconstruction against MIG and DCI, coloured by supervision type (Dittadi et
    al. 2021, Fig. 14). A panel's title carries its rank correlation when there is one."""
    ys = [metric(m) for m in (eval_key("elbo"), eval_key("recon")) if metric(m) in frame.columns]
    xs = [metric(m) for m in (metric_key("dis", "mig"), DCI) if metric(m) in frame.columns]
    if not xs or not ys or frame.empty:
        return None
    fig, axes = grid(len(ys), len(xs), 3.4, 3.0)
    kinds = supervision_kinds(frame)
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            ax = axes[i, j]
            for kind in kinds:
                sel = frame[SUPERVISION] == kind
                ax.scatter(
                    frame.loc[sel, x],
                    frame.loc[sel, y],
                    s=dot(len(frame)),
                    alpha=0.7,
                    color=COLOURS[kind],
                    label=kind,
                    lw=0,
                )
            ax.set_xlabel(short(x))
            ax.set_ylabel(short(y))
            ax.set_title(rho_label(proxy_table, short(y), short(x)), fontsize=9)
            ax.grid(alpha=0.3)
    axes[0, -1].legend(fontsize=8, title="supervision", title_fontsize=8)
    fig.suptitle("Unsupervised scores vs disentanglement")
    return fig


def reconstruction_x(frame: pd.DataFrame) -> tuple[str, str] | None:
    """The x column of the reconstruction figure and its axis label: Montero et al.'s Lasso
    D-score, or, when a study did not log it, the GBT one, labelled as a stand-in."""
    lasso = first_present(frame, (LASSO_D,))
    if lasso is not None and frame[lasso].notna().any():
        return lasso, f"{LASSO_D} (DCI disentanglement, Lasso)"
    gbt = first_present(frame, (GBT_D,))
    if gbt is None:
        return None
    return gbt, f"{GBT_D} (GBT DCI: {LASSO_D} was not logged)"


def _model_colours(frame: pd.DataFrame) -> tuple[pd.Series, dict[str, str]]:
    """Each trial's legend entry and a colour per entry: its model, or its objective when
    there are too many models for a legend to tell apart."""
    labels = model_labels(frame)
    if labels.nunique() > _MAX_MODELS and OBJECTIVE in frame.columns:
        labels = frame[OBJECTIVE].astype(str)
    return labels, palette(natural_order(labels))


def reconstruction_splits(frame: pd.DataFrame) -> Figure | None:
    """Reconstruction NLL on training (circles) vs held-out (triangles) combinations against
    DCI's Lasso D-score, one panel per split, one colour per model (Montero et al. 2021,
    Figs. 3-4: disentangled models do not reconstruct unseen combinations better)."""
    heldout = metric(HELDOUT_NLL)
    train = first_present(frame, TRAIN_NLL)
    axis = reconstruction_x(frame)
    if heldout not in frame.columns or train is None or axis is None or frame[heldout].isna().all():
        return None
    x, x_label = axis
    splits = frame[SPLIT].astype(str) if SPLIT in frame.columns else pd.Series("", frame.index)
    names = sorted(splits[frame[heldout].notna()].unique())
    labels, colours = _model_colours(frame)
    fig, axes = grid(1, len(names), 3.8, 3.4)
    for ax, name in zip(axes[0], names, strict=True):
        sub = frame[(splits == name) & frame[heldout].notna()]
        ax.vlines(sub[x], sub[train], sub[heldout], color="#bbbbbb", lw=0.8)
        for model in natural_order(labels[sub.index]):
            rows = sub[labels[sub.index] == model]
            colour = colours[model]
            ax.scatter(rows[x], rows[train], s=16, color=colour, marker="o")
            ax.scatter(rows[x], rows[heldout], s=18, color=colour, marker="^")
        ax.set_xlabel(x_label, fontsize=8)
        ax.set_ylabel("reconstruction NLL (nats / image)")
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
    # One legend for every panel: each model's colour, then what the two markers are.
    first = axes[0, 0]
    for model, colour in colours.items():
        first.scatter([], [], s=16, color=colour, marker="s", label=model)
    first.scatter([], [], s=16, color="#555555", marker="o", label=f"train ({short(train)})")
    first.scatter([], [], s=18, color="#555555", marker="^", label=f"held-out ({HELDOUT_NLL})")
    first.legend(fontsize=6)
    fig.suptitle("Reconstruction of seen vs unseen combinations against disentanglement")
    return fig


def agreement_heatmaps(table: pd.DataFrame) -> Figure | None:
    """Rank correlation of the headline disentanglement metrics with each other, per group
    (Locatello et al. 2019, Fig. 2: the metrics mostly agree; Modularity stands apart)."""
    if table.empty:
        return None
    side = 0.75 * table["x"].nunique() + 2.0
    return _group_heatmaps(table, "Agreement of the disentanglement metrics", (side, side - 0.6))


def scores_by_objective(frame: pd.DataFrame) -> Figure | None:
    """Each headline metric per objective, every trial a point coloured by its model (the
    objective with its hyperparameters), so the spread within an objective reads beside the
    gap between objectives (Locatello et al. 2019, Figs. 3-4)."""
    columns = headline_columns(frame)
    if not columns or OBJECTIVE not in frame.columns or frame[OBJECTIVE].nunique() < 2:
        return None
    objectives = natural_order(frame[OBJECTIVE].astype(str))
    labels, colours = _model_colours(frame)
    cols = min(len(columns), 3)
    rows = -(-len(columns) // cols)
    fig, axes = grid(rows, cols, 0.9 * len(objectives) + 1.6, 3.0)
    for ax, column in zip(axes.flat, columns, strict=False):
        for i, name in enumerate(objectives):
            sub = frame[(frame[OBJECTIVE].astype(str) == name) & frame[column].notna()]
            values = sub[column].to_numpy(dtype=float)
            points_and_violin(ax, i, values, "#bbbbbb")
            # The same jittered places, coloured: which hyperparameter setting each point is.
            ax.scatter(
                i + jitter(values.size),
                values,
                s=dot(len(frame)),
                c=[colours[m] for m in labels[sub.index]],
                lw=0,
            )
        ax.set_xticks(range(len(objectives)))
        ax.set_xticklabels(objectives, rotation=30, ha="right", fontsize=8)
        ax.set_title(short(column), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes.flat[len(columns) :]:
        ax.set_visible(False)
    for model, colour in colours.items():
        axes.flat[0].scatter([], [], s=16, color=colour, label=model)
    axes.flat[0].legend(fontsize=6)
    fig.suptitle("Disentanglement by objective (each point is a trial; colour: its model)")
    return fig
