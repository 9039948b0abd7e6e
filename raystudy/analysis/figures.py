"""The papers' figures, drawn from the results table (and the correlation tables).

Each function takes finished trials (a `supervision` column included) and returns a
matplotlib Figure, or None when the study holds nothing to draw; `study_figures` lists them
with a caption, or with the reason one was left out. Figures are built with the object API
(`Figure`, not `pyplot`), so drawing needs no display and leaves no global state behind.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from raystudy.analysis.columns import (
    HELDOUT_NLL,
    INPUT_NOISE,
    SPLIT,
    TRAIN_NLL,
    disentanglement_columns,
    first_present,
    metric,
    short,
    transfer_scores,
)
from raystudy.analysis.correlations import pivot
from raystudy.analysis.groups import SUPERVISION, SUPERVISION_ORDER

COLOURS = {"unsupervised": "#4C72B0", "weak": "#DD8452", "reference": "#55A868"}
DPI = 110
#: Metrics plotted against transfer (Figs. 4, 14), first present wins.
DCI = "dis/dci_d"


@dataclass(frozen=True)
class StudyFigure:
    """A figure of the report: its file name, caption, and the figure or why there is none."""

    name: str
    caption: str
    figure: Figure | None
    reason: str = ""

    def png(self) -> bytes | None:
        """The figure as PNG bytes (None when there is no figure)."""
        if self.figure is None:
            return None
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=DPI)
        return buffer.getvalue()


def _grid(rows: int, cols: int, width: float, height: float) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = np.asarray(fig.subplots(rows, cols, squeeze=False))
    return fig, axes


def _kinds(frame: pd.DataFrame) -> list[str]:
    present = set(frame[SUPERVISION]) if SUPERVISION in frame.columns else set()
    return [k for k in SUPERVISION_ORDER if k in present]


def _dot(n: int) -> float:
    """Marker area: large enough to see a handful of trials, small enough for a thousand."""
    return 36.0 if n < 30 else 10.0


def _jitter(n: int, seed: int = 0) -> np.ndarray:
    # Fixed jitter so that the same study always draws the same picture.
    return np.random.default_rng(seed).uniform(-0.12, 0.12, n)


def _points_and_violin(ax: Axes, position: float, values: np.ndarray, colour: str) -> None:
    values = values[np.isfinite(values)]
    if values.size == 0:
        return
    # A violin needs a spread to estimate a density from; one value is just a point.
    if np.unique(values).size > 1:
        parts = ax.violinplot([values], positions=[position], widths=0.8, showmedians=True)
        for body in parts["bodies"]:
            body.set_facecolor(colour)
            body.set_alpha(0.35)
    ax.scatter(
        position + _jitter(values.size), values, s=_dot(values.size), color=colour, alpha=0.7, lw=0
    )


def disentanglement_violins(frame: pd.DataFrame) -> Figure | None:
    """Each disentanglement metric by supervision type (Dittadi et al. 2021, Fig. 3 left)."""
    columns = disentanglement_columns(frame)
    if not columns or frame.empty:
        return None
    kinds = _kinds(frame)
    cols = min(len(columns), 5)
    rows = -(-len(columns) // cols)
    fig, axes = _grid(rows, cols, 2.6, 3.0)
    for ax, column in zip(axes.flat, columns, strict=False):
        counts = []
        for i, kind in enumerate(kinds):
            values = frame.loc[frame[SUPERVISION] == kind, column].to_numpy(dtype=float)
            _points_and_violin(ax, i, values, COLOURS[kind])
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


def _heatmap(
    ax: Axes,
    table: pd.DataFrame,
    group: str,
    title: str,
    *,
    transpose: bool = False,
    annotate_ci: bool = True,
) -> object:
    """Rank correlations of one group as a heatmap; blank cells stay grey and say so.

    Bold text marks a cell whose interval excludes 0.
    """
    rho, low, high = (pivot(table, group, v) for v in ("rho", "ci_low", "ci_high"))
    if transpose:
        rho, low, high = rho.T, low.T, high.T
    values = rho.to_numpy(dtype=float)
    ax.set_facecolor("#dddddd")
    image = ax.imshow(
        np.ma.masked_invalid(values),
        cmap="RdBu_r",
        norm=TwoSlopeNorm(0.0, -1.0, 1.0),
        aspect="auto",
    )
    small = 7 if annotate_ci else 8
    if not np.isfinite(values).any():
        ax.text(
            0.5,
            0.5,
            "too few finished trials\n(or scores that do not vary)\nfor rank correlations",
            ha="center",
            va="center",
            transform=ax.transAxes,
            fontsize=9,
            color="#444444",
        )
    some = np.isfinite(values).any()
    for (i, j), v in np.ndenumerate(values):
        if not np.isfinite(v):
            if some:  # an all-blank map says why once, in its middle
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=small, color="#777777")
            continue
        lo, hi = low.iat[i, j], high.iat[i, j]
        sure = np.isfinite(lo) and (lo > 0 or hi < 0)
        text = f"{v:+.2f}"
        if annotate_ci and np.isfinite(lo):
            text += f"\n[{lo:+.2f},{hi:+.2f}]"
        ax.text(
            j,
            i,
            text,
            ha="center",
            va="center",
            fontsize=small,
            fontweight="bold" if sure else "normal",
            color="white" if abs(v) > 0.6 else "black",
        )
    ax.set_xticks(range(values.shape[1]))
    ax.set_xticklabels(list(rho.columns), rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(values.shape[0]))
    ax.set_yticklabels(list(rho.index), fontsize=8)
    ax.set_title(title, fontsize=10)
    return image


def proxy_heatmaps(proxy_table: pd.DataFrame) -> Figure | None:
    """Rank correlation of ELBO, reconstruction and downstream accuracy with each
    disentanglement metric, per supervision type (Dittadi et al. 2021, Fig. 3 right)."""
    if proxy_table.empty:
        return None
    groups = [g for g in pd.unique(proxy_table["group"]) if g == "all" or g.startswith(SUPERVISION)]
    # Transposed, as in the paper: disentanglement metrics down, unsupervised scores across.
    sample = pivot(proxy_table, groups[0]).T
    width = 1.05 * sample.shape[1] + 1.8
    height = 0.5 * sample.shape[0] + 1.6
    # Two panels a row keeps the cell text legible when the report scales the image down.
    cols = min(2, len(groups))
    rows = -(-len(groups) // cols)
    fig = Figure(figsize=(width * cols + 1.0, height * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    image = None
    for ax, group in zip(axes, groups, strict=False):
        n = proxy_table.loc[proxy_table["group"] == group, "n"].max()
        image = _heatmap(ax, proxy_table, group, f"{group} (n={n})", transpose=True)
    for ax in axes[len(groups) :]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=list(axes), shrink=0.6, label="Spearman rho")
    fig.suptitle(
        "Unsupervised scores vs disentanglement\n(rho, 95% bootstrap CI; bold: CI excludes 0)"
    )
    return fig


def _binned_boxes(ax: Axes, x: pd.Series, y: pd.Series, kinds: pd.Series, bins: int = 5) -> None:
    """Boxes of y over equal-count bins of x, the trials drawn on top in supervision colours."""
    ok = x.notna() & y.notna()
    x, y, kinds = x[ok], y[ok], kinds[ok]
    if x.empty:
        ax.text(0.5, 0.5, "no trials", ha="center", va="center", transform=ax.transAxes)
        return
    q = max(1, min(bins, x.nunique()))
    codes = pd.qcut(x.rank(method="first"), q, labels=False) if q > 1 else pd.Series(0, x.index)
    positions = sorted(codes.unique())
    groups = [y[codes == b].to_numpy(dtype=float) for b in positions]
    ax.boxplot(groups, positions=positions, widths=0.6, showfliers=False)
    for kind in pd.unique(kinds):
        sel = kinds == kind
        ax.scatter(
            codes[sel] + _jitter(int(sel.sum())),
            y[sel],
            s=_dot(len(x)),
            alpha=0.6,
            lw=0,
            color=COLOURS.get(kind, "grey"),
            label=kind,
        )
    labels = [f"{x[codes == b].min():.3g}-\n{x[codes == b].max():.3g}" for b in positions]
    ax.set_xticks(positions)
    ax.set_xticklabels(labels, fontsize=7)


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
            _binned_boxes(ax, frame[x], frame[column], kinds)
            if i == 0 and j == 0:
                ax.legend(fontsize=7, markerscale=1.5, loc="best")
            ax.set_title(f"{scenario} / {probe}", fontsize=9)
            ax.set_ylabel("transfer MAE", fontsize=8)
            if i == len(scenarios) - 1:
                ax.set_xlabel(f"{short(x)} (equal-count bins)", fontsize=8)
    if heat_w:
        ax = fig.add_subplot(spec[:, -1])
        image = _heatmap(
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
    fig, axes = _grid(len(probes), len(scenarios), 2.4, 2.8)
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
                k + _jitter(values.size, k),
                values,
                s=_dot(values.size),
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


def proxy_scatter(frame: pd.DataFrame, proxy_table: pd.DataFrame | None = None) -> Figure | None:
    """ELBO and reconstruction against MIG and DCI, coloured by supervision type (Dittadi et
    al. 2021, Fig. 14). A panel's title carries its rank correlation when there is one."""
    ys = [metric(m) for m in ("eval/elbo", "eval/recon") if metric(m) in frame.columns]
    xs = [metric(m) for m in ("dis/mig", DCI) if metric(m) in frame.columns]
    if not xs or not ys or frame.empty:
        return None
    fig, axes = _grid(len(ys), len(xs), 3.4, 3.0)
    kinds = _kinds(frame)
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            ax = axes[i, j]
            for kind in kinds:
                sel = frame[SUPERVISION] == kind
                ax.scatter(
                    frame.loc[sel, x],
                    frame.loc[sel, y],
                    s=_dot(len(frame)),
                    alpha=0.7,
                    color=COLOURS[kind],
                    label=kind,
                    lw=0,
                )
            ax.set_xlabel(short(x))
            ax.set_ylabel(short(y))
            ax.set_title(_rho_label(proxy_table, short(y), short(x)), fontsize=9)
            ax.grid(alpha=0.3)
    axes[0, -1].legend(fontsize=8, title="supervision", title_fontsize=8)
    fig.suptitle("Unsupervised scores vs disentanglement")
    return fig


def _rho_label(table: pd.DataFrame | None, x: str, y: str) -> str:
    if table is None or table.empty:
        return ""
    cell = table[(table["x"] == x) & (table["y"] == y) & (table["group"] == "all")]
    if cell.empty or not np.isfinite(cell["rho"].iat[0]):
        return "rho: too few trials"
    r = cell.iloc[0]
    return f"rho = {r.rho:+.2f} [{r.ci_low:+.2f}, {r.ci_high:+.2f}], n={r.n}"


def per_factor_transfer(frame: pd.DataFrame) -> Figure | None:
    """Transfer error of each factor, per scenario and probe (Dittadi et al. 2021, Fig. 15):
    which factors a shift actually hurts."""
    scores = transfer_scores(frame, ("mae",), per_factor=True)
    if not scores or frame.empty:
        return None
    scenarios = sorted({t.scenario for t in scores})
    probes = sorted({t.probe for t in scores})
    fig, axes = _grid(len(probes), len(scenarios), 2.9, 2.9)
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
            ax.scatter(k + _jitter(v.size, k), v, s=_dot(v.size), alpha=0.5, lw=0, color="#4C72B0")
        ax.set_xticks(range(len(cells)))
        ax.set_xticklabels([t.factor for t in cells], rotation=45, ha="right", fontsize=8)
        ax.set_title(f"{scenario} / {probe}", fontsize=9)
        if j == 0:
            ax.set_ylabel("MAE (factor scaled to [0, 1])", fontsize=8)
    fig.suptitle("Per-factor OOD transfer error")
    return fig


def reconstruction_splits(frame: pd.DataFrame) -> Figure | None:
    """Reconstruction NLL on training vs held-out combinations against DCI, one panel per
    split (Montero et al. 2021, Figs. 3-4: disentangled models do not reconstruct unseen
    combinations better)."""
    heldout = metric(HELDOUT_NLL)
    train = first_present(frame, TRAIN_NLL)
    x = first_present(frame, (DCI,))
    if heldout not in frame.columns or train is None or x is None or frame[heldout].isna().all():
        return None
    splits = frame[SPLIT].astype(str) if SPLIT in frame.columns else pd.Series("", frame.index)
    names = sorted(splits[frame[heldout].notna()].unique())
    fig, axes = _grid(1, len(names), 3.6, 3.2)
    for ax, name in zip(axes[0], names, strict=True):
        sub = frame[(splits == name) & frame[heldout].notna()]
        ax.vlines(sub[x], sub[train], sub[heldout], color="#bbbbbb", lw=0.8)
        ax.scatter(sub[x], sub[train], s=14, color="#4C72B0", label=f"train ({short(train)})")
        ax.scatter(
            sub[x],
            sub[heldout],
            s=14,
            marker="^",
            color="#C44E52",
            label=f"held-out ({HELDOUT_NLL})",
        )
        ax.set_xlabel(short(x))
        ax.set_ylabel("reconstruction NLL (nats / image)")
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Reconstruction of seen vs unseen combinations")
    return fig


FigureFn = Callable[[], Figure | None]


def study_figures(
    frame: pd.DataFrame, table: pd.DataFrame, proxy_table: pd.DataFrame
) -> list[StudyFigure]:
    """Every figure of the report, in order, each with its caption or its reason to be absent.

    `frame`: finished trials with `supervision`; `table`: `correlations.csv`; `proxy_table`:
    unsupervised scores vs disentanglement correlations.
    """
    plan: list[tuple[str, str, FigureFn, str]] = [
        (
            "disentanglement_by_supervision.png",
            "Disentanglement metrics by supervision type (cf. Dittadi et al. 2021, Fig. 3 left).",
            lambda: disentanglement_violins(frame),
            "no dis/* metric was logged",
        ),
        (
            "unsupervised_vs_disentanglement_heatmap.png",
            "Rank correlation of ELBO, reconstruction and downstream accuracy with each "
            "disentanglement metric, per supervision type (cf. Fig. 3 right).",
            lambda: proxy_heatmaps(proxy_table),
            "needs eval/* or down/* and dis/* metrics",
        ),
        (
            "transfer_vs_dci.png",
            "OOD transfer error over equal-count bins of DCI disentanglement per scenario and "
            "probe, beside the rank correlations of every metric with every transfer error "
            "(cf. Figs. 4-5).",
            lambda: transfer_vs_dci(frame, table),
            "needs transfer/*/mae and a dis/* metric",
        ),
        (
            "input_noise_effect.png",
            "Transfer error with and without input noise (cf. Fig. 6).",
            lambda: input_noise_effect(frame),
            "needs train.input_noise and transfer/*/mae",
        ),
        (
            "elbo_recon_vs_disentanglement.png",
            "ELBO and reconstruction against MIG and DCI, coloured by supervision (cf. Fig. 14).",
            lambda: proxy_scatter(frame, proxy_table),
            "needs eval/elbo or eval/recon and dis/mig or dis/dci_d",
        ),
        (
            "per_factor_transfer.png",
            "Per-factor transfer error per scenario and probe (cf. Fig. 15).",
            lambda: per_factor_transfer(frame),
            "no per-factor transfer/*/mae/<factor> metric was logged",
        ),
        (
            "reconstruction_splits.png",
            "Reconstruction NLL on training vs held-out combinations against DCI, per split "
            "(cf. Montero et al. 2021).",
            lambda: reconstruction_splits(frame),
            f"no trial logged {HELDOUT_NLL}, the held-out reconstruction NLL of splits "
            "such as montero_*",
        ),
    ]
    out = []
    for name, caption, draw, reason in plan:
        figure = draw() if not frame.empty else None
        why = reason if not frame.empty else "no finished trial to draw"
        out.append(StudyFigure(name, caption, figure, "" if figure is not None else why))
    return out
