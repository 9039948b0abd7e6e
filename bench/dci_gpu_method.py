"""Could DCI fit on a GPU? Its only GPU method (xgboost's histogram trees) against the
reference's own seed-to-seed spread, on a study's own encoders.

    python -m bench.dci_gpu_method STUDY_DIR [--encoders 8] [--workers 2] [--json PATH]

DCI follows disentanglement_lib: scikit-learn's ``GradientBoostingClassifier()`` per factor,
its exact split search (raystudy's ``exact`` backend grows the same trees, compiled). On a GPU
xgboost has no exact method, only histograms of at most ``max_bins`` quantiles per code
dimension. For the first `--encoders` finished runs, on the very sample their DCI scored (the
encoder set's draw `evaluation.seed` fixes), this fits DCI three ways: ``exact`` at the
trial's seed, ``exact`` at the next seed (the reference's own spread: its only randomness is
the order in which tied splits are tried), and ``xgboost`` with 256 bins, the GPU's method
(run on the CPU, where xgboost's histogram method is the same algorithm). Reported: |D|, |C|
and |I| differences of each against the first.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench._table import Load, markdown, record, write_json

SCORES = ("dci_d", "dci_c", "dci_i")


def score_encoder(job: dict[str, Any]) -> dict[str, dict[str, float]]:
    import torch

    from bench.probe_equivalence import trial_encoder
    from raystudy.metrics.dci import dci

    torch.set_num_threads(1)
    _, split_, config, encode = trial_encoder(job)
    ev = config.evaluation
    # The draw a trial's fixed-sample metrics score (raystudy.scoring.score_representation).
    points = split_.sample(
        "encoder", ev.num_train + ev.num_test, np.random.default_rng([ev.seed, 2])
    )
    codes = encode(points)
    n = ev.num_train
    args = (codes[:n], points[:n], codes[n:], points[n:])
    ways = {
        "exact": dict(backend="exact", seed=ev.seed),
        "exact_next_seed": dict(backend="exact", seed=ev.seed + 1),
        "hist_256": dict(backend="xgboost", seed=ev.seed, max_bins=256),
    }
    out = {}
    for name, options in ways.items():
        scores = dci(*args, n_jobs=1, **options)
        out[name] = {k: float(scores[k]) for k in SCORES}
    out["logged"] = {
        k: float(job["logged_dis"][f"dis/{k}"]) for k in SCORES if f"dis/{k}" in job["logged_dis"]
    }
    return out


def main(argv: list[str] | None = None) -> None:
    from bench.probe_equivalence import run_jobs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study_dir", type=Path)
    parser.add_argument("--encoders", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    started = Load.now()
    jobs = run_jobs(args.study_dir)[: args.encoders]
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(score_encoder, jobs))
    rows, payload = [], {"study": str(args.study_dir), "encoders": len(results), "results": results}
    for way in ("exact_next_seed", "hist_256"):
        diffs = {k: [abs(r[way][k] - r["exact"][k]) for r in results] for k in SCORES}
        payload[way] = {
            k: {"median": float(np.median(v)), "max": float(np.max(v))} for k, v in diffs.items()
        }
        rows.append((way, *(f"{np.median(v):.4f} / {np.max(v):.4f}" for v in diffs.values())))
    # The exact fit here is the trial's own: same draw, codes and seed.
    payload["exact_vs_logged_max"] = max(
        abs(r["exact"][k] - r["logged"][k]) for r in results for k in r["logged"]
    )
    print(markdown(("against exact at the trial's seed", "|D| median / max", "|C|", "|I|"), rows))
    print(f"exact here vs the trials' logged D and C: {payload['exact_vs_logged_max']:.2e}")
    write_json(args.json, record("dci_gpu_method", started, payload))


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    hist, seed = payload["hist_256"], payload["exact_next_seed"]
    return [
        (
            f"DCI by histograms (the GPU's method), {payload['encoders']} encoders",
            f"D moved up to {hist['dci_d']['max']:.3f}; the reference's own seed "
            f"spread {seed['dci_d']['max']:.3f}",
        )
    ]


if __name__ == "__main__":
    main()
