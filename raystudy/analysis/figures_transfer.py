"""The report's figures of OOD transfer: transfer error against DCI (Dittadi et al. 2021,
Figs. 4-5), with and without input noise (Fig. 6), and per factor (Fig. 15)."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from raystudy.analysis.columns import (
    INPUT_NOISE,
    disentanglement_columns,
    first_present,
    short,
    transfer_scores,
)
from raystudy.analysis.correlations import pivot
from raystudy.analysis.groups import SUPERVISION
from raystudy.analysis.plotting import (
    binned_boxes,
    dot,
    grid,
    heatmap,
    jitter,
)

#: The disentanglement metric plotted against transfer (Figs. 4, 14), first present wins.
DCI = "dis/dci_d"


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
            maes.assign(y=maes["y"].str.removesuffix("/mae").str.removeprefix("transfer/")),
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


def per_factor_transfer(frame: pd.DataFrame) -> Figure | None:
    """Transfer error of each factor, per scenario and probe (Dittadi et al. 2021, Fig. 15):
    which factors a shift actually hurts."""
    scores = transfer_scores(frame, ("mae",), per_factor=True)
    if not scores or frame.empty:
        return None
    scenarios = sorted({t.scenario for t in scores})
    probes = sorted({t.probe for t in scores})
    fig, axes = grid(len(probes), len(scenarios), 2.9, 2.9)
    for (i, probe), (j, scenario) in (
        (a, b) for a in enumerate(probes) for b in enumerate(scenarios)
    ):
        ax = axes[i, j]
        cells = [t for t in scores if t.scenario == scenario and t.probe == probe]
        if not cells:
            ax.set_visible(False)
            continue
        values = [frame[t.column].dropna().to_numpy(dtype=float) for t in cells]
        ax.boxplot(values, positions=range(len(cells)), widths=0.6, showfliers=False)
        for k, v in enumerate(values):
            ax.scatter(k + jitter(v.size, k), v, s=dot(v.size), alpha=0.5, lw=0, color="#4C72B0")
        ax.set_xticks(range(len(cells)))
        ax.set_xticklabels([t.factor for t in cells], rotation=45, ha="right", fontsize=8)
        ax.set_title(f"{scenario} / {probe}", fontsize=9)
        if j == 0:
            ax.set_ylabel("MAE (factor scaled to [0, 1])", fontsize=8)
    fig.suptitle("Per-factor OOD transfer error")
    return fig
