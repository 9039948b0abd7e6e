"""How close `raystudy plan`'s per-trial estimate comes to real trials of the smoke study.

    python -m bench.plan_accuracy [--spec search_spaces/smoke.yaml] [--set KEY=VALUE ...]
                                  [--study-dir studies/smoke] [--json PATH]

1. The plan: `raystudy.plan.make_plan` on the spec (this machine's CPUs, no GPUs), its
   calibration timed as `raystudy plan` times it; per kind of trial, the estimate by part
   (training, encoding, eval/*, fits) and the calibration's own wall time.
2. The real trials, one per kind:
   - by default one trial of each kind in this process, on the code path a trial takes
     (`raystudy.trials.single.run_trial`: `build_seeded`, `train` with the trial's
     settings, `score_model`), timed apart: training and scoring. MLflow logging and
     artifacts are left out (seconds, and not what `plan` estimates);
   - with `--study-dir`, the finished runs of a study that already ran (its MLflow store):
     each run's wall time, start to end, averaged per kind (objective). These include
     logging and, with trials running side by side, the contention `plan` does not see.

The figure is estimate / real per kind and part: 1.0 is exact, 2.0 an estimate twice the real
cost. Both sides run on this machine; report `uptime` with them: under load both slow down,
but not by the same factor (the calibration is short and catches bursts).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from bench._table import Load, markdown, record, write_json
from raystudy.checks import load_spec
from raystudy.data import get_dataset
from raystudy.plan import make_plan
from raystudy.plan.groups import EvaluationGroup, TrainingGroup, kind_label
from raystudy.scoring import build_split, score_model
from raystudy.spec import StudySpec, TrialConfig
from raystudy.training.loop import train
from raystudy.trials.common import build_seeded

ROOT = Path(__file__).resolve().parents[1]


def kind_of(config: TrialConfig) -> str:
    """The plan's label of the kind a trial belongs to."""
    dataset = get_dataset(config.dataset.name, **config.dataset.options)
    return kind_label(
        TrainingGroup.of(config),
        EvaluationGroup.of(config, dataset.factors.num_factors),
        config.train.steps,
    )


def real_trial(config: TrialConfig, threads: int) -> dict[str, float]:
    """Wall seconds of one trial's training and scoring, as `run_trial` runs them."""
    torch.set_num_threads(threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = get_dataset(config.dataset.name, **config.dataset.options)
    model, objective = build_seeded(config, dataset, device)
    split = build_split(config, dataset)
    started = time.perf_counter()
    train(model, objective, dataset, split, config.train, seed=config.seed, device=device)
    trained = time.perf_counter()
    score_model(model, dataset, split, config, device, n_jobs=threads)
    scored = time.perf_counter()
    return {"training": trained - started, "evaluation": scored - trained}


def finished_runs(study_dir: Path, spec: StudySpec) -> dict[str, float]:
    """Mean wall seconds of a finished study's trial runs, per kind (matched by objective:
    the smoke study's kinds differ in it alone)."""
    import mlflow

    from raystudy.tracking.study_run import default_uri

    client = mlflow.MlflowClient(tracking_uri=default_uri(study_dir))
    experiment = client.get_experiment_by_name(spec.name)
    if experiment is None:
        raise SystemExit(f"{study_dir}: no experiment named {spec.name!r} in its MLflow store")
    seconds: dict[str, list[float]] = {}
    for run in client.search_runs([experiment.experiment_id], "attributes.status = 'FINISHED'"):
        objective = run.data.params.get("model.objective")
        if objective is None or run.info.end_time is None:
            continue  # the study's parent run
        seconds.setdefault(objective, []).append((run.info.end_time - run.info.start_time) / 1e3)
    by_kind = {}
    for trial in spec.trials():
        if trial.model.objective in seconds:
            by_kind[kind_of(trial)] = statistics.mean(seconds[trial.model.objective])
    return by_kind


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    return [
        (
            f"plan_accuracy {row['kind'].split(', ')[0]}",
            f"estimate {row['estimate_s']:.0f} s vs real {row['real_s']:.0f} s "
            f"(x{row['ratio']:.2f})",
        )
        for row in payload["rows"]
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=ROOT / "search_spaces" / "smoke.yaml")
    parser.add_argument("--set", dest="set_", action="append", default=[])
    parser.add_argument("--study-dir", type=Path, help="a finished study of the same spec")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    spec = load_spec(args.spec, args.set_)
    started = Load.now()
    plan_started = time.perf_counter()
    plan = make_plan(spec, float(os.cpu_count() or 1), progress=print)
    plan_seconds = time.perf_counter() - plan_started
    print(f"plan: {plan_seconds:.1f} s  [{Load.now()}]", flush=True)

    if args.study_dir is not None:
        real = {kind: {"total": s} for kind, s in finished_runs(args.study_dir, spec).items()}
        source = f"finished runs in {args.study_dir}"
    else:
        examples: dict[str, TrialConfig] = {}
        for trial in spec.trials():
            examples.setdefault(kind_of(trial), trial)
        real = {}
        for kind, config in examples.items():
            parts = real_trial(config, plan.threads)
            real[kind] = {**parts, "total": parts["training"] + parts["evaluation"]}
            print(f"real {kind}: {real[kind]}  [{Load.now()}]", flush=True)
        source = "one trial per kind in this process (training + score_model)"

    rows = []
    for kind, measured in real.items():
        cost = plan.costs[kind]
        estimate_eval = cost.encoding + cost.reconstruction + cost.fitting
        rows.append(
            {
                "kind": kind,
                "estimate_s": cost.seconds,
                "real_s": measured["total"],
                "ratio": cost.seconds / measured["total"],
                "estimate_training_s": cost.training,
                "estimate_evaluation_s": estimate_eval,
                "real_training_s": measured.get("training"),
                "real_evaluation_s": measured.get("evaluation"),
            }
        )
    print(
        markdown(
            ["kind", "estimate s", "real s", "estimate / real", "train est/real", "eval est/real"],
            [
                (
                    r["kind"],
                    f"{r['estimate_s']:.0f}",
                    f"{r['real_s']:.0f}",
                    f"{r['ratio']:.2f}",
                    _ratio(r["estimate_training_s"], r["real_training_s"]),
                    _ratio(r["estimate_evaluation_s"], r["real_evaluation_s"]),
                )
                for r in rows
            ],
        )
    )
    print(f"\nstarted with {started}; ended with {Load.now()}")
    write_json(
        args.json,
        record(
            "plan_accuracy",
            started,
            {
                "spec": str(args.spec),
                "overrides": args.set_,
                "real_from": source,
                "plan_seconds": plan_seconds,
                "calibration_seconds": plan.calibration_seconds,
                "device": plan.device,
                "threads": plan.threads,
                "timed_threads": plan.timed_threads,  # 1 where the CPUs were busy
                "rows": rows,
            },
        ),
    )


def _ratio(estimate: float, real: float | None) -> str:
    return "" if real is None else f"{estimate / real:.2f}"


if __name__ == "__main__":
    main()
