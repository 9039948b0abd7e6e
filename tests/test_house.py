"""The house's ceilings, so that it stays readable: no module in raystudy/ over 400 lines (a
longer one holds more than one job: split it by job), and no product module named like a test
(`test_*.py`, `*_test.py`), which pytest's default collection and code-structure tools would
take for one. Each check is also run on a planted folder, to show that it can fail."""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "raystudy"
#: The most lines a module may have (counted as `wc -l` counts them).
MAX_LINES = 400
#: File names pytest collects as tests by default.
TEST_NAMES = ("test_*.py", "*_test.py")


def modules(package: Path) -> list[Path]:
    return sorted(package.rglob("*.py"))


def long_modules(package: Path, limit: int = MAX_LINES) -> list[str]:
    """`<path> (<n> lines)` of each module of `package` longer than `limit` lines."""
    found = []
    for path in modules(package):
        lines = path.read_bytes().count(b"\n")
        if lines > limit:
            found.append(f"{path.relative_to(package.parent)} ({lines} lines)")
    return found


def named_like_tests(package: Path) -> list[str]:
    """The modules of `package` whose file names pytest would collect as tests."""
    return [
        str(path.relative_to(package.parent))
        for path in modules(package)
        if any(fnmatch(path.name, pattern) for pattern in TEST_NAMES)
    ]


def test_no_module_is_over_the_line_ceiling() -> None:
    found = long_modules(PACKAGE)
    assert not found, f"modules over {MAX_LINES} lines; split each by job:\n" + "\n".join(found)


def test_no_product_module_is_named_like_a_test() -> None:
    found = named_like_tests(PACKAGE)
    assert not found, (
        f"product modules named like tests ({', '.join(TEST_NAMES)}); name each for its job:\n"
        + "\n".join(found)
    )


def test_the_checks_find_what_is_planted(tmp_path: Path) -> None:
    package = tmp_path / "raystudy"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (package / "full.py").write_text("x = 1\n" * MAX_LINES)  # at the ceiling: allowed
    (package / "sub" / "decoder_test.py").write_text("")
    (package / "test_thing.py").write_text("")
    (package / "testing.py").write_text("")  # not a name pytest collects
    (package / "contest.py").write_text("")

    assert long_modules(package) == [f"raystudy/sub/long.py ({MAX_LINES + 1} lines)"]
    assert named_like_tests(package) == ["raystudy/sub/decoder_test.py", "raystudy/test_thing.py"]
