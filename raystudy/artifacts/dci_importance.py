"""`dci_importance.png`: the DCI importance matrix R (codes x factors) as a Hinton diagram
(Eastwood & Williams 2018, Fig. 2).

The matrix is the logged `dis/dci_*`'s own when the trial's scoring hands over the sample it
scored and the metric's fit is still kept (`metrics.dci.logged_importance`: no second fit, and
the figure's D and C are the logged ones); otherwise it is refitted on a capped subsample
(`DCI_TRAIN` + `DCI_TEST` points), so drawing it costs a few seconds whatever
`evaluation.num_train` is, and its D and C may differ slightly from the logged ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import NDArray

from raystudy.artifacts.subject import Subject
from raystudy.data import GroundTruthDataset
from raystudy.metrics.dci import (
    completeness,
    disentanglement,
    importance_matrix,
    logged_importance,
)
from raystudy.scoring import FixedSample, encode_means
from raystudy.spec import EvaluationConfig

DCI_TRAIN, DCI_TEST = 500, 250


def hinton_figure(
    importance: NDArray[np.floating], factor_names: list[str], title: str = ""
) -> Figure:
    """Squares with area proportional to each R[j, k] (codes down, factors across)."""
    codes, factors = importance.shape
    fig = Figure(figsize=(1.0 + 0.7 * factors, 1.0 + 0.45 * codes), layout="constrained")
    ax = fig.subplots()
    ax.set_facecolor("#f0f0f0")
    peak = float(importance.max()) or 1.0
    for (j, k), value in np.ndenumerate(importance):
        side = np.sqrt(max(value, 0.0) / peak) * 0.9
        ax.add_patch(
            _square(k - side / 2, j - side / 2, side, "#2b5d9b" if value > 0 else "#f0f0f0")
        )
    ax.set_xlim(-0.5, factors - 0.5)
    ax.set_ylim(codes - 0.5, -0.5)
    ax.set_aspect("equal")
    ax.set_xticks(range(factors))
    ax.set_xticklabels(factor_names, rotation=45, ha="right")
    ax.set_yticks(range(codes))
    ax.set_yticklabels([f"z{j}" for j in range(codes)])
    ax.set_xlabel("factor")
    ax.set_ylabel("code dimension")
    ax.set_title(title, fontsize=9)
    return fig


def _square(x: float, y: float, side: float, colour: str) -> object:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), side, side, facecolor=colour, edgecolor="none")


def draw_dci_importance(
    folder: Path, subject: Subject, evaluation: EvaluationConfig, fixed: FixedSample | None = None
) -> Path | None:
    """DCI's importance matrix: the logged metric's own, when `fixed` (the sample it scored
    with `evaluation`) is given and its fit is still kept; else refitted on a capped sample
    (module doc)."""
    dataset = subject.dataset
    if fixed is not None:
        n = fixed.num_train
        logged = logged_importance(
            fixed.codes[:n],
            fixed.points[:n],
            fixed.codes[n:],
            fixed.points[n:],
            seed=evaluation.seed,
            n_jobs=fixed.n_jobs,
        )
        if logged is not None:
            importance, varies = logged
            title = (
                f"DCI importance of the logged dis/dci_* ({n} points): "
                f"D={disentanglement(importance):.2f}, C={completeness(importance):.2f}"
            )
            return _hinton_file(folder, importance, dataset, varies, title)
    ev = evaluation
    n_train = min(ev.num_train, DCI_TRAIN) or DCI_TRAIN
    n_test = min(ev.num_test, DCI_TEST) or DCI_TEST
    points = subject.split.sample("encoder", n_train + n_test, np.random.default_rng([ev.seed, 5]))
    varies = np.array([np.unique(points[:, k]).size > 1 for k in range(points.shape[1])])
    if not varies.any():
        return None
    codes = encode_means(subject.model, dataset, points, subject.device)
    importance, _, _ = importance_matrix(
        codes[:n_train],
        points[:n_train, varies],
        codes[n_train:],
        points[n_train:, varies],
        seed=ev.seed,
        # One thread: on a busy node, multi-threaded xgboost slowed ~20x here (each boosting
        # round syncs its threads), and this small refit gains little from more.
        n_jobs=1,
    )
    title = (
        f"DCI importance, refitted on {n_train} points: "
        f"D={disentanglement(importance):.2f}, C={completeness(importance):.2f}"
    )
    return _hinton_file(folder, importance, dataset, varies, title)


def _hinton_file(
    folder: Path,
    importance: NDArray[np.floating],
    dataset: GroundTruthDataset,
    varies: NDArray[np.bool_],
    title: str,
) -> Path:
    names = [n for n, v in zip(dataset.factors.names, varies, strict=True) if v]
    path = folder / "dci_importance.png"
    hinton_figure(importance, names, title).savefig(path, dpi=110)
    return path
