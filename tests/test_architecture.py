"""The import rules of docs/architecture/layout.md hold: every module is in a layer, layers import
downwards, no import circles, the configuration, the pure cores and scoring never load Ray
or MLflow, and only raystudy.tune imports Ray.

The layers and the forbidden imports are import-linter contracts in pyproject.toml; circles are
found on grimp's import graph (the one import-linter builds), function-level imports included,
since a lazy import closes a circle as surely as a top-level one.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def import_cycles(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """Every set of `package`'s modules that import each other in a circle (Tarjan's strongly
    connected components of more than one module, or a module importing itself)."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    inside = set(modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(root: str) -> None:
        # Iterative, so a deep import chain cannot reach Python's recursion limit.
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & inside)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append(
                        (w, iter(sorted(graph.find_modules_directly_imported_by(w) & inside)))
                    )
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1 or v in graph.find_modules_directly_imported_by(v):
                        cycles.append(sorted(component))

    for m in modules:
        if m not in index:
            visit(m)
    return cycles


def _chain(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    a, b = cycle[0], cycle[1]
    there = graph.find_shortest_chain(importer=a, imported=b) or ()
    back = graph.find_shortest_chain(importer=b, imported=a) or ()
    return " -> ".join(there) + "  and back: " + " -> ".join(back)


def test_raystudy_has_no_import_cycles() -> None:
    graph = grimp.build_graph("raystudy", cache_dir=None)
    cycles = import_cycles(graph, "raystudy")
    assert not cycles, "import circles:\n" + "\n".join(f"{c}: {_chain(graph, c)}" for c in cycles)


def test_cycle_finder_sees_a_planted_circle() -> None:
    """The check above could fail: one added import back up the layers is reported."""
    graph = grimp.build_graph("raystudy", cache_dir=None)
    assert not import_cycles(graph, "raystudy")
    graph.add_import(importer="raystudy.spec.trial_config", imported="raystudy.cli")
    cycles = import_cycles(graph, "raystudy")
    assert len(cycles) == 1
    assert {"raystudy.spec.trial_config", "raystudy.cli"} <= set(cycles[0])


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is a dev dependency: pip install -e '.[dev]'"
    return subprocess.run(
        [exe, "pyproject.toml", "--no-cache", "--no-logo"],
        cwd=cwd,
        capture_output=True,
        text=True,
        # The copy under test must win over the installed (editable) raystudy.
        env={"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(cwd)},
        timeout=300,
    )


def test_layers_and_forbidden_imports_hold() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        # A pure core that reaches for Ray breaks the forbidden contract...
        (
            "data/_planted.py",
            "import ray",
            "configuration, cores, checks, training, scoring, plan: no Ray, no MLflow",
        ),
        # ...and the configuration reaching up to a dataset breaks the layers.
        (
            "spec/_planted.py",
            "import raystudy.data",
            "raystudy imports run one way: CLI on top, configuration at the bottom",
        ),
        # The study driver's layer asking Ray itself, not through raystudy.tune.
        (
            "study/_planted.py",
            "def restore(path):\n    from ray import tune\n    return tune.Tuner.can_restore(path)",
            "Ray is imported only inside raystudy.tune",
        ),
    ],
)
def test_import_linter_refuses_a_planted_import(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        ROOT / "raystudy", tmp_path / "raystudy", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tmp_path / "raystudy" / module).write_text(textwrap.dedent(f"{line}\n"))
    result = _lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout
    assert f"{contract} BROKEN" in result.stdout.splitlines(), result.stdout


# --- every module is in a layer ----------------------------------------------------------------


def layered_modules(pyproject: Path) -> set[str]:
    """The modules the `layers` contract of pyproject.toml's import-linter names."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    return {m.strip() for layer in contract["layers"] for m in re.split(r"[|:]", layer)}


def unlayered(package: Path, layered: set[str]) -> list[str]:
    """The top-level modules and packages of `package` (a folder) that no layer names."""
    found = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
    found |= {d.name for d in package.iterdir() if d.is_dir() and any(d.glob("*.py"))}
    return sorted(f"{package.name}.{m}" for m in found - {m.split(".")[1] for m in layered})


def test_every_module_is_in_a_layer() -> None:
    """A module no layer names escapes the layers contract: anything may import it, and it
    may import anything."""
    missing = unlayered(ROOT / "raystudy", layered_modules(ROOT / "pyproject.toml"))
    assert not missing, f"not in a layer of pyproject.toml's layers contract: {missing}"


def test_an_unlayered_module_or_package_is_found(tmp_path: Path) -> None:
    package = tmp_path / "raystudy"
    (package / "sub").mkdir(parents=True)
    (package / "__pycache__").mkdir()
    for name in ("__init__.py", "cli.py", "_planted.py", "sub/__init__.py", "py.typed"):
        (package / name).write_text("")
    assert unlayered(package, {"raystudy.cli"}) == ["raystudy._planted", "raystudy.sub"]
    assert unlayered(package, {"raystudy.cli", "raystudy._planted", "raystudy.sub"}) == []
    assert "raystudy.cli" in layered_modules(ROOT / "pyproject.toml")
