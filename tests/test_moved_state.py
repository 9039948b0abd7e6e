"""Tune's pickled state pointed at a moved study folder (raystudy.tune.moved_state): every
string that holds the old folder as a path prefix is rewritten, in every pickle protocol and in
pickles nested in bytes, and nothing else changes. A real interrupted study moved and resumed
is in the fault tier (tests/reliability/test_faults_driver.py)."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import cloudpickle
import pytest

from raystudy.tune.moved_state import point_tune_state_at, rewrite_pickle_paths

OLD, NEW = "/data/studies/alpha", "/mnt/shared/a/much/longer/place/for/studies/alpha"


@dataclass
class Namer:
    path: str


def state(old: str) -> dict:
    """What Tune's pickles hold, in kind: paths under the folder, the folder itself, a URL
    naming a file in it, strings that only look alike, and other values."""
    return {
        "storage_path": old,
        "labels": Namer(f"{old}/trial_labels.json"),
        "optuna": f"sqlite:///{old}/optuna.db",
        "sibling": f"{old}2/other",
        "backup": f"{old}.bak/x",
        "long": f"{old}/" + "x" * 300,
        "numbers": [1, 2.5, None, b"raw"],
        "same": [f"{old}/tune"] * 3,  # one memoised string, used thrice
    }


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_path_under_the_old_folder_is_rewritten_and_nothing_else(protocol: int) -> None:
    data = pickle.dumps(state(OLD), protocol=protocol)
    rewritten, count = rewrite_pickle_paths(data, OLD, NEW)
    got = pickle.loads(rewritten)
    want = state(NEW)
    want["sibling"], want["backup"] = f"{OLD}2/other", f"{OLD}.bak/x"  # not the folder
    assert got == want
    assert count >= 5


def test_a_pickle_inside_bytes_is_rewritten_too() -> None:
    inner = cloudpickle.dumps(lambda: f"{OLD}/tune")  # Tune keeps specs cloudpickled
    outer = pickle.dumps({"blob": inner, "other": f"{OLD}/x"}, protocol=5)
    rewritten, count = rewrite_pickle_paths(outer, OLD, NEW)
    got = pickle.loads(rewritten)
    assert count == 2 and got["other"] == f"{NEW}/x"
    assert pickle.loads(got["blob"])() == f"{NEW}/tune"


def test_a_pickle_with_nothing_to_change_comes_back_as_it_was() -> None:
    data = pickle.dumps({"a": "/elsewhere/x", "b": 3}, protocol=4)
    assert rewrite_pickle_paths(data, OLD, NEW) == (data, 0)


def test_the_tune_folder_and_its_backup_are_rewritten_and_other_files_left(
    tmp_path: Path,
) -> None:
    tune = tmp_path / "tune"
    (tune / ".last-good").mkdir(parents=True)
    (tune / "000_seed=0").mkdir()
    (tune / "tuner.pkl").write_bytes(pickle.dumps(state(OLD)))
    (tune / "basic-variant-state-x.json").write_bytes(pickle.dumps(state(OLD)))
    (tune / ".last-good" / "basic-variant-state-x.json").write_bytes(pickle.dumps(state(OLD)))
    text = f'{{"path": "{OLD}/tune"}}'
    (tune / "experiment_state-x.json").write_text(text)  # JSON: Tune updates it itself
    trial_file = tune / "000_seed=0" / "params.pkl"
    trial_file.write_bytes(pickle.dumps(f"{OLD}/in/a/trial"))
    counts = point_tune_state_at(tune, Path(OLD), Path(NEW))
    assert set(counts) == {
        "tuner.pkl",
        "basic-variant-state-x.json",
        ".last-good/basic-variant-state-x.json",
    }
    for name in counts:
        assert pickle.loads((tune / name).read_bytes())["optuna"] == f"sqlite:///{NEW}/optuna.db"
    assert (tune / "experiment_state-x.json").read_text() == text
    assert pickle.loads(trial_file.read_bytes()) == f"{OLD}/in/a/trial"
    assert not list(tune.rglob("*.relocating"))
    assert point_tune_state_at(tune, Path(OLD), Path(NEW)) == {}  # a second time: nothing


def test_a_cut_short_pickle_is_refused_naming_the_file(tmp_path: Path) -> None:
    tune = tmp_path / "tune"
    tune.mkdir()
    (tune / "tuner.pkl").write_bytes(pickle.dumps(state(OLD))[:40])
    with pytest.raises(ValueError, match=r"tuner\.pkl: cannot be read as a pickle"):
        point_tune_state_at(tune, Path(OLD), Path(NEW))
