"""Property: whatever a study file holds, `load_spec` returns a StudySpec or raises SpecError.

Random YAML documents (nested mappings, lists and scalars, dumped with `yaml.safe_dump`), raw
random text and bytes, and random mutations of the shipped search spaces (a key deleted, a
value replaced by a random scalar, list or mapping, a key renamed) go through the real loader,
data checks included. Any other exception (a TypeError deep in a validator, a RecursionError,
a crash while building a dataset or split) fails the test with the example that caused it.

Integers are drawn small: a valid spec of 10^9 random-search trials legitimately takes long to
expand, which is not what this test is about (tests/reliability/test_bad_spec.py checks the
trial limit).
"""

from __future__ import annotations

import copy
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from raystudy.checks import load_spec
from raystudy.data import DATASETS, SPLITS
from raystudy.models import ARCHITECTURES, OBJECTIVES
from raystudy.spec import SpecError, StudySpec

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "search_spaces").glob("*.yaml"))
RAW = {path.name: yaml.safe_load(path.read_text()) for path in SHIPPED}


def _field_names(model: type[BaseModel]) -> set[str]:
    names = set(model.model_fields)
    for field in model.model_fields.values():
        for t in typing.get_args(field.annotation) or (field.annotation,):
            if isinstance(t, type) and issubclass(t, BaseModel):
                names |= _field_names(t)
    return names


# Words the loader knows, so random documents reach past "unknown field" often.
FIELDS = sorted(
    _field_names(StudySpec)
    | {"encoder", "scenarios", "train", "test", "heldout", "ood_factors", "domain", "hue"}
    | {"pos_x", "shape", "all", "any", "not", "random", "in", "ge", "le", "p", "uniform"}
    | {"loguniform", "int", "choice", "path", "resolution", "real_path", "factor_sizes"}
)
NAMES = sorted({*DATASETS, *SPLITS, *OBJECTIVES, *ARCHITECTURES, "dci", "mig", "gbt", "sim"})

SETTINGS = settings(
    max_examples=80,
    deadline=None,
    database=None,  # no .hypothesis/ folder in the checkout; a failure prints its example
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

text = st.text(st.characters(codec="utf-8"), max_size=12)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 300),
    st.floats(allow_nan=True, allow_infinity=True),
    text,
    st.sampled_from(NAMES),
)
keys = st.one_of(st.sampled_from(FIELDS), text, st.integers(-1, 3))
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


def loads_or_spec_error(path: Path) -> None:
    try:
        spec = load_spec(path)
    except SpecError as exc:
        assert str(path) in str(exc)  # every error names the file
        return
    assert isinstance(spec, StudySpec)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@SETTINGS
@given(doc=st.dictionaries(keys, values, max_size=6), named=st.booleans())
def test_random_yaml_documents(folder: Path, doc: dict[Any, Any], named: bool) -> None:
    if named:
        doc["name"] = "fuzz"  # past the one required field, into the rest
    path = folder / "doc.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    loads_or_spec_error(path)


@SETTINGS
@given(
    blob=st.one_of(st.binary(max_size=200), text.map(str.encode), values.map(repr).map(str.encode))
)
def test_random_text_and_bytes(folder: Path, blob: bytes) -> None:
    path = folder / "blob.yaml"
    path.write_bytes(blob)
    loads_or_spec_error(path)


def _locations(node: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key or index) pair inside a document."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in list(items):
        out.append((node, key))
        if isinstance(value, dict | list):
            _locations(value, out)
    return out


def mutate(doc: dict[str, Any], data: st.DataObject) -> None:
    """One random edit: delete a key, replace a value, or rename a key."""
    places = _locations(doc, [])
    parent, key = places[data.draw(st.integers(0, len(places) - 1), label="where")]
    op = data.draw(st.sampled_from(["delete", "replace", "rename"]), label="op")
    if op == "delete":
        del parent[key]
    elif op == "rename" and isinstance(parent, dict):
        parent[data.draw(keys, label="new key")] = parent.pop(key)
    else:
        parent[key] = data.draw(values, label="new value")


@settings(SETTINGS, max_examples=150)
@given(name=st.sampled_from(sorted(RAW)), data=st.data())
def test_mutated_shipped_search_spaces(folder: Path, name: str, data: st.DataObject) -> None:
    doc = copy.deepcopy(RAW[name])
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        if doc:
            mutate(doc, data)
    path = folder / name
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    loads_or_spec_error(path)


def test_the_shipped_search_spaces_load_unmutated() -> None:
    # The property's starting points are valid: the mutations are what make them bad.
    assert len(SHIPPED) >= 6
    for path in SHIPPED:
        assert isinstance(load_spec(path), StudySpec)
