"""The deep (resnet) and MLP architectures train through the standard loop, not only build."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from raystudy.data import get_dataset, get_split
from raystudy.models import build
from raystudy.spec import ModelConfig, TrainConfig
from raystudy.training.loop import BatchSampler, train

CPU = torch.device("cpu")


@pytest.mark.parametrize("dataset", ["color_dsprites", "shapes3d"])
@pytest.mark.parametrize("architecture", ["resnet", "mlp"])
def test_architecture_trains_and_lowers_the_loss(architecture: str, dataset: str) -> None:
    torch.set_num_threads(1)
    ds = get_dataset(dataset)
    split = get_split("iid", ds)
    torch.manual_seed(0)
    config = ModelConfig(objective="beta_vae", architecture=architecture, latent_dim=6)
    model, objective = build(config, ds.channels, ds.resolution, ds.factors.num_factors)
    fixed = BatchSampler(ds, split, 32, None, True, CPU, np.random.default_rng(7))()

    def fixed_loss() -> float:
        torch.manual_seed(0)  # the same posterior noise before and after
        with torch.no_grad():
            return float(objective(model, fixed).loss)

    before = fixed_loss()
    history = train(
        model,
        objective,
        ds,
        split,
        TrainConfig(steps=12, batch_size=8, lr=1e-3, report_every=6, input_noise=True),
        seed=0,
        device=CPU,
    )
    assert [h["step"] for h in history] == [6.0, 12.0]
    assert all(math.isfinite(v) for h in history for v in h.values())
    assert fixed_loss() < before
