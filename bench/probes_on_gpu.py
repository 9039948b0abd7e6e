"""The probes on a GPU against the same probes on one CPU thread: seconds and scores.

    python -m bench.probes_on_gpu [--points 2000 10000] [--rounds 2] [--json PATH]

Needs CUDA (it says so and stops without). For each training size, on codes of a fixed
nonlinear mix of colour-dSprites' factors plus noise (10 dimensions; what a probe's fit costs
depends on the points, dimensions and factors, not on what the codes mean), fits and scores
every factor with: `mlp_sklearn` (the reference, one CPU thread), `mlp_torch` on the CPU (one
thread) and on the GPU, `gbt` on the CPU and on the GPU. Reported: seconds per fit + predict
(best of `--rounds`) and each one's largest per-factor R2 difference from its CPU reference
(`mlp_sklearn` for the MLPs, `gbt` on the CPU for the trees). What `raystudy plan`'s assumed
probe speed-up (`raystudy.plan.gpu`) is to be replaced by, once measured.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._table import Load, markdown, record, write_json

#: (probe, device) pairs, each against the first of its family.
RUNS = (
    ("mlp_sklearn", "cpu"),
    ("mlp_torch", "cpu"),
    ("mlp_torch", "cuda"),
    ("gbt", "cpu"),
    ("gbt", "cuda"),
)


def codes_of(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    from raystudy.data import get_dataset

    sizes = np.array(get_dataset("color_dsprites").factors.sizes)
    sizes = sizes[sizes > 1]
    idx = np.stack([rng.integers(0, s, n) for s in sizes], axis=1)
    targets = idx / (sizes - 1.0)
    mix = np.random.default_rng(12345).normal(size=(len(sizes), 10))
    return np.tanh(targets @ mix) + 0.05 * rng.normal(size=(n, 10)), targets


def main(argv: list[str] | None = None) -> None:
    import torch
    from sklearn.metrics import r2_score
    from threadpoolctl import threadpool_limits

    from raystudy.metrics.probes import get_probe

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("probes_on_gpu needs a CUDA GPU; torch sees none")
    torch.set_num_threads(1)
    started = Load.now()
    payload: dict[str, Any] = {"gpu": torch.cuda.get_device_name(0), "sizes": {}}
    rows = []
    for n in args.points:
        rng = np.random.default_rng(n)
        x, y = codes_of(n, rng)
        x_test, y_test = codes_of(n // 2, rng)
        results: dict[str, Any] = {}
        for probe, device in RUNS:
            times, pred = [], None
            for _ in range(args.rounds):
                begin = time.perf_counter()
                with threadpool_limits(limits=1):
                    fitted = get_probe(probe, seed=0, n_jobs=1, device=device).fit(x, y)
                    pred = fitted.predict(x_test)
                if device == "cuda":
                    torch.cuda.synchronize()
                times.append(time.perf_counter() - begin)
            r2 = [float(r2_score(y_test[:, k], pred[:, k])) for k in range(y.shape[1])]
            results[f"{probe}@{device}"] = {"seconds": min(times), "r2": r2}
        for probe, device in RUNS:
            ref = "mlp_sklearn@cpu" if probe.startswith("mlp") else "gbt@cpu"
            here = results[f"{probe}@{device}"]
            diff = max(abs(a - b) for a, b in zip(here["r2"], results[ref]["r2"], strict=True))
            here["max_r2_diff"] = diff
            rows.append((n, f"{probe} on {device}", f"{here['seconds']:.2f}", f"{diff:.4f}"))
        payload["sizes"][n] = results
    print(markdown(("points", "probe", "s (best)", "largest R2 diff vs CPU reference"), rows))
    write_json(args.json, record("probes_on_gpu", started, payload))


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    out = []
    for n, results in payload["sizes"].items():
        ref, gpu = results["mlp_sklearn@cpu"], results["mlp_torch@cuda"]
        out.append(
            (
                f"mlp probe, {n} points, {payload['gpu']}",
                f"{ref['seconds']:.1f} s sklearn (1 thread) vs {gpu['seconds']:.2f} s torch GPU",
            )
        )
    return out


if __name__ == "__main__":
    main()
