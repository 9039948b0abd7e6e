"""The command line stays a package of small modules, one per command or group of commands:
none over 250 lines, so that each reads on its own."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "raystudy" / "cli"
CEILING = 250


def over_ceiling(package: Path, ceiling: int = CEILING) -> list[str]:
    """The modules under `package` longer than `ceiling` lines, each with its length."""
    lengths = {p: len(p.read_text().splitlines()) for p in sorted(package.rglob("*.py"))}
    return [f"{p.relative_to(package)}: {n} lines" for p, n in lengths.items() if n > ceiling]


def test_every_module_of_the_command_line_is_within_the_ceiling() -> None:
    assert len(list(CLI.glob("*.py"))) > 1, "raystudy/cli is a package of command modules"
    assert over_ceiling(CLI) == []


def test_a_module_over_the_ceiling_is_named_with_its_length(tmp_path: Path) -> None:
    (tmp_path / "short.py").write_text("x = 1\n" * CEILING)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "long.py").write_text("x = 1\n" * (CEILING + 1))
    assert over_ceiling(tmp_path) == [f"sub/long.py: {CEILING + 1} lines"]
