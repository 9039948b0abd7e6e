"""bench.store_writes on a real sqlite store: what its writers send is what the store holds
(heavy: ~20-40 s on 2 cores, of which a fresh store's migrations ~8 s and each writer's imports
~4 s), and a store's knee is where its writes/s stop rising."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench/ is not an installed package

from bench._trial_writes import TrialShape, schedule  # noqa: E402
from bench.store_writes import Store, cell, knee  # noqa: E402


@pytest.mark.heavy
def test_two_writers_store_every_write_they_send(tmp_path: Path) -> None:
    shape = TrialShape(
        params={"model.beta": "4", "train.steps": "20", "seed": "0"},
        tags={"raystudy.study": "bench"},
        lineage={"raystudy.device": "cpu"},
        data=("toy/iid", "0123456789abcdef", {"dataset": "toy"}, {"grid_combinations": 6}),
        train_keys=("train/kl", "train/loss"),
        report_steps=(10, 20),
        final_keys=("dis/mig", "eval/recon", "eval/elbo"),
        final_step=20,
        system_points=1,
    )
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    row = cell(Store("sqlite", uri, uri), writers=2, runs=1, shape=shape, folder=tmp_path)
    assert row["errors"] == 0, row["error_examples"]
    assert row["stored"]["runs"] == row["stored"]["finished"] == 2
    # 2 runs x (2 keys x 2 reports + 3 final scores + one point of the machine's system keys)
    system_keys = (row["sent"]["metrics"] - 2 * 7) / 2
    assert system_keys >= 1 and system_keys.is_integer()
    assert row["stored"]["metrics"] == row["sent"]["metrics"]
    assert row["stored"]["params"] == row["sent"]["params"] == 2 * 3
    assert row["stored"]["tags"] >= row["sent"]["tags"] == 2 * (1 + 1 + 3)
    assert row["writes"] == sum(row["stored"][k] for k in ("metrics", "params", "tags"))
    assert row["wall_s"] > 0 and row["writes_per_s"] == row["writes"] / row["wall_s"]
    # per run: open, tags, dataset, 2 reports, final, 1 system point, finish
    assert row["logging_calls"] == 2 * 8
    assert row["p50_ms"] <= row["p99_ms"]


def _row(writers: int, rate: float, p99: float = 50.0, errors: int = 0) -> dict:
    return {"writers": writers, "writes_per_s": rate, "p99_ms": p99, "errors": errors}


def test_the_knee_is_the_last_writer_count_that_still_raised_writes() -> None:
    flat = knee([_row(1, 100), _row(2, 190), _row(4, 200), _row(8, 400)])
    assert (flat["keeps_up_to"], flat["stops_at"]) == (2, 4)
    assert (flat["best_writes_per_s"], flat["best_at"]) == (400, 8)
    slow = knee([_row(1, 100), _row(2, 300, p99=600.0)])
    assert (slow["keeps_up_to"], slow["stops_at"]) == (1, 2) and "p99" in slow["why"]
    failing = knee([_row(1, 100), _row(2, 300, errors=3)])
    assert failing["stops_at"] == 2 and "errors" in failing["why"]
    rising = knee([_row(2, 100), _row(1, 50), _row(4, 300)])
    assert (rising["keeps_up_to"], rising["stops_at"]) == (4, None)


def test_system_points_are_spread_over_the_reports_and_the_last_ends_the_trial() -> None:
    for reports, points in [(6, 2), (20, 6), (0, 3), (3, 7)]:
        after = schedule(reports, points)
        assert len(after) == reports + 1 and sum(after) == points
        assert after[-1] >= 1
