"""The MLP probe on a CPU: scikit-learn's (`mlp_sklearn`, the reference) against its batched
torch twin (`mlp_torch`), on a study's own encoder at the smoke and the laptop settings.

    python -m bench.mlp_probe_options STUDY_DIR [--rounds 3] [--encoders 2] [--json PATH]

A trial fits the MLP probe on every transfer scenario (five on Dittadi et al.'s hue split),
one thread. Here the first `--encoders` finished runs of the study are loaded, their five
probe sets drawn as a trial draws them (`raystudy.probe_data.probe_sets`) at the smoke
study's sizes (`probe_train` 1,000, `probe_test` 500) and at the laptop study's (2,000 and
1,000), and both probes fit and predict every scenario, alternating in ABBA rounds
(`bench._table.interleaved`) so that the machine's load drifts over both alike. Reported per
setting: seconds per trial (the five scenarios) of each, best and median over rounds, the
median per-round ratio, and the epochs the torch networks ran (early stopping).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._table import Load, interleaved, markdown, median_ratio, record, write_json

#: (name, probe_train, probe_test) of the shipped smoke and laptop studies.
SETTINGS = (("smoke", 1000, 500), ("laptop", 2000, 1000))


def probe_sets_of(study_dir: Path, encoders: int, train: int, test: int) -> list[Any]:
    """The probe sets (every scenario) of the first `encoders` finished runs, at these sizes."""
    from bench.probe_equivalence import run_jobs, trial_encoder
    from raystudy.probe_data import probe_sets

    sets = []
    for job in run_jobs(study_dir)[:encoders]:
        data, split_, config, codes = trial_encoder(job, {"probe_train": train, "probe_test": test})
        ev = config.evaluation
        for ps in probe_sets(split_, ev, codes):
            sizes = np.asarray(data.factors.sizes)
            keep = sizes > 1
            targets = ps.train_idx[:, keep] / (sizes[keep] - 1.0)
            sets.append((ps.z_train, targets, ps.z_test))
    return sets


def main(argv: list[str] | None = None) -> None:
    import torch
    from threadpoolctl import threadpool_limits

    from raystudy.metrics.probes import get_probe

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study_dir", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--encoders", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    started = Load.now()
    payload: dict[str, Any] = {"study": str(args.study_dir), "encoders": args.encoders}
    rows = []
    for name, train, test in SETTINGS:
        sets = probe_sets_of(args.study_dir, args.encoders, train, test)
        epochs: list[int] = []

        def run(probe: str, sets: list[Any] = sets, epochs: list[int] = epochs) -> float:
            """Seconds per trial: every scenario's fit and predict, averaged over encoders."""
            begin = time.perf_counter()
            with threadpool_limits(limits=1):
                for z_train, targets, z_test in sets:
                    fitted = get_probe(probe, seed=0, n_jobs=1).fit(z_train, targets)
                    fitted.predict(z_test)
                    if probe == "mlp_torch":
                        epochs.extend(int(e) for e in fitted.n_iter_)
            return (time.perf_counter() - begin) / args.encoders

        times = interleaved(
            {"mlp_sklearn": lambda: run("mlp_sklearn"), "mlp_torch": lambda: run("mlp_torch")},
            rounds=args.rounds,
            warmup=0,
        )
        ratio = median_ratio(times["mlp_sklearn"], times["mlp_torch"])
        payload[name] = {
            "probe_train": train,
            "probe_test": test,
            "scenarios_per_trial": len(sets) // args.encoders,
            "seconds": times,
            "ratio_sklearn_over_torch": ratio,
            "torch_epochs_mean": float(np.mean(epochs)),
            "torch_epochs_max": int(np.max(epochs)),
        }
        for probe in ("mlp_sklearn", "mlp_torch"):
            t = times[probe]
            rows.append(
                (
                    f"{name} ({train} / {test} points)",
                    probe,
                    f"{min(t):.1f}",
                    f"{statistics.median(t):.1f}",
                    f"{ratio:.2f}" if probe == "mlp_torch" else "",
                )
            )
    print(
        markdown(
            ("setting", "probe", "s per trial (best)", "median", "sklearn / torch"), rows, right=2
        )
    )
    write_json(args.json, record("mlp_probe_options", started, payload))


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    if "shipped" in payload:  # the 2026-11-29 file: a prototype on synthetic codes
        shipped, cheap = payload["shipped"], payload["batched_float32"]
        return [
            (
                f"mlp probe, {payload['factors']} factors x {payload['train']} points",
                f"{shipped['seconds']:.2f} s shipped, {cheap['seconds']:.2f} s batched float32 "
                f"prototype (R2 moved up to {payload['max_abs_r2_diff_ood']:.3f})",
            )
        ]
    out = []
    for name, _, _ in SETTINGS:
        if name in payload:
            p = payload[name]
            out.append(
                (
                    f"mlp probe per {name} trial, sklearn vs torch (1 thread)",
                    f"{min(p['seconds']['mlp_sklearn']):.1f} s vs "
                    f"{min(p['seconds']['mlp_torch']):.1f} s "
                    f"({p['ratio_sklearn_over_torch']:.2f}x)",
                )
            )
    return out


if __name__ == "__main__":
    main()
