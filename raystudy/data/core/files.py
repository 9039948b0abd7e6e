"""What every dataset read from files shares, whichever stage reads them (an official file,
a user's photograph): the error for a file it cannot use, and the checks that a file or
folder is there."""

from __future__ import annotations

import os
from pathlib import Path


class DatasetFileError(ValueError):
    """A dataset file that cannot be read, or is not in the format its dataset expects."""


def require_file(path: str | os.PathLike[str], expected: str) -> Path:
    """``path`` as a Path; FileNotFoundError naming it and ``expected`` if it is missing."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"dataset file {str(p)!r} not found; expected {expected}")
    return p


def require_folder(path: str | os.PathLike[str], name: str, expected: str) -> Path:
    """``path`` as a Path; FileNotFoundError naming the ``name`` folder and ``expected`` if it
    is not a folder."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"{name} folder {str(folder)!r} not found; expected {expected}")
    return folder
