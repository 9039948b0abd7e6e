"""Where a trial's time goes (`raystudy.phases`): the clock's accounting, and real trials
(lone and stacked, a real sqlite MLflow store, no Ray) logging their phases as `time/*`."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import torch
from tiny import LIGHT, SMOKE, trained
from tiny import tiny as tiny_overrides

from raystudy.checks import load_spec
from raystudy.keys import TIME, time_key
from raystudy.models.params import trial_params
from raystudy.phases import (
    CPU,
    OTHER,
    TOTAL,
    WALL,
    PhaseClock,
    added,
    format_phases,
    phase,
    phase_lines,
    phase_table,
    summed,
    timing,
)
from raystudy.plan.estimate import make_plan
from raystudy.plan.report import format_plan
from raystudy.scoring import score_model
from raystudy.spec import TrialConfig
from raystudy.tracking.reader import trial_runs_table
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter, run_trial
from raystudy.trials.stacked import run_seed_stack


def busy(seconds: float) -> None:
    """Keep this thread on the CPU for `seconds` of wall time."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_phase_opened_inside_another_is_counted_once() -> None:
    clock = PhaseClock()
    with timing(clock):
        with phase("outer"):
            busy(0.05)
            with phase("inner"):
                time.sleep(0.1)  # wall without CPU
            busy(0.05)
        time.sleep(0.05)  # in no phase: `other`
    m = clock.metrics()
    assert m[time_key("inner", WALL)] == pytest.approx(0.1, abs=0.03)
    assert m[time_key("inner", CPU)] < 0.03
    # The outer phase's own time leaves out the inner one's.
    assert m[time_key("outer", WALL)] == pytest.approx(0.1, abs=0.03)
    assert m[time_key("outer", CPU)] == pytest.approx(0.1, abs=0.05)
    assert m[time_key(OTHER, WALL)] == pytest.approx(0.05, abs=0.03)
    parts = sum(v for k, v in m.items() if k.endswith(WALL) and TOTAL not in k)
    assert parts == pytest.approx(m[time_key(TOTAL, WALL)], abs=1e-3)


def test_a_phase_adds_up_over_its_entries_and_parts_divide_it() -> None:
    clock = PhaseClock()
    with timing(clock):
        for _ in range(3):
            with phase("step"):
                time.sleep(0.02)
    whole = clock.metrics()
    assert whole[time_key("step", WALL)] == pytest.approx(0.06, abs=0.02)
    half = clock.metrics(parts=2)
    # Each figure is rounded to 0.1 ms.
    assert half[time_key("step", WALL)] == pytest.approx(
        whole[time_key("step", WALL)] / 2, abs=1e-4
    )
    both = added(half, half)
    assert both[time_key("step", WALL)] == pytest.approx(whole[time_key("step", WALL)], abs=2e-4)


def test_without_a_clock_and_from_another_thread_nothing_is_counted() -> None:
    with phase("nowhere"):  # no clock: a no-op, not an error
        pass
    clock = PhaseClock()
    with timing(clock):

        def elsewhere() -> None:
            with clock.phase("sampler"):
                time.sleep(0.01)

        worker = threading.Thread(target=elsewhere)
        with phase("main"):
            worker.start()
            worker.join()
    assert "sampler" not in clock.wall and "main" in clock.wall


def test_runs_tables_add_up_and_read_as_lines() -> None:
    runs = [
        {time_key("train", WALL): 10.0, time_key("train", CPU): 19.0, time_key(TOTAL, WALL): 12.0},
        {time_key("train", WALL): 30.0, time_key(TOTAL, WALL): 38.0, "dis/mig": 0.3},
        {"dis/mig": 0.1, time_key("train", WALL): float("nan")},  # a run with no timings
    ]
    table, timed = summed(runs)
    assert timed == 2
    assert table["train"] == {WALL: 40.0, CPU: 19.0} and table[TOTAL] == {WALL: 50.0}
    lines = format_phases(table, timed)
    assert lines[0].strip() == "Where the time went (2 runs timed):"
    assert lines[1].split()[:4] == ["train", "40.0", "s", "80.0%"]
    assert lines[-1].split()[:4] == [TOTAL, "50.0", "s", "100.0%"]
    assert phase_table({"time/metric/dci/wall_s": 2.0, "time/x": 1.0}) == {
        "metric/dci": {WALL: 2.0}
    }


def tiny(**evaluation: object) -> TrialConfig:
    return TrialConfig.model_validate(
        {
            "dataset": {"name": "dsprites"},
            "split": "iid",
            "model": {"objective": "beta_vae", "latent_dim": 3},
            "train": {"steps": 4, "batch_size": 4, "report_every": 2},
            "evaluation": {
                "metrics": ["mig", "dci"],
                "probes": ["mlp"],
                "num_train": 60,
                "num_test": 20,
                "num_eval_images": 8,
                "probe_train": 40,
                "probe_test": 20,
                **evaluation,
            },
        }
    )


def timings(run: mlflow.entities.Run) -> dict[str, dict[str, float]]:
    return phase_table(run.data.metrics)


def test_a_trial_run_logs_where_its_time_went(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("phases")
    ctx = TrialContext(uri, experiment, None, "phases", "t0", "t0")
    started = time.perf_counter()
    results = run_trial(tiny(), ctx, LocalReporter())
    took = time.perf_counter() - started
    (run,) = client.search_runs([experiment])
    table = timings(run)
    for name in [
        "data",
        "model",
        "lineage",
        "train",
        "render",
        "report",
        "eval",
        "encode",
        "metric/mig",
        "metric/dci",
        "probe/mlp",
        "figures",
        "model_export",
        "mlflow",
        OTHER,
        TOTAL,
    ]:
        assert table[name][WALL] >= 0 and table[name][CPU] >= 0, name
    assert table["train"][WALL] > 0 and table["mlflow"][WALL] > 0
    # Every second once: the phases and `other` make the total, which is the trial's time
    # but for the last write (the timings themselves) and the run's closing.
    parts = sum(m[WALL] for name, m in table.items() if name != TOTAL)
    assert parts == pytest.approx(table[TOTAL][WALL], abs=0.01)
    assert 0.5 * took < table[TOTAL][WALL] <= took
    # Timings are MLflow's only: the trial's results (Tune's report) hold none.
    assert not any(k.startswith(TIME) for k in results)
    lines = phase_lines(trial_runs_table(uri, experiment))
    assert lines[0].strip() == "Where the time went (1 run timed):"
    assert {line.split()[0] for line in lines[1:]} >= {"train", "metric/dci", TOTAL}


def test_a_clock_changes_no_score() -> None:
    config = tiny()
    device = torch.device("cpu")
    model, dataset, split = trained(config)
    untimed = score_model(model, dataset, split, config, device)
    with timing(PhaseClock()) as clock:
        timed = score_model(model, dataset, split, config, device)
    assert "metric/dci" in clock.wall and "probe/mlp" in clock.wall
    assert timed == untimed and len(timed) > 10


def test_each_stacked_model_gets_its_share_of_the_stack(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("stack")
    configs = [tiny().model_copy(update={"seed": s}) for s in (0, 1)]
    ctx = TrialContext(uri, experiment, None, "stack", "t0", "t0")
    started = time.perf_counter()
    run_seed_stack(configs, ctx, LocalReporter(), ["seed0", "seed1"])
    took = time.perf_counter() - started
    runs = client.search_runs([experiment])
    tables = [timings(r) for r in runs]
    assert len(tables) == 2
    # Training was one for both: each run holds half of it.
    assert tables[0]["train"][WALL] == pytest.approx(tables[1]["train"][WALL], abs=1e-3)
    # Each model was scored on its own: its own metric time.
    assert all(t["metric/dci"][WALL] > 0 for t in tables)
    total = sum(t[TOTAL][WALL] for t in tables)
    assert 0.5 * took < total <= took
    frame = pd.DataFrame([{f"metrics.{k}": v for k, v in r.data.metrics.items()} for r in runs])
    assert phase_lines(frame)[0].strip() == "Where the time went (2 runs timed):"


def test_plan_costs_a_kind_from_the_studys_measured_runs() -> None:
    # A run as TrialRun logs it (every param a string) with the timings a clock took; the
    # real path, a study's runs read back by `raystudy plan -o`, is in test_study_e2e.py.
    spec = load_spec(SMOKE, tiny_overrides("measured", LIGHT))
    trials = spec.trials()
    clock = PhaseClock()
    with timing(clock), phase("train"):
        time.sleep(0.05)
    params = {k: str(v) for k, v in trial_params(trials[0]).items()} | {"model.params": "123"}
    metrics = {"dis/mig": 0.2, **clock.metrics()}
    measured = [(params, metrics)]
    plan = make_plan(spec, 2, calibration_steps=None, measured=measured, measured_from="here")
    (kind,) = plan.measured
    seen = plan.measured[kind]
    assert seen.runs == 1
    assert seen.seconds == metrics[time_key(TOTAL, WALL)]
    train = sum(metrics.get(time_key(p, WALL), 0.0) for p in ("train", "render", "report"))
    assert seen.training == pytest.approx(train)
    text = format_plan(plan, spec.name)
    assert f"measured: {seen.seconds:,.0f} s per trial" in text
    # A run of no trial of this study, or from before timings, costs nothing.
    other = dict(params) | {"seed": "999"}
    untimed = {k: v for k, v in metrics.items() if not k.startswith(TIME)}
    assert make_plan(spec, 2, calibration_steps=None, measured=[(other, metrics)]).measured == {}
    assert make_plan(spec, 2, calibration_steps=None, measured=[(params, untimed)]).measured == {}
