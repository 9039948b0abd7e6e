"""`raystudy datasets`: the catalogue and the preview grid."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image
from typer.testing import CliRunner

from raystudy.cli import app
from raystudy.data import DATASETS, get_dataset
from raystudy.data.preview import GAP, preview_grid

runner = CliRunner()


def test_datasets_lists_every_dataset_with_factors_sizes_and_domains() -> None:
    result = runner.invoke(app, ["datasets"])
    assert result.exit_code == 0, result.output
    out = result.output
    for name in DATASETS.names():
        assert f"\n{name}  [" in f"\n{out}"
    assert "floor_hue 10, wall_hue 10, object_hue 10, scale 8, shape 4, orientation 15" in out
    assert "shape 3, scale 6, orientation 40, pos_x 32, pos_y 32, hue 12" in out
    assert "upper_joint 30, middle_joint 30, lower_joint 30, cube_x 30, cube_y 30" in out
    assert "object_color 6, object_shape 6, object_size 2, camera_height 3" in out
    assert "shapes3d  [procedural; domains: sim, real, photo; 480,000 combinations]" in out
    assert "mpi3d_file  [file (option path=...); domains: sim, real;" in out
    assert "mpi3d  [procedural; domains: sim, real, photo; 1,036,800 combinations]" in out


def test_show_writes_one_row_per_domain(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "grid.png"
    result = runner.invoke(
        app, ["datasets", "show", "shapes3d", "--out", str(out), "--n", "3", "--seed", "4"]
    )
    assert result.exit_code == 0, result.output
    assert "row 1: sim, row 2: real, row 3: photo" in result.output
    image = np.asarray(Image.open(out))
    assert image.shape == (3 * 64 + 4 * GAP, 3 * 64 + 4 * GAP, 3)
    # The tiles are the dataset's renders of the same samples in each domain.
    assert np.array_equal(image, preview_grid(get_dataset("shapes3d"), 3, 4))
    sim = image[GAP : GAP + 64, GAP : GAP + 64].astype(float)
    real = image[2 * GAP + 64 : 2 * GAP + 128, GAP : GAP + 64].astype(float)
    assert np.abs(sim - real).mean() > 5  # visibly different, in 0..255 units


def test_show_passes_dataset_options(tmp_path: Path) -> None:
    out = tmp_path / "f.png"
    result = runner.invoke(
        app, ["datasets", "show", "finger", "--out", str(out), "--n", "2", "-O", "resolution=128"]
    )
    assert result.exit_code == 0, result.output
    assert Image.open(out).size == (2 * 128 + 3 * GAP, 3 * 128 + 4 * GAP)


def test_show_errors_are_one_clear_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["datasets", "show", "shapes3", "--out", str(tmp_path / "x.png")])
    assert result.exit_code == 2
    assert (
        "unknown dataset 'shapes3'" in result.output and "did you mean 'shapes3d'" in result.output
    )
    result = runner.invoke(app, ["datasets", "show", "dsprites_file"])
    assert result.exit_code == 2 and "needs option(s) path" in result.output
    result = runner.invoke(app, ["datasets", "show", "dsprites", "-O", "resolution"])
    assert result.exit_code == 2 and "expected key=value" in result.output
    missing = tmp_path / "none.h5"
    result = runner.invoke(app, ["datasets", "show", "shapes3d_file", "-O", f"path={missing}"])
    assert result.exit_code == 2 and "none.h5' not found" in result.output
    assert not (tmp_path / "x.png").exists()
