"""How a bad study spec is reported: `SpecError`, and pydantic's errors turned into
(field path, message) pairs a user can act on.

Every check, in the schema or above it (`raystudy.checks`), reports through these, so every
message names the file, the field and what is allowed, in one format.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from raystudy.registry import unknown_name_message
from raystudy.spec.grid import flatten
from raystudy.spec.url_secrets import hidden


class SpecError(ValueError):
    """A bad study spec: says which file, which field and what is allowed."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        lines = [
            f"{source}: {path}: {msg}" if path else f"{source}: {msg}" for path, msg in problems
        ]
        super().__init__("invalid study spec\n  " + "\n  ".join(lines))


# How pydantic labels the branch of a union in an error's loc (`int | Literal["random"]` gives
# "constrained-int" and "literal['random']"); never a field name.
_UNION_TAG = re.compile(
    r"^(str|int|float|bool|none|constrained-\w+|literal\[.*\]|function-\w+\[.*\]"
    r"|(dict|list|tuple|set)\[.*\])$"
)


def _loc(loc: tuple[Any, ...], key: bool = False) -> str:
    out = ""
    for i, part in enumerate(loc):
        # `part` is a mapping's key (pydantic marks it "[key]", or ends the loc with it)
        is_key = (i + 1 < len(loc) and loc[i + 1] == "[key]") or (i == len(loc) - 1 and key)
        if part == "[key]" or (isinstance(part, str) and _UNION_TAG.match(part)):
            continue  # pydantic's union-branch labels say nothing to a user
        if isinstance(part, int) and not is_key:
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that holds the field at `loc` (None if `loc` leaves the models)."""
    model: type[BaseModel] = root
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        # `AshaConfig | None` and the like: the model among the annotation's alternatives.
        options = typing.get_args(field.annotation) or (field.annotation,)
        models = [t for t in options if isinstance(t, type) and issubclass(t, BaseModel)]
        if not models:
            return None
        model = models[0]
    return model


def problems_of(
    exc: ValidationError, prefix: str = "", root: type[BaseModel] | None = None
) -> list[tuple[str, str]]:
    problems = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
            owner = _model_at(root, tuple(err["loc"][:-1])) if root else None
            if owner is not None:
                name = str(err["loc"][-1])
                msg = unknown_name_message("field", name, list(owner.model_fields))
        elif err["type"] == "value_error" and isinstance(err.get("input"), Mapping):
            # A model validator of ours: its input is the whole block (noise, not shown), and
            # its message may start with the field it is about ("space.model.beta: ...").
            owner = _model_at(root, tuple(err["loc"])) if root else None
            field, sep, rest = msg.partition(": ")
            head = field.replace("[", ".").split(".")[0]
            # An objective's option is no declared field of the model block (ModelConfig).
            named = head in owner.model_fields or _takes_options(owner) if owner else False
            if owner is not None and sep and named and " " not in head:
                loc = (*err["loc"], field)
                problems.append((prefix + _loc(loc), rest))
                continue
        elif "input" in err and err["type"] not in ("missing",):
            got = err["input"]  # a store URL's written-out password is never repeated
            msg = f"{msg} (got {hidden(got) if isinstance(got, str) else got!r})"
        problems.append((prefix + _loc(err["loc"], key=err["type"] == "invalid_key"), msg))
    return problems


def _takes_options(model: type[BaseModel]) -> bool:
    """Whether the block keeps keys it does not declare (the model block's objective options,
    which the objectives' own models validate)."""
    return model.model_config.get("extra") == "allow"


def unknown_fields(
    raw: Mapping[str, Any],
    model: type[BaseModel],
    path: str,
    options: Sequence[str] | None = None,
) -> list[str]:
    """Keys in the grid that the trial config does not have (checked before expansion).
    `options` are every objective's option names, the further keys of the model block; None
    takes any key there (no objectives to ask)."""
    bad: list[str] = []
    for key, value in raw.items():
        where = f"{path}.{key}"
        field = model.model_fields.get(key)
        if field is None:
            if _takes_options(model):
                if options is None or key in options:
                    continue
                known = [*model.model_fields, *options]
                bad.append(f"{where}: {unknown_name_message('field or option', key, known)}")
                continue
            bad.append(f"{where}: {unknown_name_message('field', key, list(model.model_fields))}")
            continue
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            for i, item in enumerate(value if isinstance(value, list) else [value]):
                if isinstance(item, Mapping):
                    bad += unknown_fields(
                        item, sub, f"{where}[{i}]" if isinstance(value, list) else where, options
                    )
    return bad


def distinct(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The problems, each (field, message) once: a corner and a draw often share one."""
    seen: set[tuple[str, str]] = set()
    out = []
    for where, message in problems:
        key = (where.rpartition(" -> ")[2], message)
        if key not in seen:
            seen.add(key)
            out.append((where, message))
    return out


def point_label(label: str, i: int, point: Mapping[str, Any]) -> str:
    """`grid point 3 (model.beta=4, seed=1)`: which point, by the values it sets."""
    return f"{label} {i} (" + ", ".join(f"{k}={v}" for k, v in flatten(point).items()) + ")"
