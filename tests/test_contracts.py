"""One home per contract (docs/architecture/layout.md, section 2): a metric key, an MLflow tag name,
a value raystudy gives its tags, a run status and a trial outcome are typed as strings only in
the module that defines them, and imported everywhere else.

The check walks the syntax tree of every module of raystudy/: a string constant (an f-string's
literal parts included) that is a contract's word, or starts with one of its prefixes, is a
finding outside that contract's home. A string that stands alone as a statement (a docstring,
of a module, class, function or attribute) documents and is not checked; comments are not in
the tree at all. A results-table column (`metrics.<key>`, `tags.<name>`) is checked as the key
or name it holds.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from mlflow.entities import RunStatus

from raystudy import keys, tags
from raystudy.analysis.core.columns import METRIC
from raystudy.tune import state

PACKAGE = Path(__file__).resolve().parents[1] / "raystudy"


@dataclass(frozen=True)
class Contract:
    """A vocabulary and the one module that may spell it out."""

    name: str
    home: str
    words: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    def holds(self, text: str) -> bool:
        return text in self.words or text.startswith(self.prefixes)


def _tag_names() -> frozenset[str]:
    names = {v for k, v in vars(tags).items() if k.endswith("_TAG") and isinstance(v, str)}
    # The split tag is named like the trial config's field and the parameter column it is
    # read from (`split`), a word every layer uses for those.
    return frozenset(names - {tags.SPLIT_TAG})


CONTRACTS = (
    Contract("metric key", "raystudy.keys", prefixes=keys.NAMESPACES),
    Contract(
        "tag name",
        "raystudy.tags",
        _tag_names(),
        prefixes=(tags.VERSIONS_PREFIX, tags.SHARED_VIEW_PREFIX),
    ),
    Contract("tag value", "raystudy.tags", frozenset(tags.TAG_VALUES)),
    Contract("run status", "raystudy.tags", frozenset(tags.RUN_STATUSES)),
    # Tune's own word for an ended trial is read only where its outcomes are told apart.
    Contract("trial outcome", "raystudy.tune.state", frozenset({*state.OUTCOMES, "TERMINATED"})),
)

#: A word that is a contract's by coincidence, where it means something else: (module, word).
ELSEWHERE = {
    # TUNE_DIR, the study's folder of Tune's storage, is also named "tune" (the tag value
    # FROM_TUNE says a run came from it).
    ("raystudy.tune.state", tags.FROM_TUNE),
}

#: The results table's column prefixes, in front of a metric key or a tag name.
COLUMN_PREFIXES = (METRIC, tags.column(""))


@dataclass(frozen=True, order=True)
class Finding:
    module: str
    line: int
    text: str
    contracts: tuple[str, ...] = field(compare=False)

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.text!r} ({', '.join(self.contracts)})"


def _documentation(tree: ast.AST) -> set[int]:
    """The ids of the string constants that stand alone as statements: docstrings."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _matching(text: str) -> list[Contract]:
    forms = {text, *(text.removeprefix(p) for p in COLUMN_PREFIXES if text.startswith(p))}
    return [c for c in CONTRACTS if any(c.holds(form) for form in forms)]


def contract_literals(source: str, module: str) -> list[Finding]:
    """The strings of `source` (the module `module`) that spell out a contract's word outside
    its home: one that is the word of several contracts may stand in any of their homes."""
    tree = ast.parse(source)
    documentation = _documentation(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if id(node) in documentation or (module, node.value) in ELSEWHERE:
            continue
        contracts = _matching(node.value)
        if contracts and module not in {c.home for c in contracts}:
            found.append(Finding(module, node.lineno, node.value, tuple(c.name for c in contracts)))
    return sorted(found)


def package_literals(package: Path = PACKAGE) -> list[Finding]:
    """`contract_literals` of every module of the package folder `package`."""
    found = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found += contract_literals(path.read_text(encoding="utf-8"), module)
    return found


PLANTED = '''
"""A module's docstring may name dis/mig, FINISHED and raystudy.stopped_by."""
# So may a comment: "study/wall_s".
STATUS = "KILLED"


def close(run, frame, name):
    """As may a function's: KILLED, transfer/."""
    "An attribute's too: asha."
    run.finish(STATUS)
    frame[f"metrics.dis/{name}"] = 1.0
    run.set_tags({"raystudy.stopped_by": "asha"})
    return frame["tags.raystudy.error"], "study/trials_finished", "UNFINISHED", "split"
'''


def test_a_planted_contract_literal_is_found() -> None:
    """The check could fail: every contract's word in code is found, none in documentation."""
    found = contract_literals(PLANTED, "raystudy.trials.planted")
    assert [(f.line, f.text, f.contracts) for f in found] == [
        (4, "KILLED", ("run status",)),
        (11, "metrics.dis/", ("metric key",)),
        (12, "asha", ("tag value",)),
        (12, "raystudy.stopped_by", ("tag name",)),
        (13, "UNFINISHED", ("trial outcome",)),
        (13, "study/trials_finished", ("metric key",)),
        (13, "tags.raystudy.error", ("tag name",)),
    ]


def test_a_contract_word_stands_in_its_own_home_only() -> None:
    # FINISHED is a run status and a trial outcome: both homes may spell it, no other module.
    assert contract_literals('RUN_FINISHED = "FINISHED"', "raystudy.tags") == []
    assert contract_literals('FINISHED = "FINISHED"', "raystudy.tune.state") == []
    assert [f.contracts for f in contract_literals('x = "FINISHED"', "raystudy.study.driver")] == [
        ("run status", "trial outcome")
    ]
    # KILLED is a run status only: the outcomes' home may not spell it.
    assert [f.text for f in contract_literals('x = "KILLED"', "raystudy.tune.state")] == ["KILLED"]
    assert [f.text for f in contract_literals('x = "tune"', "raystudy.tracking.sync")] == ["tune"]
    assert contract_literals('TUNE_DIR = "tune"', "raystudy.tune.state") == []


def test_contract_literals_live_only_in_their_homes() -> None:
    found = package_literals()
    assert not found, "import the constant instead:\n" + "\n".join(map(str, found))


def test_the_vocabularies_are_the_ones_they_name() -> None:
    mlflow_statuses = {RunStatus.to_string(s) for s in RunStatus.all_status()}
    assert set(tags.RUN_STATUSES) <= mlflow_statuses
    assert all(n.endswith("/") for n in keys.NAMESPACES)
    assert len(set(keys.NAMESPACES)) == len(keys.NAMESPACES)
    assert keys.STUDY_FINISHED.startswith(keys.STUDY)
    homes = {c.home for c in CONTRACTS}
    assert all((PACKAGE.parent / (m.replace(".", "/") + ".py")).is_file() for m in homes)
