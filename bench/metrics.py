"""Time every metric of raystudy.metrics on the reference's problem size.

    python -m bench.metrics [--json PATH] [--no-sklearn] [--train-steps N]

Setting (issue 5): 10,000 train + 5,000 test points, dSprites factors (sizes 3, 6, 40, 32,
32), 10 codes: the posterior means of the conv VAE (``build_model("conv", 1, 10)``, seeded
initialisation, optionally trained ``--train-steps`` ELBO steps first), standardised with a
fixed per-dimension mean and scale measured on 1,000 images. The standardisation is part of
``represent``: an untrained encoder's means have std ~5e-4, which FactorVAE would prune
entirely (and then skip its work), so timings would not be representative. Fixed-sample
metrics are timed on the codes of 15,000 sampled images; BetaVAE and FactorVAE render and
encode their own observations with the same ``represent``. DCI is timed with its three
backends (exact: the default, in the suite; xgboost's exact method; sklearn, the reference:
several minutes) and every result is printed, so their agreement at full size can be read
off.

Everything runs single-threaded (``n_jobs=1``, torch threads 1): on a shared two-core
machine OpenMP threads fighting other processes made xgboost 10x slower, not faster.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from raystudy.data import get_dataset
from raystudy.metrics import draw_pool, evaluate, evaluate_intervention
from raystudy.metrics.dci import clear_fit_cache
from raystudy.models import build_model
from raystudy.models.vae import bernoulli_nll, gaussian_kl

SIZES = (3, 6, 40, 32, 32)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-train", type=int, default=10_000)
    parser.add_argument("--num-test", type=int, default=5_000)
    parser.add_argument("--train-steps", type=int, default=0, help="VAE steps before timing")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-sklearn", action="store_true", help="skip the slow DCI reference")
    parser.add_argument("--json", type=Path, help="write the table here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    dataset = get_dataset("dsprites")
    assert tuple(dataset.factors.sizes) == SIZES
    model = build_model("conv", 1, 10).eval()
    t0 = time.perf_counter()
    _train(model, dataset, args.train_steps, args.seed)
    train_s = time.perf_counter() - t0

    rng = np.random.default_rng(args.seed)
    with torch.no_grad():
        probe = model.encode(dataset.render(dataset.factors.sample(1000, rng)))[0]
    shift, scale = probe.mean(dim=0), probe.std(dim=0)

    @torch.no_grad()
    def represent(images: torch.Tensor) -> torch.Tensor:
        return (model.encode(images)[0] - shift) / scale

    n = args.num_train + args.num_test
    factors = dataset.factors.sample(n, rng)
    start = time.perf_counter()
    codes = np.concatenate(
        [represent(dataset.render(factors[i : i + 1024])).numpy() for i in range(0, n, 1024)]
    ).astype(np.float64)
    encode_s = time.perf_counter() - start

    split = {"seed": args.seed, "num_train": args.num_train, "num_test": args.num_test}
    rows: list[dict[str, Any]] = []

    def timed(label: str, fn: Callable[[], dict[str, float]], in_suite: bool = True) -> None:
        start = time.perf_counter()
        scores = fn()
        seconds = time.perf_counter() - start
        rows.append({"metric": label, "seconds": seconds, "in_suite": in_suite, **scores})
        shown = ", ".join(f"{k}={v:.4f}" for k, v in scores.items())
        print(f"{label:<34} {seconds:8.2f} s   {shown}", flush=True)

    print(
        f"VAE training ({args.train_steps} steps): {train_s:.1f} s; encoding {n} images: "
        f"{encode_s:.1f} s (neither is part of the suite)"
    )
    timed("mig", lambda: evaluate("mig", codes, factors, **split))
    timed("dci (exact, default)", lambda: evaluate("dci", codes, factors, **split))
    timed("sap", lambda: evaluate("sap", codes, factors, **split))
    timed("modularity + explicitness", lambda: evaluate("modularity", codes, factors, **split))
    timed("gbt10000 (after dci: shared fit)", lambda: evaluate("gbt10000", codes, factors, **split))
    clear_fit_cache()
    timed(
        "gbt10000 (cold)",
        lambda: evaluate("gbt10000", codes, factors, **split),
        in_suite=False,
    )
    timed(
        "beta_vae (own 10k pool)",
        lambda: evaluate_intervention("beta_vae", dataset, represent),
        in_suite=False,
    )
    timed(
        "factor_vae (own 10k pool)",
        lambda: evaluate_intervention("factor_vae", dataset, represent),
        in_suite=False,
    )

    def both_shared() -> dict[str, float]:
        pool = draw_pool(dataset, represent, seed=0)
        out = evaluate_intervention("beta_vae", dataset, represent, pool=pool)
        out.update(evaluate_intervention("factor_vae", dataset, represent, pool=pool))
        return out

    timed("beta_vae + factor_vae (one pool)", both_shared)
    clear_fit_cache()
    timed(
        "dci (xgboost exact method)",
        lambda: evaluate("dci", codes, factors, backend="xgboost", **split),
        in_suite=False,
    )
    if not args.no_sklearn:
        timed(
            "dci (sklearn reference)",
            lambda: evaluate("dci", codes, factors, backend="sklearn", **split),
            in_suite=False,
        )

    suite = sum(r["seconds"] for r in rows if r["in_suite"])
    # Every metric on its own: GBT10000 refits what DCI fitted, each intervention metric
    # encodes its own pool.
    cold = (
        suite
        - _seconds(rows, "gbt10000 (after dci: shared fit)")
        + _seconds(rows, "gbt10000 (cold)")
        - _seconds(rows, "beta_vae + factor_vae (one pool)")
        + _seconds(rows, "beta_vae (own 10k pool)")
        + _seconds(rows, "factor_vae (own 10k pool)")
    )
    print(f"{'full suite (as the trial runs it)':<34} {suite:8.2f} s")
    print(f"{'full suite (nothing shared)':<34} {cold:8.2f} s")
    summary: dict[str, Any] = {"suite_seconds": suite, "suite_seconds_cold": cold}
    if not args.no_sklearn:
        ref = _row(rows, "dci (sklearn reference)")
        for name, label in (
            ("exact", "dci (exact, default)"),
            ("xgboost", "dci (xgboost exact method)"),
        ):
            ratio = _seconds(rows, "dci (sklearn reference)") / _seconds(rows, label)
            fast = _row(rows, label)
            diffs = {k: fast[k] - ref[k] for k in ("dci_d", "dci_c", "dci_i", "dci_i_train")}
            print(
                f"dci speed-up {name} vs sklearn: {ratio:.1f}x; {name} - sklearn: "
                + ", ".join(f"{k} {v:+.4f}" for k, v in diffs.items())
            )
            summary.update({f"dci_speedup_{name}": ratio, f"dci_{name}_minus_sklearn": diffs})
    load = os.getloadavg()
    print(
        f"load average (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"{os.cpu_count()} CPUs"
    )
    if args.json:
        payload = {
            "bench": "metrics",
            "setting": {**vars(args), "json": str(args.json), "sizes": SIZES, "codes": 10},
            "vae_train_seconds": train_s,
            "encode_seconds": encode_s,
            "rows": rows,
            "load_average": load,
            **summary,
        }
        args.json.write_text(json.dumps(payload, indent=2, default=float))


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    rows = [(f"metric {r['metric']}", f"{r['seconds']:.2f} s") for r in payload["rows"]]
    rows.append(("metric suite, as a trial runs it", f"{payload['suite_seconds']:.1f} s"))
    return rows


def _train(model: torch.nn.Module, dataset: Any, steps: int, seed: int) -> None:
    """A few hundred ELBO steps (batch 64, Adam 1e-3) so the codes carry some signal."""
    rng = np.random.default_rng(seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    for _ in range(steps):
        x = dataset.render(dataset.factors.sample(64, rng))
        mu, logvar = model.encode(x)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        loss = (bernoulli_nll(model.decode(z), x) + gaussian_kl(mu, logvar).sum(dim=1)).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()


def _row(rows: list[dict[str, Any]], label: str) -> dict[str, Any]:
    return next(r for r in rows if r["metric"] == label)


def _seconds(rows: list[dict[str, Any]], label: str) -> float:
    return float(_row(rows, label)["seconds"])


if __name__ == "__main__":
    main()
