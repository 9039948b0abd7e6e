"""Datasets by name, so a study YAML can say ``dataset: {name: color_dsprites}``."""

from __future__ import annotations

import collections.abc
import functools
import inspect
import os
import types
import typing
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter, ValidationError

from raystudy.data.core.base import GroundTruthDataset
from raystudy.registry import Registry, unknown_name_message

DATASETS: Registry[type[GroundTruthDataset]] = Registry("dataset")

#: Class decorator: make the dataset available as ``get_dataset(name)``.
register_dataset = DATASETS.register


class DatasetOptionError(ValueError):
    """A dataset option that is unknown, missing or of the wrong type; ``option`` names it
    (None: the options as a whole), so a spec error can point at ``dataset.options.<option>``."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


def get_dataset(name: str, **options: Any) -> GroundTruthDataset:
    """Instantiate a registered dataset; unknown names list the known ones, and an unknown,
    missing or mistyped option is a DatasetOptionError (a ValueError) naming the option.

    Option values are checked against the constructor's type hints (``resolution: int``)
    before it runs, so ``resolution: abc`` says so instead of failing deep inside a renderer
    with a TypeError; values pydantic coerces losslessly (``64.0`` -> ``64``) are accepted.
    A constructor that takes ``**options`` passes them on to its base class's, whose options
    are then the dataset's too (a variant adds its own to those of the dataset it varies).
    """
    cls = DATASETS.get(name)
    params = _parameters(cls)
    for key in options:
        if key not in params:
            known = list(params) or ["(none)"]
            raise DatasetOptionError(
                f"dataset {name!r}: " + unknown_name_message("option", key, known), key
            )
    missing = [k for k, p in params.items() if p.default is p.empty and k not in options]
    if missing:
        raise DatasetOptionError(
            f"dataset {name!r} needs option(s) {', '.join(missing)} "
            f"(e.g. dataset: {{name: {name}, options: {{{missing[0]}: ...}}}})",
            missing[0],
        )
    hints = _option_types(cls)
    checked = {}
    for key, value in options.items():
        if key not in hints:
            checked[key] = value
            continue
        try:
            checked[key] = _adapter(hints[key]).validate_python(value)
        except ValidationError:
            raise DatasetOptionError(
                f"dataset {name!r}: option {key!r} must be {_describe(hints[key])}, got {value!r}",
                key,
            ) from None
    return cls(**checked)


def path_options(name: str) -> tuple[str, ...]:
    """The options of dataset ``name`` typed as paths (``str | os.PathLike[str]``)."""
    return tuple(k for k, hint in _option_types(DATASETS.get(name)).items() if _is_path_hint(hint))


def _is_path_hint(hint: Any) -> bool:
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    return any(
        typing.get_origin(a) is os.PathLike for a in (typing.get_args(hint) if union else ())
    )


def _constructors(cls: type) -> list[Callable[..., Any]]:
    """The constructors whose named parameters are the dataset's options, base class first:
    the class's own and, while one passes ``**options`` on, the next one up its MRO."""
    chain = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        chain.append(init)
        if not any(p.kind is p.VAR_KEYWORD for p in inspect.signature(init).parameters.values()):
            break
    return chain[::-1]


@functools.cache
def _parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The dataset's options, in the order its constructors name them (base class first)."""
    return {
        p.name: p
        for init in _constructors(cls)
        for p in inspect.signature(init).parameters.values()
        if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


@functools.cache
def _option_types(cls: type) -> dict[str, Any]:
    hints: dict[str, Any] = {}
    for init in _constructors(cls):
        try:
            hints.update(typing.get_type_hints(init))
        except (NameError, TypeError):  # an unresolvable hint: the constructor checks alone
            return {}
    return {k: hint for k, hint in hints.items() if k in _parameters(cls)}


@functools.cache
def _adapter(hint: Any) -> TypeAdapter[Any]:
    return TypeAdapter(hint)


_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
_PLURALS = {int: "integers", float: "numbers", str: "strings"}


def _describe(hint: Any) -> str:
    """``int | None`` -> ``an integer or null``; ``str | os.PathLike[str]`` -> ``a path
    (string)``; ``Sequence[int]`` -> ``a list of integers``."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    args = list(typing.get_args(hint)) if union else [hint]
    parts = []
    if str in args and _is_path_hint(hint):
        args = [a for a in args if a is not str and typing.get_origin(a) is not os.PathLike]
        parts.append("a path (string)")
    for arg in args:
        if arg is type(None):
            continue
        if typing.get_origin(arg) in (list, tuple, collections.abc.Sequence):
            item = (typing.get_args(arg) or (Any,))[0]
            parts.append(f"a list of {_PLURALS.get(item, str(item))}")
        else:
            parts.append(_NAMES.get(arg, str(arg)))
    if type(None) in args:
        parts.append("null")
    return " or ".join(parts)
