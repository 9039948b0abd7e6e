"""Trial names: what Tune pickles into every trial's saved state must not grow with the study."""

from __future__ import annotations

import pickle
from pathlib import Path
from types import SimpleNamespace

from raystudy.tune.points import LABELS_FILE, TrialNamer, write_labels


def trial(config: dict, trial_id: str = "abc") -> SimpleNamespace:
    """What a name creator reads of Tune's Trial: its config and id."""
    return SimpleNamespace(config=config, trial_id=trial_id)


def test_the_namer_pickles_to_its_path_whatever_the_study_size(tmp_path: Path) -> None:
    labels = [f"{i:05d}_seed={i}_beta=4" for i in range(12_600)]
    namer = write_labels(tmp_path / LABELS_FILE, labels)
    assert len(pickle.dumps(namer)) < 300  # a list of the labels would be ~300 KB
    again = pickle.loads(pickle.dumps(namer))
    assert again(trial({"point": 12_599})) == labels[-1]
    assert again(trial({"stack": 7})) == labels[7]
    assert again(trial({"override": {"seed": 3}}, "x1")) == "optuna_x1"


def test_a_rewritten_study_is_named_from_its_new_labels(tmp_path: Path) -> None:
    path = tmp_path / LABELS_FILE
    namer = write_labels(path, ["000_beta=1", "001_beta=4"])
    assert namer(trial({"point": 1})) == "001_beta=4"
    write_labels(path, ["000_seed=0", "001_seed=1", "002_seed=2"])
    assert namer(trial({"point": 2})) == "002_seed=2"
    path.unlink()  # the folder moved or was cleaned: the index still names the trial
    assert TrialNamer(path)(trial({"point": 2})) == "002"
