"""Every shipped study validates, and the trial count its header states is the true one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from raystudy.checks import load_spec

SPACES = sorted((Path(__file__).resolve().parents[1] / "search_spaces").glob("*.yaml"))


def test_the_studies_the_papers_need_are_shipped() -> None:
    names = {p.stem for p in SPACES}
    assert {
        "smoke",
        "laptop",
        "dittadi2021",
        "schott2022",
        "montero2021",
        "montero2021_composition",
        "montero2022",
        "locatello2019",
        "optuna_transfer",
    } <= names


@pytest.mark.parametrize("path", SPACES, ids=[p.stem for p in SPACES])
def test_shipped_study_validates_and_states_its_trial_count(path: Path) -> None:
    spec = load_spec(path)
    assert spec.name == path.stem
    header = "\n".join(line for line in path.read_text().splitlines() if line.startswith("#"))
    stated = re.search(r"^# Trials: (.*)$", header, re.MULTILINE)
    assert stated, f"{path.name} does not state its trial count in a '# Trials:' line"
    text = stated.group(1)
    number = re.search(r"= (\d+)", text) if "=" in text else re.match(r"(\d+)", text)
    assert number and int(number.group(1)) == spec.num_trials(), (text, spec.num_trials())
