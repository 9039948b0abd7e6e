"""Environment variables MLflow reads (or its setters export), given back after a block."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def env_restored(name: str) -> Iterator[None]:
    """Whatever the block does to the variable `name`, it has its value from before (or is
    unset, as it was) afterwards."""
    before = os.environ.get(name)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
