"""Schott splits read from index files: written out and read back they are the same split, the
published layout (a pair of (N, K) label arrays) reads the same, and a bad file is refused
naming the file, the member and what is allowed, at spec load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from raystudy.checks import load_spec
from raystudy.data import GroundTruthDataset, Split, get_dataset, get_split
from raystudy.data.splits.index_files import write_split_indices
from raystudy.data.splits.papers.schott import KINDS
from raystudy.data.splits.registry import SplitOptionError, split_tag
from raystudy.data.splits.selectors import SelectorError, evaluate
from raystudy.scoring import build_split
from raystudy.spec import SpecError


@pytest.fixture(scope="module")
def ds() -> GroundTruthDataset:
    return get_dataset("dsprites", orientation_bins=10)


def grid(ds: GroundTruthDataset) -> np.ndarray:
    axes = np.meshgrid(*[np.arange(n) for n in ds.factors.sizes], indexing="ij")
    return np.stack(axes, -1).reshape(-1, ds.factors.num_factors)


def assert_same_split(a: Split, b: Split, everything: np.ndarray) -> None:
    assert a.name == b.name and a.roles == b.roles
    for name, scn in a.scenarios.items():
        other = b.scenarios[name]
        assert (scn.domain, scn.ood_factors, scn.r2_variance) == (
            other.domain,
            other.ood_factors,
            other.r2_variance,
        )
    for role in a.roles:
        assert np.array_equal(a.mask(role, everything), b.mask(role, everything)), role


@pytest.mark.parametrize("kind", KINDS)
def test_a_split_written_out_and_read_back_is_the_same_split(
    ds: GroundTruthDataset, kind: str, tmp_path: Path
) -> None:
    built = get_split(f"schott_{kind}", ds)
    path = write_split_indices(built, tmp_path / "split.npz")
    read = get_split(f"schott_{kind}", ds, {"index_file": str(path)})
    everything = grid(ds)
    assert_same_split(built, read, everything)
    # the sets are the file's: sorted flat positions of train and test
    with np.load(path) as npz:
        train, test = npz["train"], npz["test"]
    flat = np.arange(everything.shape[0])
    assert np.array_equal(flat[read.mask("encoder", everything)], train)
    assert np.array_equal(flat[read.mask("heldout", everything)], test)
    if kind in ("extrapolation", "interpolation"):
        assert len(read.scenarios) > 1  # single-factor scenarios recovered from the file


def test_the_published_layout_reads_as_the_same_split(
    ds: GroundTruthDataset, tmp_path: Path
) -> None:
    """Schott et al. publish a pair of (N, K) factor-index arrays, member `arr_0`, shuffled."""
    built = get_split("schott_extrapolation", ds)
    everything = grid(ds)
    rng = np.random.default_rng(0)
    files = {}
    for part, role in (("train", "encoder"), ("test", "heldout")):
        rows = everything[built.mask(role, everything)]
        files[f"{part}_file"] = str(tmp_path / f"dsprites_extrapolation_{part}_labels.npz")
        np.savez(files[f"{part}_file"], rows[rng.permutation(len(rows))])
    assert_same_split(built, get_split("schott_extrapolation", ds, files), everything)
    # a .npy of flat positions is read the same
    flat = np.flatnonzero(built.mask("heldout", everything))
    np.save(tmp_path / "test.npy", flat)
    files["test_file"] = str(tmp_path / "test.npy")
    assert_same_split(built, get_split("schott_extrapolation", ds, files), everything)


def bad_file(tmp_path: Path, **members: np.ndarray) -> str:
    path = tmp_path / "bad.npz"
    np.savez(path, **members)
    return str(path)


@pytest.mark.parametrize(
    ("members", "words"),
    [
        ({"train": np.arange(10)}, ["no member 'test' or 'test_indices'", "allowed: members"]),
        (
            {"train": np.arange(10), "test": np.array([10, 10**9])},
            ["member 'test'", "grid position 1000000000 is out of range", "allowed 0..184319"],
        ),
        (
            {"train": np.arange(10), "test": np.arange(5, 20)},
            ["member 'test'", "5 combinations are also in the train set", "allowed: disjoint"],
        ),
        (
            {"train": np.arange(10) + 0.5, "test": np.arange(10, 20)},
            ["member 'train'", "dtype float64", "allowed: integer arrays"],
        ),
        (
            {"train": np.array([0, 1, 1]), "test": np.arange(10, 20)},
            ["member 'train'", "repeated combinations", "each combination once"],
        ),
        (
            {"train": np.array([[1, 0, 0, 0, 0], [0, 0, 10, 0, 0]]), "test": np.arange(2)},
            ["member 'train'", "factor 'orientation'", "allowed 0..9"],
        ),
    ],
)
def test_a_bad_index_file_is_refused_naming_file_member_and_what_is_allowed(
    ds: GroundTruthDataset, tmp_path: Path, members: dict[str, np.ndarray], words: list[str]
) -> None:
    path = bad_file(tmp_path, **members)
    with pytest.raises(SplitOptionError) as info:
        get_split("schott_composition", ds, {"index_file": path})
    assert info.value.option == "index_file"
    assert path in str(info.value)
    for word in words:
        assert word in str(info.value), str(info.value)


def test_options_are_checked_by_name_and_paths_must_be_absolute(ds: GroundTruthDataset) -> None:
    with pytest.raises(SplitOptionError, match="no option 'index_fle'; allowed: index_file"):
        get_split("schott_random", ds, {"index_fle": "/x.npz"})
    with pytest.raises(SplitOptionError, match="takes none"):
        get_split("iid", ds, {"index_file": "/x.npz"})
    with pytest.raises(SplitOptionError, match="relative path"):
        get_split("schott_random", ds, {"index_file": "split.npz"})
    with pytest.raises(SplitOptionError, match="train_file and test_file together"):
        get_split("schott_random", ds, {"train_file": "/a.npy"})


def test_a_study_names_its_split_file_and_a_bad_one_is_refused_at_load(tmp_path: Path) -> None:
    ds = get_dataset("dsprites", orientation_bins=10)
    good = write_split_indices(get_split("schott_composition", ds), tmp_path / "good.npz")
    np.savez(tmp_path / "bad.npz", train=np.arange(4), test=np.arange(2, 6))
    spec = tmp_path / "study.yaml"
    head = "name: s\ndataset: {name: dsprites, options: {orientation_bins: 10}}\n"
    spec.write_text(head + f"split: {{name: schott_composition, options: {{index_file: {good}}}}}")
    trial = load_spec(spec).trials()[0]
    assert trial.split == {"name": "schott_composition", "options": {"index_file": str(good)}}
    assert_same_split(get_split("schott_composition", ds), build_split(trial, ds), grid(ds))
    assert split_tag(trial.split) == "schott_composition"
    spec.write_text(
        head + f"split: {{name: schott_composition, options: {{index_file: {tmp_path}/bad.npz}}}}"
    )
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    message = str(info.value)
    assert f"{spec}: split.options.index_file: {tmp_path}/bad.npz: member 'test'" in message
    spec.write_text(head + "split: {name: schott_compositon, options: {}}")
    with pytest.raises(SpecError, match="did you mean 'schott_composition'"):
        load_spec(spec)


def test_a_grid_index_selector_selects_its_positions_and_refuses_bad_ones(
    ds: GroundTruthDataset,
) -> None:
    everything = grid(ds)
    positions = np.array([0, 7, 184319])
    mask = evaluate({"grid_index": positions}, everything, ds.factors)
    assert np.flatnonzero(mask).tolist() == positions.tolist()
    with pytest.raises(SelectorError, match="grid position 184320 is out of range"):
        evaluate({"grid_index": [184320]}, everything[:1], ds.factors)
    with pytest.raises(SelectorError, match="integer grid positions"):
        evaluate({"grid_index": [0.5]}, everything[:1], ds.factors)
