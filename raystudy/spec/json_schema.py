"""The study spec's JSON Schema (draft 2020-12, from the pydantic models), which editors read
through the yaml-language-server modeline the shipped specs carry
(``# yaml-language-server: $schema=study.schema.json``) to complete and check fields.

It says what the models say: field names, types, bounds and defaults. What needs the
registries (which dataset, split or objective names exist, an objective's options) or the whole
spec (grid points, trial counts) is checked when raystudy loads the spec, not here.
"""

from __future__ import annotations

import json
from typing import Any

from raystudy.spec.study_spec import StudySpec

#: Where the shipped specs find the schema, beside them in search_spaces/.
SCHEMA_FILE = "study.schema.json"
MODELINE = f"# yaml-language-server: $schema={SCHEMA_FILE}"


def study_schema() -> dict[str, Any]:
    """The JSON Schema of a study spec."""
    schema = StudySpec.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "title": "raystudy study spec",
        "description": "A raystudy study: base trial values, the grid or search space over "
        "them, and how to run and track it (docs/studies/spec.md).",
    }


def schema_text() -> str:
    """`study_schema()` as the file holds it: sorted keys, two-space indents, a final newline."""
    return json.dumps(study_schema(), indent=2, sort_keys=True) + "\n"
