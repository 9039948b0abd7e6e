"""The report's figures of OOD transfer: transfer error against DCI (Dittadi et al. 2021,
Figs. 4-5), with and without input noise (Fig. 6), per factor and noise (Fig. 15), and the
R^2 of each model per split (Schott et al. 2022)."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from raystudy.analysis.core.columns import (
    GBT_D,
    INPUT_NOISE,
    disentanglement_columns,
    first_present,
    noise_indicator,
    short,
    transfer_scores,
)
from raystudy.analysis.core.groups import SUPERVISION, natural_order
from raystudy.analysis.figures.plotting import (
    binned_boxes,
    dot,
    grid,
    heatmap,
    jitter,
    palette,
)
from raystudy.analysis.tables.correlations import pivot
from raystudy.analysis.tables.r2 import split_kind
from raystudy.keys import TRANSFER

#: The disentanglement metric plotted against transfer (Figs. 4, 14), first present wins.
DCI = GBT_D


def transfer_vs_dci(frame: pd.DataFrame, table: pd.DataFrame) -> Figure | None:
    """Transfer error over bins of DCI disentanglement, one panel per OOD scenario and probe
    (Dittadi et al. 2021, Fig. 4), beside the rank correlations of every metric with every
    transfer error (Fig. 5)."""
    targets = transfer_scores(frame, ("mae",))
    x = first_present(frame, (DCI,)) or next(iter(disentanglement_columns(frame)), None)
    if not targets or x is None:
        return None
    scenarios = sorted({t.scenario for t in targets})
    probes = sorted({t.probe for t in targets})
    maes = table[table["y"].str.endswith("/mae")]
    heat = pivot(maes, "all") if not maes.empty else pd.DataFrame()
    heat_w = 0.62 * heat.shape[0] + 2.5 if not heat.empty else 0.0
    fig = Figure(
        figsize=(3.0 * len(probes) + heat_w, max(2.6 * len(scenarios), 0.4 * heat.shape[1] + 2)),
        layout="constrained",
    )
    ratios = [3.0] * len(probes) + ([heat_w] if heat_w else [])
    spec = fig.add_gridspec(len(scenarios), len(ratios), width_ratios=ratios)
    kinds = frame[SUPERVISION] if SUPERVISION in frame.columns else pd.Series("", frame.index)
    by_name = {(t.scenario, t.probe): t.column for t in targets}
    for i, scenario in enumerate(scenarios):
        for j, probe in enumerate(probes):
            ax = fig.add_subplot(spec[i, j])
            column = by_name.get((scenario, probe))
            if column is None:
                ax.set_visible(False)
                continue
            binned_boxes(ax, frame[x], frame[column], kinds)
            if i == 0 and j == 0:
                ax.legend(fontsize=7, markerscale=1.5, loc="best")
            ax.set_title(f"{scenario} / {probe}", fontsize=9)
            ax.set_ylabel("transfer MAE", fontsize=8)
            if i == len(scenarios) - 1:
                ax.set_xlabel(f"{short(x)} (equal-count bins)", fontsize=8)
    if heat_w:
        ax = fig.add_subplot(spec[:, -1])
        image = heatmap(
            ax,
            maes.assign(y=maes["y"].str.removesuffix("/mae").str.removeprefix(TRANSFER)),
            "all",
            "rank correlation with transfer MAE\n(all finished trials; bold: CI excludes 0)",
            transpose=True,
            annotate_ci=False,
        )
        fig.colorbar(image, ax=ax, shrink=0.6, label="Spearman rho")
    fig.suptitle("OOD transfer error vs disentanglement (lower MAE is better)")
    return fig


def input_noise_effect(frame: pd.DataFrame) -> Figure | None:
    """Transfer error with and without input noise, per scenario and probe (Dittadi et al.
    2021, Fig. 6: noise on the encoder's input helps transfer to a new domain)."""
    targets = transfer_scores(frame, ("mae",))
    if INPUT_NOISE not in frame.columns or not targets or frame.empty:
        return None
    noise = frame[INPUT_NOISE].astype(str).str.lower()
    levels = [v for v in ("false", "true") if v in set(noise)] + sorted(
        set(noise) - {"false", "true"}
    )
    scenarios = sorted({t.scenario for t in targets})
    probes = sorted({t.probe for t in targets})
    fig, axes = grid(len(probes), len(scenarios), 2.4, 2.8)
    by_name = {(t.scenario, t.probe): t.column for t in targets}
    for (i, probe), (j, scenario) in (
        (a, b) for a in enumerate(probes) for b in enumerate(scenarios)
    ):
        ax = axes[i, j]
        column = by_name.get((scenario, probe))
        if column is None:
            ax.set_visible(False)
            continue
        groups = [frame.loc[noise == v, column].dropna().to_numpy(dtype=float) for v in levels]
        ax.boxplot(groups, positions=range(len(levels)), widths=0.5, showfliers=False)
        for k, values in enumerate(groups):
            ax.scatter(
                k + jitter(values.size, k),
                values,
                s=dot(values.size),
                alpha=0.6,
                lw=0,
                color="#4C72B0",
            )
        ax.set_xticks(range(len(levels)))
        ax.set_xticklabels(
            [f"noise {v}\n(n={g.size})" for v, g in zip(levels, groups, strict=True)], fontsize=7
        )
        ax.set_title(f"{scenario} / {probe}", fontsize=9)
        if j == 0:
            ax.set_ylabel("transfer MAE", fontsize=8)
    note = "" if len(levels) > 1 else f" (only input_noise={levels[0]} in this study)"
    fig.suptitle(f"Effect of input noise on OOD transfer{note}")
    return fig


def _noise_levels(frame: pd.DataFrame) -> list[tuple[pd.Index, str, str]]:
    """(rows, label, colour) per input-noise level; one level of every row when the study
    does not vary noise."""
    noise = noise_indicator(frame)
    if noise is None:
        return [(frame.index, "", "#4C72B0")]
    return [
        (noise.index[noise == 0.0], "without input noise", "#4C72B0"),
        (noise.index[noise == 1.0], "with input noise", "#DD8452"),
    ]


def per_factor_transfer(frame: pd.DataFrame) -> Figure | None:
    """Transfer error of each factor, per scenario and probe, side by side without and with
    input noise when the study varies it (Dittadi et al. 2021, Fig. 15): which factors a
    shift actually hurts, and which of them noise on the encoder's input protects."""
    scores = transfer_scores(frame, ("mae",), per_factor=True)
    if not scores or frame.empty:
        return None
    scenarios = sorted({t.scenario for t in scores})
    probes = sorted({t.probe for t in scores})
    levels = _noise_levels(frame)
    width = 0.7 / len(levels)
    fig, axes = grid(len(probes), len(scenarios), 2.9, 2.9)
    for (i, probe), (j, scenario) in (
        (a, b) for a in enumerate(probes) for b in enumerate(scenarios)
    ):
        ax = axes[i, j]
        cells = [t for t in scores if t.scenario == scenario and t.probe == probe]
        if not cells:
            ax.set_visible(False)
            continue
        for k, (rows, label, colour) in enumerate(levels):
            offset = (k - (len(levels) - 1) / 2) * width
            values = [frame.loc[rows, t.column].dropna().to_numpy(dtype=float) for t in cells]
            lines = {"color": colour}
            ax.boxplot(
                values,
                positions=[c + offset for c in range(len(cells))],
                widths=0.85 * width,
                showfliers=False,
                boxprops=lines,
                whiskerprops=lines,
                capprops=lines,
                medianprops=lines,
            )
            for c, v in enumerate(values):
                ax.scatter(
                    c + offset + jitter(v.size, c) * width,
                    v,
                    s=dot(v.size),
                    alpha=0.5,
                    lw=0,
                    color=colour,
                    label=label if c == 0 and label else None,
                )
        ax.set_xticks(range(len(cells)))
        ax.set_xticklabels([t.factor for t in cells], rotation=45, ha="right", fontsize=8)
        ax.set_title(f"{scenario} / {probe}", fontsize=9)
        if j == 0:
            ax.set_ylabel("MAE (factor scaled to [0, 1])", fontsize=8)
    if len(levels) > 1:
        axes[0, 0].legend(fontsize=7, markerscale=1.5)
    by_noise = ", without and with input noise" if len(levels) > 1 else ""
    fig.suptitle(f"Per-factor OOD transfer error{by_noise}")
    return fig


def r2_by_split(table: pd.DataFrame) -> Figure | None:
    """Seed mean R^2 of each model on each split (Schott et al. 2022; for `montero2022_*`
    splits, Montero et al. 2022's encoder test), with the seed
    standard deviation as error bars: one panel per dataset and probe, scenario `test`.
    `table` is `r2_table.csv`."""
    main = table[table["scenario"] == "test"] if not table.empty else table
    if main.empty:
        return None
    panels = list(dict.fromkeys(zip(main["dataset"], main["probe"], strict=True)))
    splits = list(pd.unique(main["split"]))
    models = natural_order(main["model"])
    step = 0.8 / len(models)
    cols = min(2, len(panels))
    fig, axes = grid(-(-len(panels) // cols), cols, 1.1 * len(splits) + 2.6, 3.2)
    colours = palette(models)
    for ax, (dataset, probe) in zip(axes.flat, panels, strict=False):
        sub = main[(main["dataset"] == dataset) & (main["probe"] == probe)]
        for m, model in enumerate(models):
            rows = sub[sub["model"] == model]
            if rows.empty:
                continue
            offset = (m - (len(models) - 1) / 2) * step
            ax.errorbar(
                [splits.index(s) + offset for s in rows["split"]],
                rows["r2"],
                yerr=rows["r2_std"].fillna(0.0),
                fmt="o",
                ms=4,
                capsize=2,
                color=colours[model],
            )
        ax.axhline(0.0, color="#999999", lw=0.8)
        ax.axhline(1.0, color="#999999", lw=0.8, ls=":")
        ax.set_xticks(range(len(splits)))
        ax.set_xticklabels(list(split_kind(pd.Series(splits))), fontsize=8)
        ax.set_ylabel("R² over factors (bars: seed sd)", fontsize=8)
        ax.set_title(" / ".join(p for p in (dataset, probe) if p), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    # Every model in one legend, also those a first panel's dataset or probe lacks.
    handles = [Line2D([], [], marker="o", ls="", color=colours[m]) for m in models]
    axes.flat[0].legend(handles, models, fontsize=7, title="model", title_fontsize=7)
    fig.suptitle(
        "R² of the probes per split (Schott et al. 2022; Montero et al. 2022's encoder test): "
        "mean over seeds"
    )
    return fig
