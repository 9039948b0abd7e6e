"""DCI-D of beta-VAEs and Ada-GVAE after a CPU-sized step budget on dSprites.

    python -m bench.dci_on_cpu [--steps 3000] [--workers 2] [--threads 1]

Trains beta-VAE (beta 1, 4, 8) and Ada-GVAE (beta 8, k 1) on dSprites, iid split, conv net,
batch 64, Adam lr 5e-4, seed 0, `--workers` models at a time in spawned processes with
`--threads` torch threads each (on two cores two one-thread trainings beat one two-thread one,
bench/RESULTS.md "CPU threads per trial"), then scores DCI (Eastwood & Williams 2018, the
gradient-boosted importances of Locatello et al. 2019) on the same 2,000 + 1,000 encoder-set
points for every model. Prints one line per model; docs/studies/models.md ("DCI-D on this CPU")
records the runs. It was a test once: at these budgets no beta-VAE has organised its codes, so
the expectation "beta >= 4 above beta 1" does not hold on a CPU and is not asserted anywhere;
that weak supervision raises DCI-D at a CPU budget is the laptop study's Finding (its test is
tests/test_laptop_study.py).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np
import torch

from raystudy.data import get_dataset, get_split
from raystudy.metrics import dci
from raystudy.models import build
from raystudy.scoring import encode_means
from raystudy.spec import ModelConfig, TrainConfig

MODELS = {
    "beta_vae(beta=1)": {"objective": "beta_vae", "beta": 1.0},
    "beta_vae(beta=4)": {"objective": "beta_vae", "beta": 4.0},
    "beta_vae(beta=8)": {"objective": "beta_vae", "beta": 8.0},
    "ada_gvae(beta=8, k=1)": {"objective": "ada_gvae", "beta": 8.0, "k": 1},
}


def dci_after_training(model: dict, steps: int, threads: int, seed: int = 0) -> dict[str, float]:
    from raystudy.training.loop import train

    torch.set_num_threads(threads)
    cpu = torch.device("cpu")
    ds = get_dataset("dsprites")
    split = get_split("iid", ds)
    torch.manual_seed(seed)
    net, objective = build(
        ModelConfig.model_validate(model), ds.channels, ds.resolution, ds.factors.num_factors
    )
    config = TrainConfig(steps=steps, batch_size=64, lr=5e-4, report_every=max(1, steps // 5))
    start = time.perf_counter()
    history = train(net, objective, ds, split, config, seed=seed, device=cpu)
    seconds = time.perf_counter() - start
    # The same 2000 + 1000 ground-truth points score every model (evaluation seed 0).
    points = split.sample("encoder", 3000, np.random.default_rng([0, 2]))
    codes = encode_means(net, ds, points, cpu)
    scores = dci(codes[:2000], points[:2000], codes[2000:], points[2000:])
    last = history[-1]
    return {
        **scores,
        "train_seconds": seconds,
        "recon": last["train/recon"],
        "kl": last["train/kl"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(f"training {len(MODELS)} models for {args.steps} steps: minutes to an hour on a CPU")
    # spawn: a fresh interpreter per worker, not a fork of this one's threads.
    with ProcessPoolExecutor(args.workers, mp_context=get_context("spawn")) as pool:
        futures = {
            name: pool.submit(dci_after_training, cfg, args.steps, args.threads)
            for name, cfg in MODELS.items()
        }
        results = {name: f.result() for name, f in futures.items()}
    print(
        f"dsprites, conv, iid split, {args.steps} steps x 64 images, Adam lr 5e-4, seed 0, "
        f"{args.workers} at a time x {args.threads} thread(s):"
    )
    for name, r in results.items():
        print(
            f"  {name:24s} DCI-D {r['dci_d']:.3f}  C {r['dci_c']:.3f}  I {r['dci_i']:.3f}  "
            f"recon {r['recon']:.1f}  KL {r['kl']:.1f}  ({r['train_seconds']:.0f} s)"
        )


if __name__ == "__main__":
    main()
