"""What a fresh interpreter has imported: for the tests that keep a command or a layer free of
the heavy stack (torch, MLflow, Ray, ...)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable


def loaded_after(code: str, modules: Iterable[str]) -> list[str]:
    """Those of `modules` that a new Python process has in sys.modules after running `code`."""
    names = json.dumps(list(modules))
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {names} if m in sys.modules]))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
