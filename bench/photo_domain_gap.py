"""Does input noise close the sim-to-real gap on photographs, as it does on ``real``?

    python -m bench.photo_domain_gap STUDY [--json out.json] [--models N]
    python -m bench.photo_domain_gap out.json        # the tables of a saved run

Every model a finished study logged is scored on OOD2-B as its trial scored it
(`raystudy.scoring.score_representation`: the probe-train and probe-test draws of the
``ood2_b`` scenario from ``[evaluation.seed, 3, <its index>]``, the same probes, sizes and
seed), then on the same test combinations rendered in the ``photo`` domain
(`raystudy.data.domains.photo`) and in ``sim`` (the in-distribution error of those very
combinations). Each probe is fitted once per model on the sim codes, as in the trial, and
scored on the three renderings of the test set: only the test images change. The ``real``
column must equal the trial's logged ``transfer/ood2_b/<probe>/mae`` (checked: a mismatch
means this is not the trial's scoring).

Reads the study folder's ``study.json`` and ``spec.yaml``; a sqlite store is copied to a
temporary folder first, so nothing is written to the study. Prints the mean by input noise,
a table per model and one per factor, each beside the error of a constant guess (each
factor's training median: a probe that learnt nothing), and writes the JSON (``"bench":
"photo_domain_gap"``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench._table import Load, markdown, record, write_json
from raystudy.data import get_dataset
from raystudy.keys import transfer_key
from raystudy.metrics.probes import get_probe
from raystudy.metrics.transfer import normalise_factors
from raystudy.scoring import build_split, encode_codes
from raystudy.study.folder import StudyInfo, load_study_spec
from raystudy.tracking.models import load_encoder
from raystudy.tracking.reader import trial_runs_table

SCENARIO = "ood2_b"
DOMAINS = ("sim", "real", "photo")
#: A logged score and its recomputation agree to this (xgboost and torch are deterministic
#: on one thread; the store keeps float64).
TOLERANCE = 1e-6


def readable_store(info: StudyInfo, folder: Path) -> str:
    """The study's tracking URI, or for a sqlite store that of a copy in ``folder``."""
    prefix = "sqlite:///"
    if not info.tracking_uri.startswith(prefix):
        return info.tracking_uri
    copy = folder / "mlflow.db"
    shutil.copyfile(info.tracking_uri[len(prefix) :], copy)
    return f"{prefix}{copy}"


@dataclass
class Scores:
    """One model's OOD2-B errors: ``mae[domain][probe]`` (the trial's aggregate) and
    ``factors[domain][probe][factor]``."""

    mae: dict[str, dict[str, float]]
    factors: dict[str, dict[str, dict[str, float]]]


def ood2_b_draws(config: Any) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    """The dataset, the scenario and its probe-train and probe-test combinations, drawn as
    `score_representation` draws them: one stream per scenario, train then test."""
    dataset = get_dataset(config.dataset.name, **config.dataset.options)
    split = build_split(config, dataset)
    ev = config.evaluation
    rng = np.random.default_rng([ev.seed, 3, list(split.scenarios).index(SCENARIO)])
    train_idx = split.sample(f"{SCENARIO}/train", ev.probe_train, rng)
    test_idx = split.sample(f"{SCENARIO}/test", ev.probe_test, rng)
    return dataset, split.scenarios[SCENARIO], train_idx, test_idx


def targets(
    dataset: Any, scenario: Any, train_idx: np.ndarray, test_idx: np.ndarray
) -> tuple[list[str], np.ndarray, np.ndarray, list[int]]:
    """The regressed factors' names, targets ``index / (size - 1)`` of both sets (as
    `raystudy.metrics.transfer` makes them) and the columns the aggregate MAE averages."""
    names, sizes = dataset.factors.names, dataset.factors.sizes
    keep = [k for k, size in enumerate(sizes) if size > 1]
    kept_sizes = [sizes[k] for k in keep]
    scored = [c for c, k in enumerate(keep) if names[k] not in scenario.ood_factors]
    t_train = normalise_factors(train_idx[:, keep], kept_sizes)
    t_test = normalise_factors(test_idx[:, keep], kept_sizes)
    return [names[k] for k in keep], t_train, t_test, scored


def chance(config: Any) -> dict[str, float]:
    """The error of the best constant guess, each factor's training median, on the test set:
    what a probe scores that has learnt nothing (``mae`` and per factor)."""
    dataset, scenario, train_idx, test_idx = ood2_b_draws(config)
    names, t_train, t_test, scored = targets(dataset, scenario, train_idx, test_idx)
    error = np.abs(np.median(t_train, axis=0) - t_test).mean(axis=0)
    return {"mae": float(error[scored].mean()), **dict(zip(names, map(float, error), strict=True))}


def score_model(
    encoder: Callable[[torch.Tensor], torch.Tensor], config: Any, probes: list[str]
) -> Scores:
    """One encoder's errors on the OOD2-B draws of its trial, test set in every domain.

    Each probe is fitted once, as `raystudy.metrics.transfer` fits it (same targets, the
    probe's own seed), and scored on the test codes of every domain: ``mae`` is the mean over
    the non-OOD factors of each factor's mean absolute error, `transfer`'s definition, which
    the caller checks against the trial's logged score."""
    dataset, scenario, train_idx, test_idx = ood2_b_draws(config)
    names, t_train, t_test, scored = targets(dataset, scenario, train_idx, test_idx)
    cpu = torch.device("cpu")

    def represent(images: torch.Tensor) -> torch.Tensor:
        return encoder(images)

    z_train = encode_codes(represent, dataset, train_idx, cpu, scenario.probe_domains[0])
    z_test = {d: encode_codes(represent, dataset, test_idx, cpu, d) for d in DOMAINS}
    scores = Scores({d: {} for d in DOMAINS}, {d: {} for d in DOMAINS})
    for probe in probes:
        readout = get_probe(probe, seed=config.evaluation.seed)
        if getattr(readout, "reads_factor_code", False):
            raise SystemExit(f"probe {probe!r} reads the code as the factors: not scored here")
        model = readout.fit(z_train, t_train)
        for domain in DOMAINS:
            pred = np.asarray(model.predict(z_test[domain]), dtype=np.float64)
            error = np.abs(pred.reshape(t_test.shape) - t_test).mean(axis=0)
            scores.mae[domain][probe] = float(error[scored].mean())
            scores.factors[domain][probe] = dict(zip(names, map(float, error), strict=True))
    return scores


def label(row: dict[str, Any]) -> str:
    setting = f"beta {row['beta']:g}" if row["objective"] == "beta_vae" else f"k {row['k']}"
    return f"{row['objective']} {setting}, noise {'on' if row['noise'] else 'off'}"


def measure(study: Path, limit: int | None) -> dict[str, Any]:
    torch.set_num_threads(1)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    info = StudyInfo.read(study)
    spec = load_study_spec(study)
    configs = spec.trials()
    config = configs[0]
    for other in configs[1:]:
        same = (other.dataset, other.split, other.evaluation)
        if same != (config.dataset, config.split, config.evaluation):
            raise SystemExit("the study's trials differ in dataset, split or evaluation")
    probes = list(config.evaluation.probes)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        uri = readable_store(info, Path(folder))
        runs = trial_runs_table(uri, info.experiment_id).sort_values("run_id")
        for _, run in runs.head(limit).iterrows() if limit else runs.iterrows():
            # The logged model is in evaluation mode already (a torch.export program).
            encoder = load_encoder(f"runs:/{run['run_id']}/model", uri)
            with torch.no_grad():
                scores = score_model(encoder, config, probes)
            maes = scores.mae
            logged = {p: float(run[f"metrics.{transfer_key(SCENARIO, p, 'mae')}"]) for p in probes}
            for p in probes:
                if abs(maes["real"][p] - logged[p]) > TOLERANCE:
                    raise SystemExit(
                        f"run {run['run_id']}: real {p} MAE {maes['real'][p]:.6f} is not the "
                        f"logged {logged[p]:.6f}: this is not how the trial scored OOD2-B"
                    )
            row = {
                "run_id": run["run_id"],
                "objective": run["params.model.objective"],
                "beta": float(run["params.model.beta"]),
                "k": run["params.model.k"],
                "noise": run["params.train.input_noise"] == "True",
                "seed": int(run["params.seed"]),
                "mae": maes,
                "factor_mae": scores.factors,
            }
            rows.append(row)
            print(
                f"{label(row)}, seed {row['seed']}: "
                + ", ".join(f"{d} {p} {maes[d][p]:.3f}" for d in DOMAINS for p in probes),
                flush=True,
            )
    return {
        "study": str(study),
        "steps": config.train.steps,
        "scenario": SCENARIO,
        "probes": probes,
        "chance": chance(config),
        "rows": rows,
    }


def by_noise(rows: list[dict[str, Any]], probe: str) -> list[list[str]]:
    """Mean (min-max) MAE per domain, and the photo gap to sim, by input noise."""
    table = []
    for noise in (False, True):
        sub = [r for r in rows if r["noise"] == noise]
        if not sub:
            continue
        cells = [f"{'on' if noise else 'off'} ({len(sub)} models)"]
        for domain in DOMAINS:
            v = [r["mae"][domain][probe] for r in sub]
            cells.append(f"{statistics.mean(v):.3f} ({min(v):.3f}-{max(v):.3f})")
        for domain in ("real", "photo"):
            gap = [r["mae"][domain][probe] - r["mae"]["sim"][probe] for r in sub]
            cells.append(f"{statistics.mean(gap):+.3f}")
        table.append(cells)
    return table


def per_model(rows: list[dict[str, Any]], probe: str) -> list[list[str]]:
    """Per model and noise setting: the range over seeds of each domain's MAE."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(label(r), []).append(r)
    table = []
    for name, sub in groups.items():
        cells = [f"{name} ({len(sub)})"]
        for domain in DOMAINS:
            v = [r["mae"][domain][probe] for r in sub]
            cells.append(f"{min(v):.3f}-{max(v):.3f}")
        table.append(cells)
    return table


def per_factor(payload: dict[str, Any], probe: str) -> list[list[str]]:
    """Per factor: the constant guess's error, then the mean over models of each domain's
    error, without and with input noise."""
    rows, chance_ = payload["rows"], payload["chance"]
    factors = list(rows[0]["factor_mae"]["sim"][probe])
    table = []
    for factor in factors:
        cells = [factor, f"{chance_[factor]:.3f}"]
        for domain in DOMAINS:
            for noise in (False, True):
                v = [r["factor_mae"][domain][probe][factor] for r in rows if r["noise"] == noise]
                cells.append(f"{statistics.mean(v):.3f}" if v else "")
        table.append(cells)
    return table


def tables(payload: dict[str, Any]) -> str:
    """Every table the benchmark prints, from its payload (a run's, or a JSON file's)."""
    out = []
    if "chance" in payload:  # files written before it was recorded have none
        out.append(
            f"constant guess (training medians): {SCENARIO} MAE {payload['chance']['mae']:.3f}"
        )
    for probe in payload["probes"]:
        out.append(f"\n{probe} probe, {SCENARIO} MAE by input noise: mean (min-max); gap = - sim")
        headers = ["input noise", *DOMAINS, "real gap", "photo gap"]
        out.append(markdown(headers, by_noise(payload["rows"], probe)))
        out.append(f"\n{probe} probe, per model (range over seeds)")
        out.append(markdown(["model, noise (seeds)", *DOMAINS], per_model(payload["rows"], probe)))
        if "chance" in payload:
            out.append(f"\n{probe} probe, per factor: mean MAE, noise off / on")
            headers = ["factor", "constant", *(f"{d} {n}" for d in DOMAINS for n in ("off", "on"))]
            out.append(markdown(headers, per_factor(payload, probe)))
    return "\n".join(out)


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`): mean MAE by noise, per probe."""
    out = []
    for probe in payload["probes"]:
        for cells in by_noise(payload["rows"], probe):
            out.append(
                (
                    f"OOD2-B {probe} MAE, noise {cells[0]}",
                    f"sim {cells[1]}, real {cells[2]}, photo {cells[3]}",
                )
            )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", type=Path, help="a finished study's folder")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--models", type=int, default=None, help="only the first N runs")
    args = parser.parse_args(argv)
    if args.study.suffix == ".json":  # a saved run: print its tables again
        print(tables(json.loads(args.study.read_text())))
        return
    started = Load.now()
    payload = measure(args.study, args.models)
    print(tables(payload))
    result = record("photo_domain_gap", started, payload)
    print(f"\n{started} -> {Load.now()}")
    write_json(args.json, result)
    if args.json is None:
        print(json.dumps({k: result[k] for k in ("date", "load_start", "load_end")}))


if __name__ == "__main__":
    main()
