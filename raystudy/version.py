"""The code's version: raystudy's release and the git commit of the checkout it runs from.

Standard library only, so that `raystudy --version` answers without importing the study's
stack; the trial's lineage (`raystudy.lineage`) and the study driver take the commit from here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

#: raystudy's release (pyproject.toml's `version`; `raystudy.__version__`).
RELEASE = "0.1.0"
#: The folder of the raystudy package this process imported.
PACKAGE_DIR = Path(__file__).resolve().parent


def code_version() -> str:
    """The raystudy version, with the short commit of its checkout when it has one."""
    commit = git_commit(PACKAGE_DIR, short=True)
    return f"{RELEASE}+{commit}" if commit else RELEASE


def git_commit(here: Path, *, short: bool = False) -> str | None:
    """The commit of the checkout holding the package folder `here` (abbreviated as git
    abbreviates it with `short`); None when there is none: no git, or a package folder its
    checkout does not track. The one lookup of the code's commit (the lineage's tag, the
    study driver's `raystudy.version`)."""
    # A package that is not tracked in the repository around it (installed into a venv that
    # lives inside some other checkout) must not report that checkout's commit.
    if run_git(here, "ls-files", "--error-unmatch", "__init__.py") is None:
        return None
    commit = run_git(here, "rev-parse", *(["--short"] if short else []), "HEAD")
    return (commit or "").strip() or None


def run_git(cwd: Path, *args: str) -> str | None:
    """git's output, or None when git is missing, fails, or hangs."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
