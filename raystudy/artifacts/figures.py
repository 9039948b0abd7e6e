"""The figures that explain a trial's logged numbers, drawn one by one: one that cannot be
drawn is said, not raised, since the numbers it would explain are already logged."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from raystudy.artifacts.composition import draw_composition_trials
from raystudy.artifacts.dci_importance import draw_dci_importance
from raystudy.artifacts.projection import draw_latent_projection
from raystudy.artifacts.reconstructions import draw_heldout_reconstructions
from raystudy.artifacts.subject import Subject
from raystudy.artifacts.traversals import draw_traversal_gif, draw_traversals
from raystudy.disk_full import is_disk_full
from raystudy.scoring import FixedSample
from raystudy.spec import EvaluationConfig


def draw_figures(
    folder: Path,
    subject: Subject,
    idx: np.ndarray,
    evaluation: EvaluationConfig,
    fixed: FixedSample | None,
    keep: Callable[[Path], None],
) -> list[str]:
    """Latent traversals from the first image of `idx`, the held-out reconstructions, the
    held-out codes' projection, a composition model's trials and (when `evaluation` scores
    DCI) its importance matrix, each handed to `keep` as soon as it is drawn; returns what
    could not be drawn, `<figure>: <error>`. A full disk is raised: the trial cannot be
    recorded whole."""
    drawers: list[tuple[str, Callable[[], Path | list[Path] | None]]] = [
        ("traversals", partial(draw_traversals, folder, subject, idx)),
        ("traversals_gif", partial(draw_traversal_gif, folder, subject, idx)),
        ("heldout_reconstructions", partial(draw_heldout_reconstructions, folder, subject)),
        ("latent_projection", partial(draw_latent_projection, folder, subject)),
        ("composition_trials", partial(draw_composition_trials, folder, subject)),
    ]
    if "dci" in evaluation.metrics:
        drawers.append(
            ("dci_importance", partial(draw_dci_importance, folder, subject, evaluation, fixed))
        )
    errors = []
    for name, draw in drawers:
        try:
            drawn = draw()
        except Exception as exc:  # said by the caller, not raised: see the module doc
            if is_disk_full(exc):
                raise
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        for path in [drawn] if isinstance(drawn, Path) else drawn or []:
            keep(path)
    return errors
