"""Where a trial's time goes: the phase timings (`raystudy.phases`) of whole trials.

    python -m bench.trial_cost [--studies smoke laptop] [--trials 2] [--steps N]
                               [--json PATH]
    python -m bench.trial_cost PATH.json        # the tables again, from a file

Each study's first trial (`search_spaces/<name>.yaml`, as shipped; `--steps` shortens the
training only) is run `--trials` times one after another in this process, each as its own
trial of one sqlite MLflow store, exactly as a study's Ray worker runs it
(`raystudy.trials.single.run_trial`, the worker's one torch thread per CPU asked). The first
pays what a fresh worker pays once (imports, the first model export); the later ones are what
a worker reused across trials (`reuse_actors`) pays per trial (the DCI fits a process keeps
are cleared before each, as the trials of a study train different models). Per phase: wall
seconds of the first and of the last trial, and the last trial's share; then the fixed cost,
everything but training (`train`, `render`, `report`), as a share of the trial.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import mlflow
import torch

from bench._table import Load, markdown, record, work_folder, write_json
from raystudy.checks import load_spec
from raystudy.metrics.dci import clear_fit_cache
from raystudy.phases import CPU, TOTAL, TRAINING_PHASES, WALL, phase_table
from raystudy.spec import StudySpec, TrialConfig
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter, run_trial

SPECS = Path(__file__).resolve().parents[1] / "search_spaces"


def first_trial(spec: StudySpec, steps: int | None) -> TrialConfig:
    config = spec.trials()[0]
    if steps is not None:
        config = config.model_copy(
            update={"train": config.train.model_copy(update={"steps": steps})}
        )
    return config


def time_trials(study: str, trials: int, steps: int | None, folder: Path) -> dict[str, Any]:
    """Run the study's first trial `trials` times; each run's phase table."""
    spec = load_spec(SPECS / f"{study}.yaml")
    config = first_trial(spec, steps)
    uri = f"sqlite:///{folder / f'{study}.db'}"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment(study)
    cpus = spec.resources.cpu
    runs = []
    for i in range(trials):
        name = f"{study}-{i}"
        ctx = TrialContext(uri, experiment, None, study, name, name, cpus=cpus)
        print(
            f"{study}: trial {i + 1}/{trials} ({config.train.steps} steps) [{Load.now()}]",
            flush=True,
        )
        # Each trial here trains the same model; a study's trials train different ones, so no
        # trial may find the DCI fit of the one before it kept (`metrics.dci`'s recent fits).
        clear_fit_cache()
        run_trial(config, ctx, LocalReporter())
        (run,) = client.search_runs([experiment], f"attributes.run_name = '{name}'")
        runs.append(phase_table(run.data.metrics))
    return {"study": study, "steps": config.train.steps, "cpus": cpus, "runs": runs}


def fixed_share(table: dict[str, dict[str, float]]) -> float:
    """The share of a trial's wall time spent outside training."""
    total = table[TOTAL][WALL]
    training = sum(table.get(p, {}).get(WALL, 0.0) for p in TRAINING_PHASES)
    return (total - training) / total


def table(payload: dict[str, Any]) -> str:
    out = []
    for study in payload["studies"]:
        first, last = study["runs"][0], study["runs"][-1]
        total = last[TOTAL][WALL]
        rows = [
            [
                name,
                f"{first.get(name, {}).get(WALL, 0.0):.2f}",
                f"{last[name][WALL]:.2f}",
                f"{last[name].get(CPU, 0.0):.2f}",
                f"{100 * last[name][WALL] / total:.1f}%",
            ]
            for name in sorted(last, key=lambda n: (n == TOTAL, -last[n][WALL]))
        ]
        n = len(study["runs"])
        out.append(
            f"{study['study']} ({study['steps']} steps, {study['cpus']:g} CPU): fixed cost "
            f"{100 * fixed_share(first):.0f}% of trial 1, {100 * fixed_share(last):.0f}% of "
            f"trial {n}"
        )
        out.append(
            markdown(
                ["phase", "trial 1 wall s", f"trial {n} wall s", f"trial {n} CPU s", "share"],
                rows,
            )
        )
    return "\n\n".join(out)


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    return [
        (
            f"trial_cost {s['study']} ({s['steps']} steps)",
            f"{s['runs'][-1][TOTAL][WALL]:.1f} s a trial, fixed cost "
            f"{100 * fixed_share(s['runs'][-1]):.0f}%",
        )
        for s in payload["studies"]
    ]


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 1 and argv[0].endswith(".json"):
        print(table(json.loads(Path(argv[0]).read_text())))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", nargs="+", default=["smoke", "laptop"])
    parser.add_argument("--trials", type=int, default=2, help="trials per study, in turn")
    parser.add_argument("--steps", type=int, help="training steps (default: the spec's)")
    parser.add_argument("--keep", type=Path, help="keep the MLflow stores in this folder")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    started = Load.now()
    payload: dict[str, Any] = {"torch_threads": torch.get_num_threads(), "studies": []}
    with work_folder(args.keep) as folder:
        for study in args.studies:
            payload["studies"].append(time_trials(study, args.trials, args.steps, folder))
    print(table(payload))
    write_json(args.json, record("trial_cost", started, payload))


if __name__ == "__main__":
    main()
