"""The trial's DCI figure draws the logged metric's own importance matrix, without a second
fit, and falls back to a capped refit only when that fit is gone."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import torch
from tiny import trained

from raystudy.artifacts.dci_importance import draw_dci_importance
from raystudy.artifacts.subject import Subject
from raystudy.metrics.dci import (
    clear_fit_cache,
    completeness,
    dci,
    disentanglement,
    logged_importance,
)
from raystudy.scoring import score_model
from raystudy.spec import TrialConfig

# The module, not the `dci` function the metrics package exports under the same name.
dci_module = importlib.import_module("raystudy.metrics.dci")


def tiny() -> TrialConfig:
    return TrialConfig.model_validate(
        {
            "dataset": {"name": "dsprites"},
            "split": "iid",
            "model": {"objective": "beta_vae", "latent_dim": 3},
            "train": {"steps": 4, "batch_size": 4, "report_every": 2},
            "evaluation": {
                "metrics": ["dci"],
                "probes": [],
                "num_train": 60,
                "num_test": 20,
                "num_eval_images": 8,
            },
        }
    )


def test_logged_importance_is_the_fit_dci_scored_and_none_once_it_is_gone() -> None:
    rng = np.random.default_rng(0)
    factors = rng.integers(0, 4, size=(90, 3))
    factors[:, 2] = 1  # a factor that never varies is left out, as dci leaves it out
    codes = factors[:, :2] + rng.normal(0, 0.3, size=(90, 2))
    clear_fit_cache()
    args = (codes[:60], factors[:60], codes[60:], factors[60:])
    assert logged_importance(*args, seed=3) is None
    scores = dci(*args, seed=3)
    logged = logged_importance(*args, seed=3)
    assert logged is not None
    importance, varies = logged
    assert varies.tolist() == [True, True, False] and importance.shape == (2, 2)
    assert disentanglement(importance) == scores["dci_d"]
    assert completeness(importance) == scores["dci_c"]
    # Another seed or thread count is another fit: not the logged one.
    assert logged_importance(*args, seed=4) is None
    assert logged_importance(*args, seed=3, n_jobs=2) is None


def test_a_trials_dci_figure_reuses_the_scored_fit(tmp_path: Path) -> None:
    config = tiny()
    device = torch.device("cpu")
    model, dataset, split = trained(config)
    scores = score_model(model, dataset, split, config, device)
    fixed = scores.fixed
    assert fixed is not None and fixed.num_train == config.evaluation.num_train
    assert fixed.codes.shape[0] == fixed.points.shape[0] == 80
    fits = len(dci_module._recent_fits)
    subject = Subject(model, dataset, split, device, config.evaluation.seed)
    path = draw_dci_importance(tmp_path, subject, config.evaluation, fixed)
    assert path is not None and path.read_bytes()[:4] == b"\x89PNG"
    assert len(dci_module._recent_fits) == fits, "the figure fitted again"
    # Without the scored sample (or once its fit is gone) the figure refits a capped sample.
    clear_fit_cache()
    (tmp_path / "again").mkdir()
    again = draw_dci_importance(tmp_path / "again", subject, config.evaluation, fixed)
    assert again is not None and again.exists()
    assert len(dci_module._recent_fits) == 1, "the capped refit"
