"""Drawing helpers the report's figures share: colours per supervision type, panel grids,
points over violins, annotated heatmaps, binned boxes, rho labels. Object API only (`Figure`,
not `pyplot`), so drawing needs no display and leaves no global state behind.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm, to_hex
from matplotlib.figure import Figure

from raystudy.analysis.core.groups import SUPERVISION, SUPERVISION_ORDER
from raystudy.analysis.tables.correlations import pivot

COLOURS = {"unsupervised": "#4C72B0", "weak": "#DD8452", "reference": "#55A868"}
DPI = 110


def grid(rows: int, cols: int, width: float, height: float) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = np.asarray(fig.subplots(rows, cols, squeeze=False))
    return fig, axes


def palette(names: list[str]) -> dict[str, str]:
    """A distinct colour per name, in order (tab10, or tab20 past ten names)."""
    colours = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: to_hex(colours(i % colours.N)) for i, name in enumerate(names)}


def supervision_kinds(frame: pd.DataFrame) -> list[str]:
    present = set(frame[SUPERVISION]) if SUPERVISION in frame.columns else set()
    return [k for k in SUPERVISION_ORDER if k in present]


def dot(n: int) -> float:
    """Marker area: large enough to see a handful of trials, small enough for a thousand."""
    return 36.0 if n < 30 else 10.0


def jitter(n: int, seed: int = 0) -> np.ndarray:
    # Fixed jitter so that the same study always draws the same picture.
    return np.random.default_rng(seed).uniform(-0.12, 0.12, n)


def points_and_violin(ax: Axes, position: float, values: np.ndarray, colour: str) -> None:
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
        position + jitter(values.size), values, s=dot(values.size), color=colour, alpha=0.7, lw=0
    )


def heatmap(
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


def binned_boxes(ax: Axes, x: pd.Series, y: pd.Series, kinds: pd.Series, bins: int = 5) -> None:
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
            codes[sel] + jitter(int(sel.sum())),
            y[sel],
            s=dot(len(x)),
            alpha=0.6,
            lw=0,
            color=COLOURS.get(kind, "grey"),
            label=kind,
        )
    labels = [f"{x[codes == b].min():.3g}-\n{x[codes == b].max():.3g}" for b in positions]
    ax.set_xticks(positions)
    ax.set_xticklabels(labels, fontsize=7)


def rho_label(table: pd.DataFrame | None, x: str, y: str) -> str:
    if table is None or table.empty:
        return ""
    cell = table[(table["x"] == x) & (table["y"] == y) & (table["group"] == "all")]
    if cell.empty or not np.isfinite(cell["rho"].iat[0]):
        return "rho: too few trials"
    r = cell.iloc[0]
    return f"rho = {r.rho:+.2f} [{r.ci_low:+.2f}, {r.ci_high:+.2f}], n={r.n}"
