"""MkDocs hook: every top-level module and package of raystudy/ is on an API reference page.

mkdocstrings renders what a page names (`::: raystudy.data` and its submodules); a module
added at the top level and named on no page would be left out of the reference silently, so
the build fails instead, naming it.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"


def top_level_modules() -> set[str]:
    names = set()
    for path in (ROOT / "raystudy").iterdir():
        if path.name.startswith("_"):
            continue
        if path.suffix == ".py" or (path / "__init__.py").exists():
            names.add(path.stem)
    return names


def on_pre_build(config) -> None:
    named = set()
    for page in API.glob("*.md"):
        named |= set(re.findall(r"^::: raystudy\.(\w+)\s*$", page.read_text(), re.M))
    missing = sorted(top_level_modules() - named)
    if missing:
        raise PluginError(
            "on no API reference page (docs/api/): "
            + ", ".join(f"raystudy.{name}" for name in missing)
        )
