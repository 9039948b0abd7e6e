"""Heavy (CI skips it): on dSprites with the conv architecture, at one CPU step budget, a
beta-VAE with beta >= 4 should reach clearly higher DCI disentanglement than beta = 1, and the
weakly supervised Ada-GVAE higher than both.

Run it (prints the scores)::

    python -m pytest tests/test_models_dci_heavy.py -m heavy -s -n 0

The models train in separate processes, ``RAYSTUDY_DCI_WORKERS`` (default 2) at a time with
``RAYSTUDY_DCI_THREADS`` torch threads each (default 1: on two cores, two one-thread trainings
beat one two-thread one, bench/RESULTS.md "CPU threads per trial"); ``RAYSTUDY_DCI_STEPS``
sets the step budget. docs/studies.md records the runs: at 1,000 and 3,000 steps Ada-GVAE came out
clearly ahead (DCI-D 0.37, 0.45), but no beta-VAE had organised its codes yet (0.03-0.12,
beta 8 not above beta 1), so the first assertion failed there; nor had beta 4, 8 or 16 by
10,000 steps, also when scored on disentanglement_lib's 10,000 + 5,000 points ("DCI-D on this
CPU"). The assertions state the expected result, not those runs.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np
import pytest
import torch

from raystudy.data import get_dataset, get_split
from raystudy.metrics import dci
from raystudy.models import build
from raystudy.scoring import encode_means
from raystudy.spec import ModelConfig, TrainConfig
from raystudy.training.loop import train

STEPS = int(os.environ.get("RAYSTUDY_DCI_STEPS", "3000"))
THREADS = int(os.environ.get("RAYSTUDY_DCI_THREADS", "1"))
WORKERS = int(os.environ.get("RAYSTUDY_DCI_WORKERS", "2"))
TRAIN = TrainConfig(steps=STEPS, batch_size=64, lr=5e-4, report_every=max(1, STEPS // 5))
MODELS = {
    "beta_vae(beta=1)": ModelConfig(objective="beta_vae", beta=1.0),
    "beta_vae(beta=4)": ModelConfig(objective="beta_vae", beta=4.0),
    "beta_vae(beta=8)": ModelConfig(objective="beta_vae", beta=8.0),
    "ada_gvae(beta=8, k=1)": ModelConfig(objective="ada_gvae", beta=8.0, k=1),
}


def dci_after_training(config: ModelConfig, seed: int = 0) -> dict[str, float]:
    torch.set_num_threads(THREADS)
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
    # spawn: a fresh interpreter per worker, not a fork of pytest's threads.
    with ProcessPoolExecutor(WORKERS, mp_context=get_context("spawn")) as pool:
        futures = {name: pool.submit(dci_after_training, cfg) for name, cfg in MODELS.items()}
        results = {name: f.result() for name, f in futures.items()}
    print(
        f"\ndsprites, conv, iid split, {STEPS} steps x 64 images, Adam lr 5e-4, seed 0, "
        f"{WORKERS} at a time x {THREADS} thread(s):"
    )
    for name, r in results.items():
        print(
            f"  {name:24s} DCI-D {r['dci_d']:.3f}  C {r['dci_c']:.3f}  I {r['dci_i']:.3f}  "
            f"recon {r['recon']:.1f}  KL {r['kl']:.1f}  ({r['train_seconds']:.0f} s)"
        )
    d = {name: r["dci_d"] for name, r in results.items()}
    beta1, beta4, beta8, ada = d.values()
    assert max(beta4, beta8) > beta1 + 0.05
    assert ada > max(beta1, beta4, beta8)
