"""Named splits and splits written in a study YAML: the registry of built-in splits
(`register_split`, `get_split`, with the options a split takes), `split_from_spec` for a
split spelled out in the spec, `split_from_config` for any of the forms a spec's `split` takes,
and `split_tag`, what a run's `split` tag says of each. A split may let the trial's seed decide its
sets (`register_split(..., seeded=)`: Dittadi's `held_out: per_seed`); `split_uses_seed` says
whether a spec's split does, and `split_params` what a split resolved, as a run's params.

The built-in splits register themselves from their own modules (`raystudy.data.splits.iid`
and the paper splits of `raystudy.data.splits.papers`); the machinery they are built with is
`raystudy.data.splits.split`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.core.registry import DATASETS
from raystudy.data.splits.selectors import SelectorError
from raystudy.data.splits.split import Scenario, Split
from raystudy.registry import Registry, unknown_name_message

# factory(dataset, **options) -> Split; a split without options is called with the dataset only.
SplitFactory = Callable[..., Split]
SPLITS: Registry[SplitFactory] = Registry("split")
_REQUIRED_FACTORS: dict[str, tuple[str, ...]] = {}
_OPTIONS: dict[str, tuple[str, ...]] = {}
#: A split's options -> whether the trial's seed decides its sets; such a factory takes `seed=`.
SeedUse = Callable[[Mapping[str, Any]], bool]
_SEEDED: dict[str, SeedUse] = {}
#: A split's options and the trial's seed -> what the split resolved from them, as MLflow params.
SplitParams = Callable[[Mapping[str, Any], int], dict[str, str]]
_PARAMS: dict[str, SplitParams] = {}
#: The fields of a built-in split with options, `{name: schott_composition, options: {...}}`.
NAMED_FIELDS = ("name", "options")


class SplitOptionError(ValueError):
    """A split option that is unknown, or whose value (a file it names) cannot be used;
    ``option`` names it, so a spec error can point at ``split.options.<option>``."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


def split_tag(split: str | Mapping[str, Any]) -> str:
    """The run tag `split`: a built-in split's name (also when given options), or "custom"
    for one written in the spec."""
    if isinstance(split, str):
        return split
    name = split.get("name")
    return name if "options" in split and isinstance(name, str) else "custom"


def register_split(
    name: str,
    requires: tuple[str, ...] = (),
    options: tuple[str, ...] = (),
    seeded: SeedUse | None = None,
    params: SplitParams | None = None,
) -> Callable[[SplitFactory], SplitFactory]:
    """Decorator: make ``factory(dataset, **options) -> Split`` available as
    ``get_split(name, ds, options)``; ``requires`` names the factors the split needs, for a
    clear error on other datasets, and ``options`` the keyword options it takes. With
    ``seeded`` (options -> whether the seed decides the sets) the factory also takes the
    trial's seed, ``seed=`` (None where there is no trial); ``params`` (options, seed -> str
    values) says what the split resolved, for the trial's run to record."""

    def decorate(factory: SplitFactory) -> SplitFactory:
        SPLITS.register(name)(factory)
        _REQUIRED_FACTORS[name] = tuple(requires)
        _OPTIONS[name] = tuple(options)
        if seeded is not None:
            _SEEDED[name] = seeded
        if params is not None:
            _PARAMS[name] = params
        return factory

    return decorate


def get_split(
    name: str,
    ds: GroundTruthDataset,
    options: Mapping[str, Any] | None = None,
    seed: int | None = None,
) -> Split:
    """The built-in split ``name`` over dataset ``ds``, with ``options`` if it takes any;
    ``seed``, the trial's, reaches only a split registered ``seeded``."""
    factory = SPLITS.get(name)
    allowed = _OPTIONS[name]
    for option in options or {}:
        if option not in allowed:
            raise SplitOptionError(
                f"split {name!r} has no option {option!r}; "
                + (f"allowed: {', '.join(allowed)}" if allowed else "it takes none"),
                option=str(option),
            )
    for factor in _REQUIRED_FACTORS[name]:
        if factor not in ds.factors.names:
            having = _datasets_with_factor(factor)
            raise ValueError(
                f"split {name!r} needs factor {factor!r}, which dataset {ds.name!r} lacks "
                f"(its factors: {', '.join(ds.factors.names)}); datasets with {factor!r}: "
                f"{', '.join(having) or 'none registered'}"
            )
    kwargs = dict(options or {})
    if name in _SEEDED:
        kwargs["seed"] = seed
    return factory(ds, **kwargs)


def _named(split: str | Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """A built-in split's name and options, or None for a split written with selectors."""
    if isinstance(split, str):
        return split, {}
    name = split.get("name")
    if "options" in split and isinstance(name, str):
        options = split["options"] or {}
        return name, options if isinstance(options, Mapping) else {}
    return None


def split_uses_seed(split: str | Mapping[str, Any]) -> bool:
    """Whether the trial's seed decides the sets of a spec's ``split`` (a stack's models,
    which share one split, cannot have that)."""
    named = _named(split)
    return named is not None and named[0] in _SEEDED and _SEEDED[named[0]](named[1])


def split_params(split: str | Mapping[str, Any], seed: int) -> dict[str, str]:
    """What a spec's ``split`` resolved for a trial with ``seed`` (e.g. Dittadi's held-out
    hues), as MLflow params; empty for a split that resolves nothing."""
    named = _named(split)
    if named is None or named[0] not in _PARAMS:
        return {}
    return _PARAMS[named[0]](named[1], seed)


def split_from_config(
    split: str | Mapping[str, Any],
    ds: GroundTruthDataset,
    where: str = "split",
    seed: int | None = None,
) -> Split:
    """The split a spec's ``split`` field names, in any of its forms: a built-in split's name
    (``dittadi_hues``), a built-in split with options (``{name: schott_composition, options:
    {index_file: ...}}``; a mapping with ``options``), or a split written out with selectors
    (:func:`split_from_spec`). ``seed``, the trial's, reaches a split registered ``seeded``."""
    if isinstance(split, str):
        return get_split(split, ds, seed=seed)
    if isinstance(split, Mapping) and "options" in split:
        _reject_unknown_fields(split, NAMED_FIELDS, where)
        name, options = split.get("name"), split["options"] or {}
        if not isinstance(name, str):
            raise SelectorError(
                f"{where}.name: a split with options is a built-in split; name it "
                f"({', '.join(n for n in SPLITS if _OPTIONS[n])} take options)"
            )
        if not isinstance(options, Mapping):
            raise SelectorError(f"{where}.options: expected a mapping, got {options!r}")
        return get_split(name, ds, options, seed=seed)
    return split_from_spec(split, ds, where)


def _datasets_with_factor(factor: str) -> list[str]:
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
