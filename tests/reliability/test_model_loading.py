"""Loading a logged encoder runs no code from its files: `load_encoder` has MLflow refuse a
pickled model and check a `.pt2` archive for pickle payloads (raystudy/tracking/models.py).
Real MLflow model folders; a tampered archive whose sample-input record is a pickle that
writes a file when unpickled, which MLflow's default settings do unpickle."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import mlflow.pytorch
import pytest
import torch
from mlflow.exceptions import MlflowException

from raystudy.tracking.models import ALLOW_PICKLE, load_encoder

# Each load in a fresh process, where nothing of the test's own imports can help it.
pytestmark = pytest.mark.processes


def _saved(folder: Path, fmt: str) -> Path:
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    mlflow.pytorch.save_model(
        model, folder, serialization_format=fmt, input_example=torch.zeros(2, 4).numpy()
    )
    return folder


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (exec, (f"open({str(self.marker)!r}, 'w').write('code ran')",))


def _tampered(clean: Path, into: Path, marker: Path) -> Path:
    shutil.copytree(clean, into)
    archive = into / "data" / "model.pt2"
    with (
        zipfile.ZipFile(clean / "data" / "model.pt2") as source,
        zipfile.ZipFile(archive, "w") as out,
    ):
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith("sample_inputs/model.pt"):
                data = pickle.dumps(_Payload(marker))
            out.writestr(info, data)
    return into


def test_a_clean_pt2_encoder_loads_and_the_setting_is_restored(tmp_path: Path) -> None:
    model = load_encoder(str(_saved(tmp_path / "clean", "pt2")))
    assert model(torch.ones(5, 4)).shape == (5, 3)
    assert ALLOW_PICKLE not in os.environ


def test_a_pickle_payload_in_the_archive_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    bad = _tampered(_saved(tmp_path / "clean", "pt2"), tmp_path / "bad", marker)
    os.environ[ALLOW_PICKLE] = "true"  # a user's environment cannot switch the check off
    try:
        with pytest.raises(MlflowException, match="not a pickle-free payload"):
            load_encoder(str(bad))
        assert os.environ[ALLOW_PICKLE] == "true"
    finally:
        del os.environ[ALLOW_PICKLE]
    assert not marker.exists()
    # What MLflow's defaults do with the same folder: the payload runs.
    plain = subprocess.run(
        [sys.executable, "-c", "import mlflow.pytorch, sys; mlflow.pytorch.load_model(sys.argv[1])",
         str(bad)],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != ALLOW_PICKLE},
        timeout=300,
    )  # fmt: skip
    assert marker.read_text() == "code ran", plain.stderr[-500:]


def test_a_pickled_model_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MlflowException, match="pickle is disallowed"):
        load_encoder(str(_saved(tmp_path / "pickled", "pickle")))
