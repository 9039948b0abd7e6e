"""Reading a study file: YAML under the spec's rules (plain data, no repeated keys, bounded
size and depth), `--set dotted.path=value` overrides, and the `key=value` options of the
commands that take no spec (`--option`, `evaluate --set`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from raystudy.spec.problems import SpecError

MAX_DEPTH = 32
MAX_NODES = 100_000
_TOO_DEEP = f"a study spec nests a handful of levels; at most {MAX_DEPTH} are accepted"


def shape_problem(raw: Any) -> tuple[str, str] | None:
    """(path, message) for a document nested deeper than MAX_DEPTH or holding more than
    MAX_NODES values, else None.

    Iterative and bounded, so that neither a deep document, a self-referencing one (YAML
    anchors can make a list that contains itself) nor an alias bomb (each level repeating
    the last many times) can exhaust the stack or the clock here or in what validates it.
    """
    stack: list[tuple[Any, str, int]] = [(raw, "", 0)]
    seen = 0
    while stack:
        node, path, depth = stack.pop()
        seen += 1
        if depth > MAX_DEPTH:
            shown = path if len(path) <= 80 else path[:77] + "..."
            return shown, f"nested too deeply ({_TOO_DEEP})"
        if seen > MAX_NODES:
            return "", f"holds more than {MAX_NODES} values (YAML aliases repeating each other?)"
        if isinstance(node, Mapping):
            stack += [(v, f"{path}.{k}" if path else str(k), depth + 1) for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node)]
    return None


def parse_yaml(text: str) -> Any:
    """`text` read under a spec file's rules (`SpecLoader`); ValueError("not valid YAML:
    <why>") for anything it refuses, nesting too deep for the parser included."""
    try:
        return yaml.load(text, Loader=SpecLoader)  # a SafeLoader: plain data only
    except yaml.YAMLError as exc:
        raise ValueError(f"not valid YAML: {exc}") from None
    except RecursionError:
        raise ValueError(f"not valid YAML: nested too deeply ({_TOO_DEEP})") from None


class SpecLoader(yaml.SafeLoader):
    """`yaml.safe_load`'s loader (plain data only, no Python tags), refusing a key that a
    mapping repeats: YAML forbids it, yet PyYAML keeps the last value and silently drops the
    first (`train:` written twice loses half of the training settings)."""

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        # PyYAML copies the entries of every merged mapping (`<<: [*a, *a, ...]`) into the
        # merging one, level by level: ten references per level grow tenfold per level and a
        # few lines hang the loader. Merged mappings are flattened before their users, so a
        # cap checked here stops the growth at the first level past it.
        super().flatten_mapping(node)
        if len(node.value) > MAX_NODES:
            raise yaml.constructor.ConstructorError(
                "while merging mappings",
                node.start_mark,
                f"the merged mapping holds more than {MAX_NODES} values "
                "(YAML merge keys repeating each other?)",
                node.start_mark,
            )

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # PyYAML's scalar constructors raise plain Python errors on well-formed YAML they
        # cannot convert: an integer of 5000 digits (Python's int limit), `!!int 12a`,
        # `2001-13-45` read as a date, `!!timestamp x`. Each becomes a YAML error at its place.
        try:
            return super().construct_object(node, deep=deep)
        except (yaml.YAMLError, RecursionError):
            raise
        except Exception as exc:
            kind = node.tag.rsplit(":", 1)[-1]
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {kind} value: {exc}", node.start_mark
            ) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base` then `key: ...` overrides on purpose
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue  # an unhashable key: the base class reports it
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r} (first at line {first.start_mark.line + 1})",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def split_assignment(item: str) -> tuple[str, str] | None:
    """`key=value` (or `dotted.path=value`) as (key, value text), the key stripped; None for
    an item with no `=` or no key. The one reader of the form for `--set` and options."""
    key, sep, text = item.partition("=")
    return (key.strip(), text) if sep and key.strip() else None


def apply_overrides(raw: dict[str, Any], overrides: Iterable[str], source: str) -> dict[str, Any]:
    """Apply `dotted.path=value` overrides, each value parsed as YAML."""
    raw = copy.deepcopy(raw)
    for item in overrides:
        pair = split_assignment(item)
        if pair is None:
            raise SpecError(source, [("--set", f"{item!r} is not of the form dotted.path=value")])
        path, text = pair
        try:
            value = parse_yaml(text)  # the spec file's rules, merge cap too
        except ValueError as exc:
            raise SpecError(source, [(f"--set {path}", f"value is {exc}")]) from None
        node = raw
        parts = path.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise SpecError(source, [(f"--set {path}", f"{part!r} is not a mapping")])
            node = child
        node[parts[-1]] = value
    return raw


class OptionError(ValueError):
    """A command's option whose value cannot be used; the message names the option."""


def parse_options(items: Iterable[str], flag: str) -> dict[str, Any]:
    """`key=value` pairs given with `flag`, each value parsed as YAML (as a spec's dataset
    options are read); OptionError naming the flag and the pair for one that is not."""
    options: dict[str, Any] = {}
    for item in items:
        pair = split_assignment(item)
        if pair is None:
            raise OptionError(f"{flag} {item!r}: expected key=value")
        key, value = pair
        try:
            options[key] = parse_yaml(value)
        except ValueError as exc:
            raise OptionError(f"{flag} {key}: value is {exc}") from None
    return options


def read_spec_file(path: str | Path) -> dict[str, Any]:
    """The mapping a study YAML holds (an empty file: {}), read under the spec rules; SpecError
    naming the file for anything that is not one."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise SpecError(source, [("", "no such file")])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(source, [("", f"cannot read the file as UTF-8 text: {exc}")]) from None
    try:
        raw = parse_yaml(text)
    except ValueError as exc:
        raise SpecError(source, [("", str(exc))]) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SpecError(source, [("", f"a study spec is a mapping, got {type(raw).__name__}")])
    return raw
