"""The study YAML -> validated pydantic models (`StudySpec`, `TrialConfig`).

A study spec holds base values for one trial plus a `grid` that mirrors the trial config: a list
is an axis; a list of mappings is a set of alternatives, each expanded on its own; a list of
lists sweeps a list-valued field. Each grid point is merged into the base values and validated as
a `TrialConfig`, so every error is found before Ray starts.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from raystudy.registry import unknown_name_message

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class SpecError(ValueError):
    """A bad study spec: says which file, which field and what is allowed."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        lines = [
            f"{source}: {path}: {msg}" if path else f"{source}: {msg}" for path, msg in problems
        ]
        super().__init__("invalid study spec\n  " + "\n  ".join(lines))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _known(kind: str, name: str, names: Iterable[str]) -> str:
    names = list(names)
    if name not in names:
        raise ValueError(unknown_name_message(kind, name, names))
    return name


class DatasetConfig(_Strict):
    name: str = "color_dsprites"
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _dataset_known(cls, v: str) -> str:
        from raystudy.data import DATASETS

        return _known("dataset", v, DATASETS)


class ModelConfig(_Strict):
    objective: str = "beta_vae"
    architecture: str = "conv"
    latent_dim: int = Field(10, ge=1, le=1024)
    beta: float = Field(1.0, ge=0.0)

    @field_validator("objective")
    @classmethod
    def _objective_known(cls, v: str) -> str:
        from raystudy.models import OBJECTIVES

        return _known("objective", v, OBJECTIVES)

    @field_validator("architecture")
    @classmethod
    def _architecture_known(cls, v: str) -> str:
        from raystudy.models import ARCHITECTURES

        return _known("architecture", v, ARCHITECTURES)


class TrainConfig(_Strict):
    steps: int = Field(500, ge=1)
    batch_size: int = Field(64, ge=1)
    lr: float = Field(1e-4, gt=0.0)
    kl_warmup_steps: int = Field(0, ge=0, description="linear KL warm-up from 0 to 1")
    grad_clip: float | None = Field(None, gt=0.0, description="max global gradient norm")
    input_noise: bool = False
    report_every: int = Field(50, ge=1, description="steps between train/* reports")
    checkpoint_every: int = Field(100, ge=1, description="steps between checkpoints")


def _metric_known(v: str) -> str:
    from raystudy.metrics import METRICS

    return _known("metric", v, METRICS)


def _probe_known(v: str) -> str:
    from raystudy.metrics.probes import PROBES

    return _known("probe", v, PROBES)


MetricName = Annotated[str, AfterValidator(_metric_known)]
ProbeName = Annotated[str, AfterValidator(_probe_known)]


class EvaluationConfig(_Strict):
    metrics: list[MetricName] = Field(default_factory=lambda: ["dci", "mig"])
    probes: list[ProbeName] = Field(default_factory=lambda: ["gbt", "mlp"])
    num_train: int = Field(10000, ge=10, description="points the dis/* metrics train on")
    num_test: int = Field(5000, ge=10, description="points the dis/* metrics test on")
    probe_train: int = Field(2000, ge=10, description="points each transfer probe trains on")
    probe_test: int = Field(1000, ge=10, description="points each transfer probe is tested on")
    num_eval_images: int = Field(1000, ge=1, description="held-out images for eval/*")
    seed: int = Field(0, description="the same ground-truth draws score every model")


class _TrialFields(_Strict):
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    split: str | dict[str, Any] = "iid"
    model: ModelConfig = Field(default_factory=ModelConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    seed: int = 0

    @field_validator("split")
    @classmethod
    def _split_known(cls, v: str | dict[str, Any]) -> str | dict[str, Any]:
        from raystudy.data import SPLITS

        return _known("split", v, SPLITS) if isinstance(v, str) else v


class TrialConfig(_TrialFields):
    """Everything one trial needs: the spec's base values with one grid point substituted."""

    def flat(self) -> dict[str, Any]:
        """Dotted keys -> values: the MLflow params of a trial."""
        return flatten(self.model_dump(mode="json"))


class SearchConfig(_Strict):
    method: Literal["grid"] = "grid"


class ResourcesConfig(_Strict):
    cpu: float = Field(1.0, gt=0.0, description="CPUs per trial (also torch's thread count)")
    gpu: float = Field(
        0.0, ge=0.0, description="GPUs per trial, fractional to share one; ignored without GPUs"
    )


class TrackingConfig(_Strict):
    uri: str | None = Field(None, description="MLflow tracking URI; null -> sqlite in the study")


TRIAL_FIELDS = tuple(TrialConfig.model_fields)


class StudySpec(_TrialFields):
    """A study: base trial values, the grid over them, and how to run and track it."""

    name: str = Field(pattern=NAME_PATTERN, description="the MLflow experiment and output folder")
    grid: dict[str, Any] = Field(default_factory=dict)
    search: SearchConfig = Field(default_factory=SearchConfig)
    resources: ResourcesConfig = Field(default_factory=ResourcesConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)

    def base(self) -> dict[str, Any]:
        dumped = self.model_dump(mode="json")
        return {k: dumped[k] for k in TRIAL_FIELDS}

    def trials(self) -> list[TrialConfig]:
        """Every grid point merged into the base values; validated (the spec already was)."""
        return [TrialConfig.model_validate(deep_merge(self.base(), p)) for p in self.points()]

    def points(self) -> list[dict[str, Any]]:
        return expand_grid(self.grid)


# -- grid expansion ------------------------------------------------------------------------


def expand_grid(node: Any) -> list[Any]:
    """All combinations a grid node stands for.

    A mapping is the product of its values; a list is the union of its items (a mapping item is
    expanded on its own, a list item is taken literally, a scalar is one value); a scalar is
    itself.
    """
    if isinstance(node, Mapping):
        keys = list(node)
        options = [expand_grid(node[k]) for k in keys]
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*options)]
    if isinstance(node, list):
        out: list[Any] = []
        for item in node:
            if isinstance(item, Mapping):
                out.extend(expand_grid(item))
            else:
                out.append(item)
        return out
    return [node]


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in d.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, path + "."))
        else:
            out[path] = value
    return out


def varying(points: list[dict[str, Any]]) -> list[str]:
    """The dotted keys whose value differs between grid points (for names and tables)."""
    flats = [flatten(p) for p in points]
    keys = sorted({k for f in flats for k in f})
    return [k for k in keys if len({repr(f.get(k)) for f in flats}) > 1]


# -- loading -------------------------------------------------------------------------------


def apply_overrides(raw: dict[str, Any], overrides: Iterable[str], source: str) -> dict[str, Any]:
    """Apply `dotted.path=value` overrides, each value parsed as YAML."""
    raw = copy.deepcopy(raw)
    for item in overrides:
        path, sep, text = item.partition("=")
        if not sep or not path.strip():
            raise SpecError(source, [("--set", f"{item!r} is not of the form dotted.path=value")])
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SpecError(source, [(f"--set {path}", f"value is not valid YAML: {exc}")]) from exc
        node = raw
        parts = path.strip().split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise SpecError(source, [(f"--set {path}", f"{part!r} is not a mapping")])
            node = child
        node[parts[-1]] = value
    return raw


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "dict[str,any]", "function-after[_split_known(), str]"):
            continue  # pydantic's union-branch labels say nothing to a user
        else:
            out += f".{part}" if out else str(part)
    return out


def _problems(exc: ValidationError, prefix: str = "") -> list[tuple[str, str]]:
    problems = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif "input" in err and err["type"] not in ("missing",):
            msg = f"{msg} (got {err['input']!r})"
        problems.append((prefix + _loc(err["loc"]), msg))
    return problems


def _check_known_fields(raw: Mapping[str, Any], model: type[BaseModel], path: str) -> list[str]:
    """Keys in the grid that the trial config does not have (checked before expansion)."""
    bad: list[str] = []
    for key, value in raw.items():
        where = f"{path}.{key}"
        field = model.model_fields.get(key)
        if field is None:
            bad.append(f"{where}: {unknown_name_message('field', key, list(model.model_fields))}")
            continue
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            for i, item in enumerate(value if isinstance(value, list) else [value]):
                if isinstance(item, Mapping):
                    bad += _check_known_fields(
                        item, sub, f"{where}[{i}]" if isinstance(value, list) else where
                    )
    return bad


def validate_spec(raw: Any, source: str = "<spec>") -> StudySpec:
    if not isinstance(raw, Mapping):
        raise SpecError(source, [("", f"a study spec is a mapping, got {type(raw).__name__}")])
    try:
        spec = StudySpec.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(source, _problems(exc)) from None
    unknown = _check_known_fields(spec.grid, TrialConfig, "grid")
    if unknown:
        raise SpecError(source, [(u.split(": ", 1)[0], u.split(": ", 1)[1]) for u in unknown])
    points = spec.points()
    if not points:
        raise SpecError(source, [("grid", "expands to no trial (an axis is an empty list)")])
    problems: list[tuple[str, str]] = []
    for i, point in enumerate(points):
        try:
            TrialConfig.model_validate(deep_merge(spec.base(), point))
        except ValidationError as exc:
            shown = ", ".join(f"{k}={v}" for k, v in flatten(point).items())
            problems += [(f"grid point {i} ({shown}) -> {p}", m) for p, m in _problems(exc)]
    if problems:
        raise SpecError(source, problems)
    return spec


def load_spec(path: str | Path, overrides: Iterable[str] = ()) -> StudySpec:
    """Read, override and validate a study YAML; raise `SpecError` naming file and field."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise SpecError(source, [("", "no such file")])
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(source, [("", f"not valid YAML: {exc}")]) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SpecError(source, [("", f"a study spec is a mapping, got {type(raw).__name__}")])
    return validate_spec(apply_overrides(raw, overrides, source), source)
