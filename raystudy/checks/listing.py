"""What a spec can name, kind by kind, with a line on each (for ``raystudy list``): the
registries' names, the first line of each registered object's docstring, and an objective's
options with their defaults."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

from raystudy.data import DATASETS, SPLITS
from raystudy.metrics import INTERVENTION_METRICS, METRICS
from raystudy.metrics.probes import PROBES
from raystudy.models import ARCHITECTURES, OBJECTIVES
from raystudy.models.objectives import objective_options

#: The kinds `raystudy list` lists, in the order a spec names them.
KINDS = ("datasets", "splits", "objectives", "architectures", "metrics", "probes")


@dataclass(frozen=True)
class Entry:
    name: str
    summary: str
    #: An objective's options and their defaults (JSON-ready); empty for other kinds.
    options: dict[str, Any] = field(default_factory=dict)


def entries(kind: str) -> list[Entry]:
    """Every registered name of `kind` (one of KINDS), sorted; ValueError for another kind."""
    if kind == "datasets":
        return [Entry(name, _summary(cls)) for name, cls in DATASETS.items()]
    if kind == "splits":
        return [Entry(name, _summary(factory)) for name, factory in SPLITS.items()]
    if kind == "objectives":
        options = objective_options()
        return [
            Entry(name, _summary(cls), _defaults(options[name])) for name, cls in OBJECTIVES.items()
        ]
    if kind == "architectures":
        return [Entry(name, _summary(builder)) for name, builder in ARCHITECTURES.items()]
    if kind == "metrics":
        both = [*METRICS.items(), *INTERVENTION_METRICS.items()]
        return sorted((Entry(name, _summary(entry.fn)) for name, entry in both), key=_name)
    if kind == "probes":
        return [Entry(name, _summary(cls)) for name, cls in PROBES.items()]
    raise ValueError(f"unknown kind {kind!r}; allowed: {', '.join(KINDS)}")


def format_entries(kind: str, listed: list[Entry]) -> str:
    """One line a name: the name, then its summary; an objective's options on the next."""
    width = max((len(e.name) for e in listed), default=0)
    lines = [f"{len(listed)} {kind}:"]
    for e in listed:
        lines.append(f"  {e.name:<{width}}  {e.summary}".rstrip())
        if e.options:
            shown = ", ".join(f"{k}={v!r}" for k, v in e.options.items())
            lines.append(f"  {'':<{width}}  options: {shown}")
    return "\n".join(lines)


def _name(entry: Entry) -> str:
    return entry.name


#: A summary longer than this is cut at its last word that fits.
SUMMARY_CHARS = 110
#: A full stop that may end a sentence, and the words whose stop does not.
_SENTENCE_END = re.compile(r"\.\s+(?=[A-Z(])")
_ABBREVIATIONS = {"Eq", "Eqs", "Sec", "Fig", "Figs", "App", "al", "e.g", "i.e", "Tab", "cf", "vs"}


def _summary(obj: Any) -> str:
    """The first sentence of the object's own docstring (not an inherited one), else of its
    module's (an objective's file says what it is), cut to SUMMARY_CHARS."""
    doc = obj.__doc__ if isinstance(obj, type) else inspect.getdoc(obj)
    if not doc and isinstance(obj, type):
        module = inspect.getmodule(obj)
        doc = module.__doc__ if module is not None else None
    if not doc:
        return ""
    text = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())
    for end in _SENTENCE_END.finditer(text):
        if text[: end.start()].rsplit(" ", 1)[-1] not in _ABBREVIATIONS:
            text = text[: end.start() + 1]
            break
    if len(text) > SUMMARY_CHARS:
        text = text[: SUMMARY_CHARS - 3].rsplit(" ", 1)[0] + "..."
    return text


def _defaults(params: Any) -> dict[str, Any]:
    """An objective's options model -> {option: default}, JSON-ready."""
    out: dict[str, Any] = {}
    for name, info in params.model_fields.items():
        default = info.get_default(call_default_factory=True)
        out[name] = (
            default if isinstance(default, int | float | str | bool | None) else str(default)
        )
    return out
