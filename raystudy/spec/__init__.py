"""The study spec: YAML -> validated pydantic models (`StudySpec`, `TrialConfig`).

A study spec holds base values for one trial plus a `grid` that mirrors the trial config: a
list is an axis; a list of mappings is a set of alternatives, each expanded on its own; a list
of lists sweeps a list-valued field. Each grid point is merged into the base values and
validated as a `TrialConfig`, so every error is found before Ray starts.

This package is the configuration layer: it imports nothing of raystudy above it. Loading a
spec for a study (`raystudy.checks.load_spec`) also checks what needs the datasets, models
and metrics. Modules: `trial_config` and `study_spec` (the schema), `grid` (expansion),
`search_space` (random/Optuna spaces), `yaml_io` (reading files, `--set`), `problems`
(error reporting), `validate` (the schema's whole-spec checks).
"""

from raystudy.spec.grid import (
    count_grid,
    deep_merge,
    expand_grid,
    flatten,
    grid_points,
    grid_size,
    varying,
)
from raystudy.spec.problems import SpecError
from raystudy.spec.study_spec import (
    AshaConfig,
    ExecutionConfig,
    ResourcesConfig,
    SearchConfig,
    StudySpec,
)
from raystudy.spec.tracking_config import (
    ALLOWED_TRACKING_URIS,
    FILE_STORE_OPT_IN,
    TRACKING_SCHEMES,
    TrackingConfig,
)
from raystudy.spec.trial_config import (
    NAMES,
    OPTIONS,
    SEED_LIMIT,
    DatasetConfig,
    EvaluationConfig,
    KnownNames,
    ModelConfig,
    ObjectiveOptions,
    StrictConfig,
    TrainConfig,
    TrialConfig,
    option_problem,
)
from raystudy.spec.validate import MAX_TRIALS
from raystudy.spec.yaml_io import (
    MAX_DEPTH,
    MAX_NODES,
    OptionError,
    apply_overrides,
    parse_options,
    parse_yaml,
)

__all__ = [
    "ALLOWED_TRACKING_URIS",
    "FILE_STORE_OPT_IN",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_TRIALS",
    "NAMES",
    "OPTIONS",
    "SEED_LIMIT",
    "TRACKING_SCHEMES",
    "AshaConfig",
    "DatasetConfig",
    "EvaluationConfig",
    "ExecutionConfig",
    "KnownNames",
    "ModelConfig",
    "ObjectiveOptions",
    "OptionError",
    "ResourcesConfig",
    "SearchConfig",
    "SpecError",
    "StrictConfig",
    "StudySpec",
    "TrackingConfig",
    "TrainConfig",
    "TrialConfig",
    "apply_overrides",
    "count_grid",
    "deep_merge",
    "expand_grid",
    "flatten",
    "grid_points",
    "grid_size",
    "option_problem",
    "parse_options",
    "parse_yaml",
    "varying",
]
