"""The searcher's Optuna samplers survive the pickles Tune makes of them (tuner.pkl, the
searcher's saved state): Optuna 5.1's NSGA-II sampler holds a lock no pickle can."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

import optuna
import pytest
from ray import cloudpickle

from raystudy.tune.samplers import PicklableNSGAIISampler


def test_the_stock_nsga2_sampler_is_what_needs_it() -> None:
    # Were this to pass, Optuna would pickle its sampler again and the subclass could go.
    with pytest.raises(TypeError, match="lock"):
        cloudpickle.dumps(optuna.samplers.NSGAIISampler(seed=0))


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps])
def test_a_pickled_nsga2_sampler_goes_on_sampling_as_the_original(dumps, tmp_path: Path) -> None:
    def study(sampler: optuna.samplers.BaseSampler, name: str) -> optuna.Study:
        return optuna.create_study(
            storage=f"sqlite:///{tmp_path / name}.db",
            sampler=sampler,
            directions=["maximize", "minimize"],
        )

    def run(s: optuna.Study, n: int) -> list[float]:
        values = []
        for _ in range(n):
            trial = s.ask()
            x = trial.suggest_float("x", 0.0, 1.0)
            s.tell(trial, [x, (x - 0.3) ** 2])
            values.append(x)
        return values

    original = PicklableNSGAIISampler(seed=3, population_size=4)
    first = study(original, "a")
    head = run(first, 6)
    copy = pickle.loads(dumps(original))
    assert isinstance(copy, PicklableNSGAIISampler)
    locks = [v for v in vars(copy).values() if isinstance(v, type(threading.Lock()))]
    assert locks and all(lock.acquire(blocking=False) for lock in locks)  # fresh, usable
    for lock in locks:
        lock.release()
    # The copy continues where the original stood: the same next suggestions on the same
    # history (its random state came along).
    second = study(copy, "b")
    for trial in first.trials:
        second.add_trial(trial)
    assert run(second, 6) == run(first, 6)
    assert len(set(head)) == len(head)
