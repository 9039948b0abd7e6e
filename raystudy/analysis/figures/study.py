"""The papers' figures, drawn from the results table (and the correlation tables).

Each figure function takes finished trials (a `supervision` column included) and returns a
matplotlib Figure, or None when the study holds nothing to draw; `study_figures` lists them
with a caption, or with the reason one was left out. The figures are drawn in
`models`, `transfer` and `decoder_test`, with the helpers of `plotting`.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure

from raystudy.analysis.core.columns import DECODER_TEST_HELDOUT_NLL, HELDOUT_NLL
from raystudy.analysis.figures.decoder_arms import decoder_test_figure
from raystudy.analysis.figures.models import (
    agreement_heatmaps,
    disentanglement_violins,
    proxy_heatmaps,
    proxy_scatter,
    reconstruction_splits,
    scores_by_objective,
)
from raystudy.analysis.figures.plotting import DPI
from raystudy.analysis.figures.transfer import (
    input_noise_effect,
    per_factor_transfer,
    r2_by_split,
    transfer_vs_dci,
)
from raystudy.analysis.tables.decoder_arms import decoder_test_table


@dataclass(frozen=True)
class StudyFigure:
    """A figure of the report: its file name, caption, and the figure or why there is none."""

    name: str
    caption: str
    figure: Figure | None
    reason: str = ""

    def png(self) -> bytes | None:
        """The figure as PNG bytes (None when there is no figure), rendered once: the file
        and the report show the same bytes."""
        return self._png

    @functools.cached_property
    def _png(self) -> bytes | None:
        if self.figure is None:
            return None
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=DPI)
        return buffer.getvalue()


FigureFn = Callable[[], Figure | None]
R2_FIGURE = "r2_by_split.png"


def study_figures(
    frame: pd.DataFrame,
    table: pd.DataFrame,
    proxy_table: pd.DataFrame,
    r2: pd.DataFrame | None = None,
    agreement: pd.DataFrame | None = None,
) -> list[StudyFigure]:
    """Every figure of the report, in order, each with its caption or its reason to be absent.

    `frame`: finished trials with `supervision`; `table`: `correlations.csv`; `proxy_table`:
    unsupervised scores vs disentanglement correlations; `r2`: `r2_table.csv` (Schott and
    Montero 2022 splits); `agreement`: `metric_agreement.csv`.
    """
    r2 = pd.DataFrame(columns=["scenario"]) if r2 is None else r2
    agreement = pd.DataFrame() if agreement is None else agreement
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
            "metric_agreement.png",
            "Rank correlation of the disentanglement metrics with each other (cf. Locatello et "
            "al. 2019, Fig. 2; metric_agreement.csv).",
            lambda: agreement_heatmaps(agreement),
            "needs two or more of the six metrics' headline scores",
        ),
        (
            "disentanglement_by_objective.png",
            "Each metric per objective, a point per trial coloured by its hyperparameters: the "
            "spread within an objective beside the gap between objectives (cf. Locatello et "
            "al. 2019, Figs. 3-4; objective_spread.csv).",
            lambda: scores_by_objective(frame),
            "needs two or more objectives and a headline dis/* metric",
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
            "Per-factor transfer error per scenario and probe, without and with input noise "
            "when the study varies it (cf. Fig. 15).",
            lambda: per_factor_transfer(frame),
            "no per-factor transfer/*/mae/<factor> metric was logged",
        ),
        (
            "reconstruction_splits.png",
            "Reconstruction NLL on training (circles) vs held-out (triangles) combinations "
            "against DCI's Lasso D-score, per split and model (cf. Montero et al. 2021, Fig. 3; "
            "the axis says when the GBT DCI stands in).",
            lambda: reconstruction_splits(frame),
            f"no trial logged {HELDOUT_NLL}, the held-out reconstruction NLL of splits "
            "such as montero_*",
        ),
        (
            "decoder_test.png",
            "Held-out (triangles) and training (circles) reconstruction NLL of each model with "
            "its end-to-end decoder and with a decoder retrained on its frozen encoder, seed "
            "means with the held-out seed std (Montero et al. 2022's decoder test; "
            "decoder_test.csv).",
            lambda: decoder_test_figure(decoder_test_table(frame)),
            f"no trial logged {DECODER_TEST_HELDOUT_NLL} (evaluation.decoder_test_steps on a "
            "split with a held-out set)",
        ),
        (
            R2_FIGURE,
            "R² of the probes over factors per model and split, mean over seeds with the seed "
            "standard deviation as error bars (cf. Schott et al. 2022; on montero2022_* splits "
            "Montero et al. 2022's encoder test; r2_table.csv).",
            lambda: r2_by_split(r2),
            "no finished trial of a schott_* or montero2022_* split logged transfer/test/*/r2",
        ),
    ]
    out = []
    for name, caption, draw, reason in plan:
        figure = draw() if not frame.empty else None
        why = reason if not frame.empty else "no finished trial to draw"
        out.append(StudyFigure(name, caption, figure, "" if figure is not None else why))
    return out
