"""Training loop: it learns, reports on schedule, and resumes exactly from a checkpoint."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from raystudy.data import get_dataset, get_split
from raystudy.models import build_model, get_objective
from raystudy.spec import TrainConfig
from raystudy.train import TrainingDiverged, kl_warmup, train


def setup(objective: str = "beta_vae"):
    ds = get_dataset("color_dsprites")
    torch.manual_seed(0)  # same initial weights for every call
    return ds, get_split("dittadi_hues", ds), build_model("conv", 3, 4), get_objective(objective)


def test_kl_warmup_is_linear() -> None:
    assert [kl_warmup(s, 4) for s in (0, 2, 4, 9)] == [0.0, 0.5, 1.0, 1.0]
    assert kl_warmup(0, 0) == 1.0


@pytest.mark.parametrize("objective", ["beta_vae", "ada_gvae"])
def test_training_reports_on_schedule_and_lowers_the_loss(objective: str) -> None:
    ds, split, model, obj = setup(objective)
    cfg = TrainConfig(steps=40, batch_size=16, lr=1e-3, report_every=10, checkpoint_every=20)
    events: list[tuple[int, bool, bool]] = []
    history = train(
        model,
        obj,
        ds,
        split,
        cfg,
        seed=0,
        device=torch.device("cpu"),
        on_progress=lambda step, row, state: events.append(
            (step, row is not None, state is not None)
        ),
    )
    assert events == [(10, True, False), (20, True, True), (30, True, False), (40, True, True)]
    assert [h["step"] for h in history] == [10, 20, 30, 40]
    assert history[-1]["train/recon"] < history[0]["train/recon"]
    assert not model.training


def test_resume_from_checkpoint_equals_an_uninterrupted_run() -> None:
    cfg = TrainConfig(
        steps=12, batch_size=8, lr=1e-3, report_every=3, checkpoint_every=6, input_noise=True
    )
    ds, split, full, obj = setup()
    train(full, obj, ds, split, cfg, seed=3, device=torch.device("cpu"))

    states: list[dict[str, Any]] = []
    ds, split, first, obj = setup()

    def keep(step: int, row: Any, state: dict[str, Any] | None) -> None:
        if state is not None and step == 6:
            states.append(copy.deepcopy(state))

    train(first, obj, ds, split, cfg, seed=3, device=torch.device("cpu"), on_progress=keep)
    _, _, resumed, _ = setup()
    history = train(
        resumed, obj, ds, split, cfg, seed=3, device=torch.device("cpu"), resume_from=states[0]
    )
    assert [h["step"] for h in history] == [3, 6, 9, 12]
    for a, b in zip(full.state_dict().values(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_divergence_is_detected_with_its_step() -> None:
    ds, split, model, obj = setup()
    cfg = TrainConfig(steps=20, batch_size=4, lr=1e9, report_every=2)
    with pytest.raises(TrainingDiverged) as info:
        train(model, obj, ds, split, cfg, seed=0, device=torch.device("cpu"))
    assert info.value.step % 2 == 0 and info.value.step <= 20
