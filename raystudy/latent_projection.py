"""Where an encoder puts the combinations it never saw: training and held-out codes projected on
the code dimensions tied to the factors the held-out set excludes (Montero et al., NeurIPS 2022,
"Lost in Latent Space", Figs. 4-5: a model that generalises places the held-out codes where the
grid continues; one that fails collapses them onto trained regions).

- the excluded factors are those the held-out set restricts (it takes fewer values of them
  than the grid has), most restricted first; with one such factor, the other axis is the
  first factor that varies freely;
- the dimension tied to a factor is the one whose training codes correlate most with it,
  |Pearson r| of code and factor index (each factor its own dimension, greedily, strongest
  first), the cheap stand-in for the paper's DCI importances.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import NDArray


def excluded_factors(heldout: NDArray[np.integer], sizes: list[int]) -> list[int]:
    """Factors (column indices) whose values in the held-out draws are fewer than the grid's,
    ordered by the fraction kept (ascending), then by position."""
    kept = [np.unique(heldout[:, k]).size / n for k, n in enumerate(sizes)]
    return sorted((k for k, f in enumerate(kept) if f < 1.0 and sizes[k] > 1), key=kept.__getitem__)


def projected_factors(heldout: NDArray[np.integer], sizes: list[int]) -> list[int]:
    """The two factors to project on: the two most excluded, or the one excluded factor and
    the first other factor with more than one value; fewer when the grid has fewer."""
    chosen = excluded_factors(heldout, sizes)[:2]
    for k, n in enumerate(sizes):
        if len(chosen) >= 2:
            break
        if k not in chosen and n > 1:
            chosen.append(k)
    return chosen


def tied_dimensions(
    codes: NDArray[np.floating], points: NDArray[np.integer], factors: list[int]
) -> list[int]:
    """For each factor, the code dimension with the largest |Pearson r| between code and
    factor index over the training draws; greedy over (factor, dimension) pairs, strongest
    first, so two factors never share a dimension (while dimensions remain)."""
    corr = np.zeros((codes.shape[1], len(factors)))
    for j in range(codes.shape[1]):
        for i, k in enumerate(factors):
            c, f = codes[:, j], points[:, k].astype(float)
            if c.std() > 0 and f.std() > 0:
                corr[j, i] = abs(np.corrcoef(c, f)[0, 1])
    chosen: dict[int, int] = {}
    for flat in np.argsort(-corr, axis=None):
        j, i = np.unravel_index(flat, corr.shape)
        if i in chosen or (j in chosen.values() and len(chosen) < codes.shape[1]):
            continue
        chosen[int(i)] = int(j)
        if len(chosen) == len(factors):
            break
    return [chosen[i] for i in range(len(factors))]


def projection_figure(
    train: NDArray[np.floating],
    heldout: NDArray[np.floating],
    dims: list[int],
    axis_labels: list[str],
    title: str,
) -> Figure:
    """Training codes (grey) and held-out codes (red) on code dimensions `dims` (two: a
    scatter; one: the dimension against the draw's rank)."""
    fig = Figure(figsize=(4.6, 4.2), layout="constrained")
    ax = fig.subplots()
    if len(dims) == 1:
        xs = [np.arange(len(train)), np.arange(len(heldout))]
        ys = [train[:, dims[0]], heldout[:, dims[0]]]
        ax.set_xlabel("draw", fontsize=8)
        ax.set_ylabel(axis_labels[0], fontsize=8)
    else:
        xs = [train[:, dims[0]], heldout[:, dims[0]]]
        ys = [train[:, dims[1]], heldout[:, dims[1]]]
        ax.set_xlabel(axis_labels[0], fontsize=8)
        ax.set_ylabel(axis_labels[1], fontsize=8)
    ax.scatter(xs[0], ys[0], s=5, c="#9a9a9a", alpha=0.5, label="trained on", linewidths=0)
    ax.scatter(xs[1], ys[1], s=7, c="#c0392b", alpha=0.7, label="held out", linewidths=0)
    ax.legend(fontsize=7, markerscale=2)
    ax.set_title(title, fontsize=9)
    return fig
