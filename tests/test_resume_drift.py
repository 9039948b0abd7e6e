"""`raystudy resume` says, before training anything, when the code version or the data and
split a trial reads differ from what the study's runs recorded. A real MLflow store holding
a study's parent run and a trial run with its dataset input, as a study writes them."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny import SMOKE, tiny

from raystudy.checks import load_spec
from raystudy.data import get_dataset
from raystudy.data.splits.registry import split_tag
from raystudy.lineage import data_input
from raystudy.scoring import build_split
from raystudy.study.drift import current_digests, resume_warnings
from raystudy.study.folder import StudyInfo
from raystudy.tags import VERSION_TAG
from raystudy.terminal.runs import warn_of_drift
from raystudy.tracking.study_run import StudyTracker, default_uri
from raystudy.tracking.trial_run import TrialRun


def _recorded_study(tmp_path: Path, overrides: list[str], version: str) -> StudyInfo:
    """A study folder whose store holds what `run` recorded with `overrides` and `version`."""
    spec = load_spec(SMOKE, tiny("drift", *overrides))
    folder = tmp_path / "drift"
    folder.mkdir()
    uri = default_uri(folder)
    tracker = StudyTracker.start(uri, "drift", folder / "mlartifacts", tags={VERSION_TAG: version})
    config = spec.trials()[0]
    split = build_split(config, get_dataset(config.dataset.name, **config.dataset.options))
    data = data_input(config.dataset.name, config.dataset.options, split_tag(config.split), split)
    run = TrialRun.open(
        uri, tracker.experiment_id, "t0", "drift_0", {}, {}, parent_run_id=tracker.parent_run_id
    )
    run.log_dataset(data.name, data.digest, data.source, data.profile)
    info = StudyInfo("drift", folder, uri, tracker.experiment_id, tracker.parent_run_id, 8, 8)
    info.write()
    (folder / "spec.yaml").write_text(spec.model_dump_json())
    return info


def test_nothing_changed_says_nothing(tmp_path: Path) -> None:
    info = _recorded_study(tmp_path, ["split=iid"], "1.0+abc")
    spec = load_spec(SMOKE, tiny("drift", "split=iid"))
    assert resume_warnings(info, spec, "1.0+abc") == []


def test_another_code_version_is_said(tmp_path: Path) -> None:
    info = _recorded_study(tmp_path, ["split=iid"], "1.0+abc")
    spec = load_spec(SMOKE, tiny("drift", "split=iid"))
    said = resume_warnings(info, spec, "1.1+def")
    assert len(said) == 1 and "ran with raystudy 1.0+abc and resumes with 1.1+def" in said[0]


def test_a_split_under_another_name_is_a_new_cell_not_a_change(tmp_path: Path) -> None:
    info = _recorded_study(tmp_path, ["split=iid"], "1.0+abc")
    moved = load_spec(SMOKE, tiny("drift", "split=dittadi_hues"))
    assert "color_dsprites/iid" not in current_digests(moved)
    assert resume_warnings(info, moved, "1.0+abc") == []


def test_a_changed_digest_under_the_same_name_is_said_before_the_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Dittadi's hue split: the same name, other held-out hues (as if its default had changed
    # between the run and the resume), another digest
    info = _recorded_study(
        tmp_path, ["dataset={name: color_dsprites}", "split=dittadi_hues"], "1.0+abc"
    )
    spec = load_spec(
        SMOKE,
        tiny(
            "drift",
            "dataset={name: color_dsprites}",
            "split={name: dittadi_hues, options: {held_out: paper}}",
        ),
    )
    said = resume_warnings(info, spec, "1.0+abc")
    assert len(said) == 1 and "is not what the study's trials recorded" in said[0], said
    (info.study_dir / "spec.yaml").write_text(spec.model_dump_json())
    warn_of_drift(info, info.study_dir)
    assert "Warning: the data or split" in capsys.readouterr().err
