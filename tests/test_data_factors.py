"""FactorSpace: grid sampling, normalisation, validation and name lookup."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.data import Factor, FactorSpace


def space() -> FactorSpace:
    return FactorSpace(
        (
            Factor("a", 3, (0.0, 1.0, 2.0)),
            Factor("b", 5, tuple(np.linspace(0, 1, 5).tolist())),
            Factor("c", 1, (7.0,)),
        )
    )


def test_basic_properties() -> None:
    s = space()
    assert s.names == ["a", "b", "c"]
    assert s.sizes == [3, 5, 1]
    assert s.num_factors == 3
    assert s.total == 15
    assert s.index("b") == 1


def test_unknown_name_suggests_and_lists() -> None:
    with pytest.raises(KeyError, match=r"'bb'.*a, b, c.*did you mean 'b'"):
        space().index("bb")


def test_sample_is_uniform_over_the_grid() -> None:
    s = space()
    x = s.sample(30_000, np.random.default_rng(0))
    assert x.shape == (30_000, 3) and x.dtype == np.int64
    s.validate(x)
    for col, size in enumerate(s.sizes):
        freq = np.bincount(x[:, col], minlength=size) / x.shape[0]
        assert np.allclose(freq, 1 / size, atol=0.01)


def test_normalise() -> None:
    s = space()
    got = s.normalise(np.array([[0, 0, 0], [2, 4, 0], [1, 2, 0]]))
    assert np.allclose(got, [[0, 0, 0], [1, 1, 0], [0.5, 0.5, 0]])


def test_ravel_is_row_major() -> None:
    s = space()
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in s.sizes], indexing="ij"), -1)
    assert np.array_equal(s.ravel(grid.reshape(-1, 3)), np.arange(s.total))


@pytest.mark.parametrize(
    ("bad", "pattern"),
    [
        (np.array([[0, 5, 0]]), r"'b'.*5.*0\.\.4"),
        (np.array([[-1, 0, 0]]), r"'a'.*-1.*0\.\.2"),
        (np.array([[0, 0]]), r"shape \(N, 3\)"),
        (np.array([[0.0, 0.0, 0.0]]), "integers"),
    ],
)
def test_validate_rejects(bad: np.ndarray, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        space().validate(bad)


def test_factor_checks_its_values() -> None:
    with pytest.raises(ValueError, match="2 values given for size 3"):
        Factor("x", 3, (0.0, 1.0))
    with pytest.raises(ValueError, match="duplicate"):
        FactorSpace((Factor("x", 1, (0.0,)), Factor("x", 1, (0.0,))))
