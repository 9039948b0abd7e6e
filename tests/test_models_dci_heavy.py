"""Heavy (CI skips it): on dSprites with the conv architecture, at one CPU step budget, a
beta-VAE with beta >= 4 should reach clearly higher DCI disentanglement than beta = 1, and the
weakly supervised Ada-GVAE higher than both.

Run it (prints the scores)::

    python -m pytest tests/test_models_dci_heavy.py -m heavy -s

Recorded once at the default budget on this project's 2-core CPU, shared with other jobs
(30 min wall, 23 min CPU): DCI-D 0.118 (beta 1), 0.054 (beta 8), 0.369 (Ada-GVAE, beta 8,
k 1). Ada-GVAE came out clearly ahead; beta 8 did NOT beat beta 1 at 1000 steps, so the first
assertion failed there. The assertions state the expected result, not that recorded run.

`RAYSTUDY_DCI_STEPS` changes the step budget (default 1000), `RAYSTUDY_DCI_THREADS` the torch
threads (default 2).
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
import torch

from raystudy.data import get_dataset, get_split
from raystudy.metrics import dci
from raystudy.models import build
from raystudy.spec import ModelConfig, TrainConfig
from raystudy.train import train
from raystudy.trial import encode_means

STEPS = int(os.environ.get("RAYSTUDY_DCI_STEPS", "1000"))
THREADS = int(os.environ.get("RAYSTUDY_DCI_THREADS", "2"))
TRAIN = TrainConfig(steps=STEPS, batch_size=64, lr=5e-4, report_every=max(1, STEPS // 5))
MODELS = {
    "beta_vae(beta=1)": ModelConfig(objective="beta_vae", beta=1.0),
    "beta_vae(beta=8)": ModelConfig(objective="beta_vae", beta=8.0),
    "ada_gvae(beta=8, k=1)": ModelConfig(objective="ada_gvae", beta=8.0, k=1),
}


def dci_after_training(config: ModelConfig, seed: int = 0) -> dict[str, float]:
    cpu = torch.device("cpu")
    ds = get_dataset("dsprites")
    split = get_split("iid", ds)
    torch.manual_seed(seed)
    model, objective = build(config, ds.channels, ds.resolution, ds.factors.num_factors)
    start = time.perf_counter()
    history = train(model, objective, ds, split, TRAIN, seed=seed, device=cpu)
    seconds = time.perf_counter() - start
    # The same 2000 + 1000 ground-truth points score every model (evaluation seed 0).
    points = split.sample("encoder", 3000, np.random.default_rng([0, 2]))
    codes = encode_means(model, ds, points, cpu)
    scores = dci(codes[:2000], points[:2000], codes[2000:], points[2000:])
    last = history[-1]
    return {
        **scores,
        "train_seconds": seconds,
        "recon": last["train/recon"],
        "kl": last["train/kl"],
    }


@pytest.mark.heavy
def test_beta_and_weak_supervision_raise_dci_disentanglement() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    try:
        results = {name: dci_after_training(cfg) for name, cfg in MODELS.items()}
    finally:
        torch.set_num_threads(before)
    print(f"\ndsprites, conv, iid split, {STEPS} steps x 64 images, Adam lr 5e-4, seed 0:")
    for name, r in results.items():
        print(
            f"  {name:24s} DCI-D {r['dci_d']:.3f}  C {r['dci_c']:.3f}  I {r['dci_i']:.3f}  "
            f"recon {r['recon']:.1f}  KL {r['kl']:.1f}  ({r['train_seconds']:.0f} s)"
        )
    d = {name: r["dci_d"] for name, r in results.items()}
    beta1, beta8, ada = d.values()
    assert beta8 > beta1 + 0.05
    assert ada > max(beta1, beta8)
