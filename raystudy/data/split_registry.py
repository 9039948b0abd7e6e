"""Named splits and splits written in a study YAML: the registry of built-in splits
(`register_split`, `get_split`), `split_from_spec` for a split spelled out in the spec, and
`split_tag`, what a run's `split` tag says of either.

The paper splits register themselves from their own modules (`builtin_splits`, `montero`,
`schott`); the machinery they are built with is `raystudy.data.splits`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from raystudy.data.base import GroundTruthDataset
from raystudy.data.selectors import SelectorError
from raystudy.data.splits import Scenario, Split
from raystudy.registry import Registry, unknown_name_message

SplitFactory = Callable[[GroundTruthDataset], Split]
SPLITS: Registry[SplitFactory] = Registry("split")
_REQUIRED_FACTORS: dict[str, tuple[str, ...]] = {}


def split_tag(split: str | Mapping[str, Any]) -> str:
    """The run tag `split`: a built-in split's name, or "custom" for one written in the spec."""
    return split if isinstance(split, str) else "custom"


def register_split(
    name: str, requires: tuple[str, ...] = ()
) -> Callable[[SplitFactory], SplitFactory]:
    """Decorator: make ``factory(dataset) -> Split`` available as ``get_split(name, ds)``;
    ``requires`` names the factors the split needs, for a clear error on other datasets."""

    def decorate(factory: SplitFactory) -> SplitFactory:
        SPLITS.register(name)(factory)
        _REQUIRED_FACTORS[name] = tuple(requires)
        return factory

    return decorate


def get_split(name: str, ds: GroundTruthDataset) -> Split:
    """The built-in split ``name`` over dataset ``ds``."""
    factory = SPLITS.get(name)
    for factor in _REQUIRED_FACTORS[name]:
        if factor not in ds.factors.names:
            having = _datasets_with_factor(factor)
            raise ValueError(
                f"split {name!r} needs factor {factor!r}, which dataset {ds.name!r} lacks "
                f"(its factors: {', '.join(ds.factors.names)}); datasets with {factor!r}: "
                f"{', '.join(having) or 'none registered'}"
            )
    return factory(ds)


def _datasets_with_factor(factor: str) -> list[str]:
    # Imported here: the registry module is a sibling; splits must work without it filled.
    from raystudy.data.registry import DATASETS

    names = []
    for name, cls in DATASETS.items():
        try:
            ds = cls()
        except Exception:  # a dataset needing options or files cannot answer; skip it
            continue
        if factor in ds.factors.names:
            names.append(name)
    return names


_SPEC_FIELDS = ("name", "encoder", "scenarios", "heldout")
SCENARIO_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_SCENARIO_FIELDS = ("train", "test", "domain", "ood_factors", "train_domain", "r2_variance")


def split_from_spec(spec: Mapping[str, Any], ds: GroundTruthDataset, where: str = "split") -> Split:
    """A user-defined split from the study YAML::

        {name: my_split, encoder: <selector>, heldout: <selector>,   # heldout optional
         scenarios: {<name>: {train: <selector>, test: <selector>,
                              domain: sim, train_domain: sim,         # both optional
                              ood_factors: [hue], r2_variance: sample}}}

    Every selector is checked, every set must be non-empty and ``heldout`` disjoint from the
    encoder set; errors are :class:`SelectorError` naming the field path under ``where``.
    """
    if not isinstance(spec, Mapping):
        raise SelectorError(f"{where}: expected a mapping with {_SPEC_FIELDS}, got {spec!r}")
    _reject_unknown_fields(spec, _SPEC_FIELDS, where)
    name = spec.get("name", "custom")
    raw_scenarios = spec.get("scenarios") or {}
    if not isinstance(raw_scenarios, Mapping):
        raise SelectorError(f"{where}.scenarios: expected a mapping of scenario name to fields")
    scenarios = []
    for scn_name, fields in raw_scenarios.items():
        at = f"{where}.scenarios.{scn_name}"
        # The name becomes part of metric keys (transfer/<scenario>/<probe>/mae) and params,
        # which MLflow restricts and the analysis splits at "/" (and "@", for cells).
        if not re.fullmatch(SCENARIO_NAME, str(scn_name)):
            raise SelectorError(
                f"{where}.scenarios: scenario name {str(scn_name)!r} is not allowed: letters, "
                "digits, '_', '.' and '-', starting with a letter or digit"
            )
        if not isinstance(fields, Mapping):
            raise SelectorError(f"{at}: expected a mapping with {_SCENARIO_FIELDS}")
        _reject_unknown_fields(fields, _SCENARIO_FIELDS, at)
        for required in ("train", "test"):
            if required not in fields:
                raise SelectorError(f"{at}.{required}: missing (a selector is required)")
        ood = fields.get("ood_factors") or ()
        if isinstance(ood, str) or not isinstance(ood, Sequence):
            raise SelectorError(f"{at}.ood_factors: expected a list of factor names")
        scenarios.append(
            Scenario(
                name=str(scn_name),
                train=fields["train"],
                test=fields["test"],
                domain=fields.get("domain", "sim"),
                ood_factors=tuple(ood),
                train_domain=fields.get("train_domain"),
                r2_variance=fields.get("r2_variance", "sample"),
            )
        )
    split = Split(
        str(name), spec.get("encoder"), scenarios, ds, where=where, heldout=spec.get("heldout")
    )
    split.check_nonempty()
    return split


def _reject_unknown_fields(fields: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    for key in fields:
        if key not in allowed:
            raise SelectorError(f"{where}: " + unknown_name_message("field", key, list(allowed)))
