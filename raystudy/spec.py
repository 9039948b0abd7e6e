"""The study YAML -> validated pydantic models (`StudySpec`, `TrialConfig`).

A study spec holds base values for one trial plus a `grid` that mirrors the trial config: a list
is an axis; a list of mappings is a set of alternatives, each expanded on its own; a list of
lists sweeps a list-valued field. Each grid point is merged into the base values and validated as
a `TrialConfig`, so every error is found before Ray starts.
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
import os
import re
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from raystudy.registry import unknown_name_message
from raystudy.search import bound_points, check_space, random_points

if TYPE_CHECKING:
    from raystudy.data.check import DataChecker
    from raystudy.data.splits import Split

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
#: A study name is a folder name and an MLflow experiment name; well under both limits.
NAME_MAX_LENGTH = 100
#: Seeds go to numpy, torch and the search samplers; the last take 32-bit seeds only.
SEED_LIMIT = 2**32


class SpecError(ValueError):
    """A bad study spec: says which file, which field and what is allowed."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        lines = [
            f"{source}: {path}: {msg}" if path else f"{source}: {msg}" for path, msg in problems
        ]
        super().__init__("invalid study spec\n  " + "\n  ".join(lines))


def _takes_number_not_bool(annotation: Any) -> bool:
    """Whether a field holds a number and never a boolean (`int`, `float | None`, ...)."""
    args = typing.get_args(annotation) or (annotation,)
    plain = [a for a in args if a is not type(None)]
    return bool not in plain and any(a in (int, float) for a in plain)


class _Strict(BaseModel):
    # inf and nan are never a meaningful rate, weight, size or CPU count here.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        # Pydantic reads True as 1, and YAML reads yes/no/on/off as booleans: `steps: yes`
        # would train one step.
        name = info.field_name
        if (
            isinstance(value, bool)
            and name is not None
            and _takes_number_not_bool(cls.model_fields[name].annotation)
        ):
            raise ValueError(
                f"a number is needed, not the boolean {str(value).lower()} (YAML reads "
                "yes/no/on/off/true/false as booleans)"
            )
        return value


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
    """Objective and architecture by name, and the objectives' hyperparameters.

    Each objective reads only the fields it names (`OBJECTIVES[name].hyperparameters`) and
    ignores the others, so one grid can sweep several objectives. Defaults follow
    disentanglement_lib's study configs where those fix a value.
    """

    objective: str = "beta_vae"
    architecture: str = "conv"
    latent_dim: int = Field(
        10, ge=1, le=1024, description="code size; gt_decoder and supervised: one per factor"
    )
    beta: float = Field(
        1.0,
        ge=0.0,
        description="weight of the KL (beta_vae, ada_gvae, ml_vae) or of the TC (beta_tcvae)",
    )
    gamma: float | None = Field(
        None,
        gt=0.0,
        description="annealed_vae: weight of |KL - C| (unset: 1000); "
        "factor_vae: weight of the TC (unset: 10)",
    )
    c_max: float = Field(25.0, ge=0.0, description="annealed_vae: final capacity C in nats")
    iteration_threshold: int = Field(
        100_000, ge=1, description="annealed_vae: steps over which C grows from 0 to c_max"
    )
    lambda_od: float = Field(
        10.0,
        ge=0.0,
        description="dip_vae_i / dip_vae_ii: off-diagonal covariance weight; the diagonal "
        "weight is 10x (I) or 1x (II)",
    )
    kl_mode: Literal["kl", "symmetric_kl"] = Field(
        "kl", description="ada_gvae / ml_vae: divergence that decides the shared dimensions"
    )
    k: Annotated[int, Field(ge=1, strict=True)] | Literal["random"] = Field(
        1,
        description="ada_gvae / ml_vae: factors that differ within a pair; random: uniform "
        "in 1..K-1 per pair",
    )

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
    steps: int = Field(500, ge=0, description="0: no training (dry runs, reference models)")
    batch_size: int = Field(64, ge=1)
    lr: float = Field(1e-4, gt=0.0)
    lr_milestones: list[int] = Field(
        default_factory=list,
        description="steps from which the learning rate is multiplied by lr_decay once more "
        "(Dittadi 2021: [150000, 300000] with lr_decay 0.5)",
    )
    lr_decay: float = Field(0.5, gt=0.0, le=1.0, description="factor applied at each milestone")
    kl_warmup_steps: int = Field(0, ge=0, description="linear KL warm-up from 0 to 1")
    grad_clip: float | None = Field(None, gt=0.0, description="max global gradient norm")
    input_noise: bool = False
    input_noise_pixel_sd: float = Field(
        0.05, ge=0.0, description="sd of the per-sub-pixel Gaussian input noise (Dittadi 2021)"
    )
    input_noise_grey_sd: float = Field(
        0.1, ge=0.0, description="sd of the upsampled greyscale Gaussian input noise"
    )
    report_every: int = Field(50, ge=1, description="steps between train/* reports")
    checkpoint_every: int | None = Field(
        None, ge=1, description="steps between checkpoints; null: at every report"
    )
    # Speed only (bench/RESULTS.md, "Training loop"); results equal within float rounding.
    channels_last: bool = Field(
        False, description="train conv models channels-last on CPU (~8% less time per step)"
    )
    compile: bool = Field(
        False,
        description="torch.compile the encoder and decoder for training (~18% less time per "
        "CPU step after ~20 s of compiling: pays from ~1,000 steps)",
    )

    @field_validator("lr_milestones")
    @classmethod
    def _milestones_increase(cls, v: list[int]) -> list[int]:
        if any(m < 1 for m in v) or any(b <= a for a, b in itertools.pairwise(v)):
            raise ValueError(f"must be steps >= 1 in increasing order, got {v}")
        return v

    @model_validator(mode="after")
    def _checkpoint_at_reports(self) -> TrainConfig:
        # A checkpoint between two reports would resume with a half-filled report window.
        if self.checkpoint_every is not None and self.checkpoint_every % self.report_every:
            raise ValueError(
                f"checkpoint_every ({self.checkpoint_every}) must be a multiple of "
                f"report_every ({self.report_every})"
            )
        return self

    @property
    def checkpoint_interval(self) -> int:
        return self.checkpoint_every or self.report_every

    @property
    def tune_reports(self) -> int:
        """Reports a trial makes to Tune (ASHA's clock): one per `report_every` steps and one
        at the last step (checkpoints fall on report steps), then one with the results."""
        return -(-self.steps // self.report_every) + 1


def _metric_known(v: str) -> str:
    from raystudy.metrics import INTERVENTION_METRICS, METRICS

    return _known("metric", v, [*METRICS, *INTERVENTION_METRICS])


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
    probe_train: int = Field(
        10000,
        ge=20,
        description="points each transfer probe trains on (the mlp holds 10% out to stop early)",
    )
    probe_test: int = Field(5000, ge=10, description="points each transfer probe is tested on")
    num_eval_images: int = Field(1000, ge=0, description="held-out images for eval/*; 0: none")
    seed: int = Field(
        0, ge=0, lt=SEED_LIMIT, description="the same ground-truth draws score every model"
    )


class _TrialFields(_Strict):
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    split: str | dict[str, Any] = "iid"
    model: ModelConfig = Field(default_factory=ModelConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    seed: int = Field(0, ge=0, lt=SEED_LIMIT)

    @field_validator("split")
    @classmethod
    def _split_known(cls, v: str | dict[str, Any]) -> str | dict[str, Any]:
        from raystudy.data import SPLITS

        return _known("split", v, SPLITS) if isinstance(v, str) else v


class TrialConfig(_TrialFields):
    """Everything one trial needs: the spec's base values with one grid point substituted."""

    def flat(self) -> dict[str, Any]:
        """Dotted keys -> values: the MLflow params of a trial.

        Of the model's hyperparameters only those its objective reads are kept, at the value
        it uses (an unset `gamma` is the objective's default): a factor_vae run has no
        `model.beta`, so a filter or an `analyze --by beta` group never catches it.
        """
        data = self.model_dump(mode="json")
        data["model"] = _model_params(self.model)
        return flatten(data)


#: The ModelConfig fields every objective uses; the rest are some objectives' hyperparameters.
_MODEL_COMMON = ("objective", "architecture", "latent_dim")


def _model_params(model: ModelConfig) -> dict[str, Any]:
    from raystudy.models import objective_from_config

    objective = objective_from_config(model)
    own = {h: getattr(objective, h) for h in type(objective).hyperparameters}
    return {**{f: getattr(model, f) for f in _MODEL_COMMON}, **own}


class AshaConfig(_Strict):
    """Early stopping of poor trials on a metric reported during training (Li et al. 2020)."""

    metric: str = "train/loss"
    mode: Literal["min", "max"] = "min"
    grace_period: int = Field(2, ge=1, description="reports before a trial can be stopped")
    reduction_factor: float = Field(2.0, gt=1.0)
    max_t: int = Field(100, ge=1, description="reports a trial may make at most")

    @model_validator(mode="after")
    def _grace_within_budget(self) -> AshaConfig:
        if self.grace_period > self.max_t:
            raise ValueError(
                f"grace_period ({self.grace_period}) must be at most max_t ({self.max_t}): "
                "no trial could be stopped before its last report"
            )
        return self


class SearchConfig(_Strict):
    """grid: the `grid` field; random / optuna: `num_samples` draws from `space`."""

    method: Literal["grid", "random", "optuna"] = "grid"
    space: dict[str, Any] = Field(default_factory=dict)
    num_samples: int = Field(10, ge=1)
    metric: str | list[str] | None = None
    mode: Literal["min", "max"] | list[Literal["min", "max"]] | None = None
    sampler: Literal["tpe", "nsga2", "random"] = "tpe"
    storage: str | None = Field(
        None, description="Optuna storage URL; null -> sqlite optuna.db in the study folder"
    )
    seed: int = Field(0, ge=0, lt=SEED_LIMIT)
    asha: AshaConfig | None = None

    @field_validator("storage")
    @classmethod
    def _storage_url(cls, v: str | None) -> str | None:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        if v is None:
            return v
        try:
            url = make_url(v)
        except ArgumentError:
            raise ValueError(
                f"{v!r} is not a database URL: use sqlite:///path/to/optuna.db, "
                "postgresql://user@host/db, mysql://... or null (optuna.db in the study folder)"
            ) from None
        return _absolute_sqlite(v, "search.storage") if url.get_backend_name() == "sqlite" else v

    @model_validator(mode="after")
    def _consistent(self) -> SearchConfig:
        problems = check_space(self.space)
        if problems:
            raise ValueError("; ".join(f"{p.removeprefix('search.')}: {m}" for p, m in problems))
        if self.method == "grid" and self.space:
            raise ValueError("space is for method random or optuna; a grid goes in `grid`")
        if self.method != "grid" and not self.space:
            raise ValueError(f"method {self.method} samples from `space`, which is empty")
        # Settings another method would read: silently ignored, they would mislead.
        # Compared with the defaults, not the fields set: a saved spec.yaml sets them all.
        ignored = {"grid": ("num_samples",), "random": ()}.get(self.method, ())
        if self.method != "optuna":
            ignored += ("metric", "mode", "sampler", "storage")
        fields = type(self).model_fields
        unused = [n for n in ignored if getattr(self, n) != fields[n].default]
        if unused:
            raise ValueError(
                f"{', '.join(unused)} {'has' if len(unused) == 1 else 'have'} no effect with "
                f"method {self.method}: num_samples is for random and optuna, metric, mode, "
                "sampler and storage for optuna (ASHA's metric goes in asha.metric)"
            )
        if self.method == "optuna":
            metrics = self.metric if isinstance(self.metric, list) else [self.metric]
            modes = self.mode if isinstance(self.mode, list) else [self.mode]
            if self.metric is None or self.mode is None or not metrics:
                raise ValueError("method optuna needs `metric` and `mode` (min or max)")
            if len(metrics) != len(modes):
                raise ValueError(f"{len(metrics)} metrics but {len(modes)} modes")
            if len(set(metrics)) != len(metrics):
                raise ValueError(f"a metric is named twice in {metrics}")
            if len(metrics) > 1 and self.asha is not None:
                raise ValueError("asha stops on one metric; not with multi-objective search")
        return self


class ExecutionConfig(_Strict):
    """How Tune runs the trials."""

    max_failures: int = Field(1, ge=0, description="retries of a failed trial from its checkpoint")
    time_budget_s: float | None = Field(None, gt=0, description="stop the study after this")
    max_concurrent_trials: int | None = Field(None, ge=1)
    seeds_per_trial: int = Field(
        1,
        ge=1,
        description="grid points that differ only in `seed` (and in the keys of `stack_over`) "
        "train together, this many per trial, as one batched model; each still gets its own "
        "MLflow run",
    )
    stack_over: list[str] = Field(
        default_factory=list,
        description="model hyperparameters in which the models of one trial may also differ, "
        "e.g. [model.beta]: only weights of a loss term (each objective's `loss_weights`); "
        "needs seeds_per_trial > 1",
    )


class ResourcesConfig(_Strict):
    cpu: float = Field(1.0, gt=0.0, description="CPUs per trial (also torch's thread count)")
    gpu: float = Field(
        0.0, ge=0.0, description="GPUs per trial, fractional to share one; ignored without GPUs"
    )
    autoscale: Literal["auto"] | bool = Field(
        "auto",
        description="which nodes a request may wait for: auto = existing ones and the node "
        "types the cluster's autoscaler can launch (raystudy.resources); true = trust the "
        "request as written; false = existing nodes only",
    )

    @field_validator("autoscale", mode="before")
    @classmethod
    def _auto_true_false(cls, v: Any) -> Any:
        # One clear message instead of pydantic's two (one per member of the union).
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.lower() in ("auto", "true", "false"):
            return {"auto": "auto", "true": True, "false": False}[v.lower()]
        raise ValueError("expected auto, true or false")  # the caller adds what it got

    @field_validator("gpu")
    @classmethod
    def _whole_above_one(cls, v: float) -> float:
        # Ray hands out a GPU in fractions but more than one only whole: 1.5 would fail deep
        # inside Tune ("Tracked actor is not managed by this event manager").
        if v > 1 and not float(v).is_integer():
            raise ValueError(
                f"{v:g} GPUs per trial: a fraction below 1 shares a GPU, above 1 only whole "
                "GPUs (2, 3, ...) can be asked for"
            )
        return v


#: MLflow tracking stores a study can share between its driver and every trial process
#: (SQLAlchemy database schemes may name a driver: postgresql+psycopg2).
TRACKING_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql", "http", "https", "databricks")
FILE_STORE_OPT_IN = "MLFLOW_ALLOW_FILE_STORE"
#: What `tracking.uri` may be, for every message about one that cannot be used.
ALLOWED_TRACKING_URIS = (
    "null (a sqlite store in the study folder), sqlite:///PATH.db, http(s)://HOST:PORT of an "
    "MLflow server, or a database URL (" + ", ".join(f"{s}://" for s in TRACKING_SCHEMES[1:4]) + ")"
)


def _absolute_sqlite(url: str, field: str) -> str:
    """`sqlite:///rel.db` made absolute: every trial runs in a working folder of its own, where
    a relative path would name another, empty database (and a resumed study, started from
    another folder, yet another)."""
    rest = url.removeprefix("sqlite://")
    if not rest.startswith("/") or rest == "/":
        raise ValueError(
            f"{field} {url!r} names no database file: use sqlite:///path/to/file.db "
            "(a file is shared by every trial process; an in-memory one is not)"
        )
    path = rest[1:]
    return url if path.startswith("/") else "sqlite:///" + str(Path(path).resolve())


class TrackingConfig(_Strict):
    uri: str | None = Field(None, description="MLflow tracking URI; null -> sqlite in the study")

    @field_validator("uri")
    @classmethod
    def _store_usable(cls, v: str | None) -> str | None:
        if v is None:
            return v
        scheme = v.partition("://")[0].lower() if "://" in v else ""
        if scheme == "sqlite":
            return _absolute_sqlite(v, "tracking.uri")
        if scheme.split("+")[0] in TRACKING_SCHEMES:
            return v
        if scheme in ("", "file"):
            # MLflow 3 refuses its file store unless told otherwise, in every process.
            if os.environ.get(FILE_STORE_OPT_IN, "").lower() == "true":
                return v if scheme else Path(v).resolve().as_uri()  # see _absolute_sqlite
            raise ValueError(
                f"{v!r} is an MLflow file store, which MLflow 3 refuses unless "
                f"{FILE_STORE_OPT_IN}=true is set; allowed: {ALLOWED_TRACKING_URIS}"
            )
        raise ValueError(
            f"unknown tracking store scheme {scheme!r} in {v!r}; allowed: {ALLOWED_TRACKING_URIS}"
        )


TRIAL_FIELDS = tuple(TrialConfig.model_fields)


class StudySpec(_TrialFields):
    """A study: base trial values, the grid over them, and how to run and track it."""

    name: str = Field(
        pattern=NAME_PATTERN,
        max_length=NAME_MAX_LENGTH,
        description="the MLflow experiment and output folder",
    )
    grid: dict[str, Any] = Field(default_factory=dict)
    search: SearchConfig = Field(default_factory=SearchConfig)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    resources: ResourcesConfig = Field(default_factory=ResourcesConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)

    def base(self) -> dict[str, Any]:
        dumped = self.model_dump(mode="json")
        return {k: dumped[k] for k in TRIAL_FIELDS}

    def trials(self) -> list[TrialConfig]:
        """Every grid point merged into the base values; validated (the spec already was)."""
        return [TrialConfig.model_validate(deep_merge(self.base(), p)) for p in self.points()]

    def points(self) -> list[dict[str, Any]]:
        """The fixed trial overrides: grid points, or the random draws. Empty for optuna,
        whose points are chosen while the study runs."""
        if self.search.method == "random":
            return random_points(self.search.space, self.search.num_samples, self.search.seed)
        if self.search.method == "optuna":
            return []
        return expand_grid(self.grid)

    def num_trials(self) -> int:
        """Models the study trains (one MLflow run each)."""
        return self.search.num_samples if self.search.method == "optuna" else len(self.points())

    def stacks(self) -> list[list[int]]:
        """The Tune trials as indices into `points()`: with `execution.seeds_per_trial` S > 1,
        points equal in everything but `seed` (and the keys of `execution.stack_over`) are
        grouped, in grid order, S at a time (the last group of a kind may be smaller); with
        S = 1 every point is its own trial."""
        points = self.points()
        size = self.execution.seeds_per_trial
        if size == 1:
            return [[i] for i in range(len(points))]
        apart = {"seed", *self.execution.stack_over}
        groups: dict[str, list[int]] = {}
        for i, point in enumerate(points):
            rest = {k: v for k, v in flatten(point).items() if k not in apart}
            groups.setdefault(repr(sorted(rest.items())), []).append(i)
        return [
            members[j : j + size]
            for members in groups.values()
            for j in range(0, len(members), size)
        ]

    def num_tune_trials(self) -> int:
        """Tune trials: models, or stacks of seeds trained together."""
        return self.num_trials() if self.search.method == "optuna" else len(self.stacks())


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


def count_grid(node: Any) -> int:
    """How many points `expand_grid(node)` returns, without expanding it."""
    if isinstance(node, Mapping):
        return math.prod(count_grid(v) for v in node.values())
    if isinstance(node, list):
        return sum(count_grid(item) if isinstance(item, Mapping) else 1 for item in node)
    return 1


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
            value = parse_yaml(text)  # the spec file's rules, merge cap too
        except ValueError as exc:
            raise SpecError(source, [(f"--set {path}", f"value is {exc}")]) from None
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


# How pydantic labels the branch of a union in an error's loc (`int | Literal["random"]` gives
# "constrained-int" and "literal['random']"); never a field name.
_UNION_TAG = re.compile(
    r"^(str|int|float|bool|none|constrained-\w+|literal\[.*\]|function-\w+\[.*\]"
    r"|(dict|list|tuple|set)\[.*\])$"
)


def _loc(loc: tuple[Any, ...], key: bool = False) -> str:
    out = ""
    for i, part in enumerate(loc):
        # `part` is a mapping's key (pydantic marks it "[key]", or ends the loc with it)
        is_key = (i + 1 < len(loc) and loc[i + 1] == "[key]") or (i == len(loc) - 1 and key)
        if part == "[key]" or (isinstance(part, str) and _UNION_TAG.match(part)):
            continue  # pydantic's union-branch labels say nothing to a user
        if isinstance(part, int) and not is_key:
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that holds the field at `loc` (None if `loc` leaves the models)."""
    model: type[BaseModel] = root
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        # `AshaConfig | None` and the like: the model among the annotation's alternatives.
        options = typing.get_args(field.annotation) or (field.annotation,)
        models = [t for t in options if isinstance(t, type) and issubclass(t, BaseModel)]
        if not models:
            return None
        model = models[0]
    return model


def _problems(
    exc: ValidationError, prefix: str = "", root: type[BaseModel] | None = None
) -> list[tuple[str, str]]:
    problems = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
            owner = _model_at(root, tuple(err["loc"][:-1])) if root else None
            if owner is not None:
                name = str(err["loc"][-1])
                msg = unknown_name_message("field", name, list(owner.model_fields))
        elif err["type"] == "value_error" and isinstance(err.get("input"), Mapping):
            # A model validator of ours: its input is the whole block (noise, not shown), and
            # its message may start with the field it is about ("space.model.beta: ...").
            owner = _model_at(root, tuple(err["loc"])) if root else None
            field, sep, rest = msg.partition(": ")
            head = field.replace("[", ".").split(".")[0]
            if owner is not None and sep and head in owner.model_fields:
                loc = (*err["loc"], field)
                problems.append((prefix + _loc(loc), rest))
                continue
        elif "input" in err and err["type"] not in ("missing",):
            msg = f"{msg} (got {err['input']!r})"
        problems.append((prefix + _loc(err["loc"], key=err["type"] == "invalid_key"), msg))
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


MAX_DEPTH = 32
MAX_NODES = 100_000
#: Every trial is validated here, then scheduled by Tune and tracked by MLflow one by one: a
#: grid beyond this is a typo (an extra axis) far more often than a plan.
MAX_TRIALS = 100_000
_TOO_DEEP = f"a study spec nests a handful of levels; at most {MAX_DEPTH} are accepted"


def _shape_problem(raw: Any) -> tuple[str, str] | None:
    """(path, message) for a document nested deeper than MAX_DEPTH or holding more than
    MAX_NODES values, else None.

    Iterative and bounded, so that neither a deep document, a self-referencing one (YAML
    anchors can make a list that contains itself) nor an alias bomb (each level repeating
    the last many times) can exhaust the stack or the clock here or in what validates it.
    """
    stack: list[tuple[Any, str, int]] = [(raw, "", 0)]
    seen = 0
    while stack:
        node, path, depth = stack.pop()
        seen += 1
        if depth > MAX_DEPTH:
            shown = path if len(path) <= 80 else path[:77] + "..."
            return shown, f"nested too deeply ({_TOO_DEEP})"
        if seen > MAX_NODES:
            return "", f"holds more than {MAX_NODES} values (YAML aliases repeating each other?)"
        if isinstance(node, Mapping):
            stack += [(v, f"{path}.{k}" if path else str(k), depth + 1) for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node)]
    return None


def validate_spec(raw: Any, source: str = "<spec>", check_data: bool = True) -> StudySpec:
    """A validated StudySpec, or SpecError naming every problem with file and field.

    `check_data` also builds each distinct dataset and split the trials use (opening dataset
    files): what a study needs before it starts, not what reading a finished one needs.
    """
    if not isinstance(raw, Mapping):
        raise SpecError(source, [("", f"a study spec is a mapping, got {type(raw).__name__}")])
    shape = _shape_problem(raw)
    if shape is not None:
        raise SpecError(source, [shape])
    try:
        spec = StudySpec.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(source, _problems(exc, root=StudySpec)) from None
    unknown = _check_known_fields(spec.grid, TrialConfig, "grid")
    unknown += _check_known_fields(spec.search.space, TrialConfig, "search.space")
    if unknown:
        raise SpecError(source, [(u.split(": ", 1)[0], u.split(": ", 1)[1]) for u in unknown])
    if spec.search.method != "grid" and spec.grid:
        raise SpecError(
            source,
            [
                (
                    "grid",
                    f"search method {spec.search.method} samples search.space; leave grid empty",
                )
            ],
        )
    size = count_grid(spec.grid) if spec.search.method == "grid" else spec.search.num_samples
    if size > MAX_TRIALS:
        field = "grid" if spec.search.method == "grid" else "search.num_samples"
        raise SpecError(
            source,
            [(field, f"{size} trials; a study holds at most {MAX_TRIALS} (split it into several)")],
        )
    if spec.search.method == "optuna":
        # The points come while the study runs: validate a fixed sample of what it can draw.
        points, label = random_points(spec.search.space, 64, seed=0), "search.space draw"
    else:
        points = spec.points()
        label = "grid point" if spec.search.method == "grid" else "search.space draw"
    if not points:
        raise SpecError(source, [("grid", "expands to no trial (an axis is an empty list)")])
    # Draws may miss a bad corner: every bound, option and alternative is validated too.
    corners = bound_points(spec.search.space) if spec.search.method != "grid" else []
    corner_trials, problems = _validate_points(spec, corners, "search.space corner")
    trials, more = _validate_points(spec, points, label)
    if problems or more:
        raise SpecError(source, _distinct(problems + more))
    if spec.search.asha is not None:
        _check_asha_budget(spec.search.asha, [*trials, *corner_trials], source)
    if spec.search.method == "grid":
        # Two equal trials would train the same model twice under one run name.
        _refuse_repeats(trials, points, range(len(trials)), label, "grid", source)
    if check_data:
        from raystudy.data.check import DataChecker

        checker = DataChecker()
        problems = _data_problems(spec, corner_trials, corners, "search.space corner", checker)
        problems += _data_problems(spec, trials, points, label, checker)
        if problems:
            raise SpecError(source, _distinct(problems))
        problems = _search_metric_problems(spec, trials, checker)
        if problems:
            raise SpecError(source, problems)
    if spec.execution.seeds_per_trial > 1:
        _check_stackable(spec, source)
        for stack in spec.stacks():
            # Equal models of one stack would share one MLflow run (random draws can repeat).
            _refuse_repeats(trials, points, stack, label, "execution.seeds_per_trial", source)
    elif spec.execution.stack_over:
        raise SpecError(
            source,
            [
                (
                    "execution.stack_over",
                    "has no effect while execution.seeds_per_trial is 1: set seeds_per_trial "
                    "to how many models one trial trains",
                )
            ],
        )
    return spec


def _validate_points(
    spec: StudySpec, points: list[dict[str, Any]], label: str
) -> tuple[list[TrialConfig], list[tuple[str, str]]]:
    """The trial config of each point merged into the spec's values, and the problems of
    those that do not validate (one report per distinct problem, not per point)."""
    problems: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    trials: list[TrialConfig] = []
    base = spec.base()
    for i, point in enumerate(points):
        try:
            trials.append(TrialConfig.model_validate(deep_merge(base, point)))
        except ValidationError as exc:
            for p, m in _problems(exc, root=TrialConfig):
                if (p, m) not in seen:
                    seen.add((p, m))
                    problems.append((f"{_point_label(label, i, point)} -> {p}", m))
    return trials, problems


def _distinct(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The problems, each (field, message) once: a corner and a draw often share one."""
    seen: set[tuple[str, str]] = set()
    out = []
    for where, message in problems:
        key = (where.rpartition(" -> ")[2], message)
        if key not in seen:
            seen.add(key)
            out.append((where, message))
    return out


def _refuse_repeats(
    trials: list[TrialConfig],
    points: list[dict[str, Any]],
    among: Iterable[int],
    label: str,
    field: str,
    source: str,
) -> None:
    first: dict[str, int] = {}
    for i in among:
        key = repr(trials[i].model_dump(mode="json"))
        if key in first:
            j = first[key]
            raise SpecError(
                source,
                [
                    (
                        field,
                        f"{_point_label(label, i, points[i])} is the same trial as "
                        f"{_point_label(label, j, points[j])}: give every trial its own values "
                        "(e.g. distinct seeds)",
                    )
                ],
            )
        first[key] = i


def _check_stackable(spec: StudySpec, source: str) -> None:
    from raystudy.models.objectives import OBJECTIVES

    field = "execution.seeds_per_trial"
    if spec.search.method == "optuna":
        raise SpecError(
            source, [(field, "optuna proposes one configuration per trial; use 1 with optuna")]
        )
    names = {spec.model.objective, *(t.model.objective for t in spec.trials())}
    unstackable = sorted(n for n in names if not OBJECTIVES.get(n).stackable)
    if unstackable:
        raise SpecError(
            source,
            [
                (
                    field,
                    f"objective(s) {', '.join(unstackable)} train networks of their own and "
                    f"cannot be stacked; use 1, or leave them out of the grid",
                )
            ],
        )
    # A stack shares one batched pass: its models may differ only in what weights a loss
    # term, and only where every objective of the grid has that weight.
    weights = set.intersection(*(set(OBJECTIVES.get(n).loss_weights) for n in names))
    allowed = ", ".join(f"model.{w}" for w in sorted(weights)) or "none for " + ", ".join(
        sorted(names)
    )
    problems = [
        (
            f"execution.stack_over[{i}]",
            f"{key!r} cannot vary within a stack; allowed: {allowed} (the loss weights shared "
            "by every objective of the grid)",
        )
        for i, key in enumerate(spec.execution.stack_over)
        if not key.startswith("model.") or key.removeprefix("model.") not in weights
    ]
    if problems:
        raise SpecError(source, problems)


def _point_label(label: str, i: int, point: Mapping[str, Any]) -> str:
    """`grid point 3 (model.beta=4, seed=1)`: which point, by the values it sets."""
    return f"{label} {i} (" + ", ".join(f"{k}={v}" for k, v in flatten(point).items()) + ")"


def _data_problems(
    spec: StudySpec,
    trials: list[TrialConfig],
    points: list[dict[str, Any]],
    label: str,
    checker: DataChecker,
) -> list[tuple[str, str]]:
    """Build every distinct dataset and split the trials use, once each.

    A missing or malformed dataset file, a split the dataset cannot hold, or a split written
    in the YAML whose sets are malformed, empty or overlap would otherwise fail in every
    trial, after Ray has started. A problem of the spec's own dataset/split is reported at
    its field; one that only a grid point brings, at that point.
    """
    from raystudy.data.check import DataProblem

    problems: list[tuple[str, str]] = []
    reported = set()
    models: dict[str, tuple[str, str] | None] = {}
    for i, (trial, point) in enumerate(zip(trials, points, strict=True)):
        built = checker.split(trial.dataset.name, trial.dataset.options, trial.split)
        problem = built if isinstance(built, DataProblem) else None
        own = trial.dataset == spec.dataset and trial.split == spec.split
        if problem is None:
            # The data is fine: can this model be built on it (conv is for 64 px only), and
            # can its pairs be drawn from the split?
            ds = checker.dataset(trial.dataset.name, trial.dataset.options)
            key = repr((trial.model, trial.dataset, trial.split))
            if key not in models:
                models[key] = _model_problem(trial.model, ds, built)
            found = models[key]
            if found is None or found in reported:
                continue
            reported.add(found)
            own = own and trial.model == spec.model
            field, message = found
            where = field if own else f"{_point_label(label, i, point)} -> {field}"
            problems.append((where, message))
            continue
        if problem in reported:  # once, not once per grid point
            continue
        reported.add(problem)
        where = problem.field if own else f"{_point_label(label, i, point)} -> {problem.field}"
        problems.append((where, problem.message))
    return problems


def reported_metrics(trial: TrialConfig, split: Split, factor_names: Sequence[str]) -> set[str]:
    """The final scores a trial of this config reports (DESIGN.md Sec. 6): what
    `search.metric` may name besides the train/* losses."""
    from raystudy.metrics import INTERVENTION_METRICS, METRICS, transfer
    from raystudy.metrics.registry import metric_outputs
    from raystudy.metrics.unsupervised import unsupervised

    ev = trial.evaluation
    out: set[str] = set()
    if ev.num_eval_images:
        plain = unsupervised.outputs  # type: ignore[attr-defined]
        out |= {f"eval/{k}" for k in plain}
        if "heldout" in split.roles:
            out |= {f"eval/{k}_heldout" for k in plain}
    for name in ev.metrics:
        fn = METRICS.get(name) if name in METRICS else INTERVENTION_METRICS.get(name)
        namespace = getattr(fn, "namespace", "dis")
        out |= {f"{namespace}/{k}" for k in metric_outputs(name)}
    for scenario in split.scenarios if ev.probes else ():
        for probe in ev.probes:
            for score in transfer.outputs:  # type: ignore[attr-defined]
                head = f"transfer/{scenario}/{probe}/{score}"
                out |= {head, *(f"{head}/{f}" for f in factor_names)}
    return out


def _check_asha_budget(asha: AshaConfig, trials: list[TrialConfig], source: str) -> None:
    """ASHA ends every trial at its `max_t`-th report; one that reports more is cut off before
    its results, which are its last report: each such trial would end unevaluated."""
    longest = max(trials, key=lambda t: t.train.tune_reports)
    if longest.train.tune_reports > asha.max_t:
        t = longest.train
        raise SpecError(
            source,
            [
                (
                    "search.asha.max_t",
                    f"{asha.max_t} is fewer than the {t.tune_reports} reports a trial makes "
                    f"(train.steps {t.steps} / report_every {t.report_every}, plus one with its "
                    "results): ASHA would stop every trial that survives its rungs before it is "
                    f"evaluated; set max_t to at least {t.tune_reports}, or raise report_every",
                )
            ],
        )


def _search_metric_problems(
    spec: StudySpec, trials: list[TrialConfig], checker: DataChecker
) -> list[tuple[str, str]]:
    """A `search.metric` no trial reports leaves Optuna learning nothing (each trial ends
    pruned), and an ASHA metric missing from the training reports turns early stopping off:
    both silently, so both are refused here."""
    from raystudy.trial import split_tag

    search = spec.search
    named: list[tuple[str, str]] = []
    if search.method == "optuna" and search.metric is not None:
        metrics = search.metric if isinstance(search.metric, list) else [search.metric]
        many = isinstance(search.metric, list)
        named = [
            (f"search.metric[{i}]" if many else "search.metric", m) for i, m in enumerate(metrics)
        ]
    if search.asha is not None:
        named.append(("search.asha.metric", search.asha.metric))
    problems: list[tuple[str, str]] = []
    for field, metric in named:
        final = not metric.startswith("train/")
        if final and field == "search.asha.metric":
            problems.append(
                (
                    field,
                    f"{metric!r} is not reported while training; ASHA compares trials at their "
                    "training reports: use a train/* metric (train/loss, train/recon, train/kl "
                    "or an objective's own train/* term)",
                )
            )
            continue
        if metric in ("train/loss", "train/recon", "train/kl"):
            continue  # every objective reports these
        terms: dict[str, frozenset[str]] = {}  # the names depend on the objective alone
        for trial in trials:
            ds = checker.dataset(trial.dataset.name, trial.dataset.options)
            if final:
                built = checker.split(trial.dataset.name, trial.dataset.options, trial.split)
                reported = reported_metrics(trial, built, ds.factors.names)  # type: ignore[union-attr,arg-type]
                what = (
                    f"with evaluation.metrics {trial.evaluation.metrics}, probes "
                    f"{trial.evaluation.probes} and split {split_tag(trial)}"
                )
                shown = sorted(m for m in reported if m.count("/") <= 3)
                per_factor = " and the per-factor transfer/<scenario>/<probe>/mae/<factor>"
                listed = ", ".join(shown) + (per_factor if trial.evaluation.probes else "")
            else:
                objective = trial.model.objective
                if objective not in terms:
                    terms[objective] = _train_terms(trial.model, ds)
                reported = terms[objective]
                what, listed = f"objective {trial.model.objective}", ", ".join(sorted(reported))
            if reported and metric not in reported:
                problems.append(
                    (
                        field,
                        f"{metric!r} is not reported by the trials ({what}); they report: {listed}",
                    )
                )
                break
    return problems


@functools.cache
def _train_terms_of(
    model: ModelConfig, channels: int, resolution: int, factors: int
) -> frozenset[str]:
    """The train/* names an objective reports, from one step on the meta device (shapes
    only: nothing is computed or allocated); empty if that cannot be run."""
    import torch

    from raystudy.models import build
    from raystudy.models.factory import example_batch

    try:
        with torch.device("meta"):
            net, objective = build(model, channels, resolution, factors)
            batch = example_batch(
                channels, resolution, factors, 4, objective.pairs, torch.device("meta")
            )
            terms = objective(net, batch, step=0)
    except Exception:  # an objective that needs real values: its names stay unchecked
        return frozenset()
    return frozenset(f"train/{k}" for k in terms.scalars())


def _train_terms(model: ModelConfig, ds: Any) -> frozenset[str]:
    return _train_terms_of(model, ds.channels, ds.resolution, ds.factors.num_factors)


#: The most parameters a model may have (weights, gradients and Adam's two moments of 2**31
#: float32 parameters are 34 GB): beyond it, a resolution typo behind an `mlp` would only
#: surface as an out-of-memory kill in every trial.
MAX_MODEL_PARAMETERS = 2**31


def _model_problem(model: ModelConfig, ds: Any, split: Any) -> tuple[str, str] | None:
    """(field, message) if the model cannot be built on `ds` or trained on `split`, else
    None."""
    from raystudy.models.objectives import objective_from_config
    from raystudy.train import pair_k_problem, varying_in_encoder_set

    try:
        objective = objective_from_config(model)
        latent = ds.factors.num_factors if objective.code_is_factor_sized else model.latent_dim
        size = _network_size(model.architecture, ds.channels, latent, ds.resolution)
    except Exception as exc:
        return (
            "model.architecture",
            f"{exc} (dataset {ds.name} at resolution {ds.resolution}; "
            "architectures: conv 64 px, resnet 64 or 128 px, mlp any)",
        )
    if size > MAX_MODEL_PARAMETERS:
        return (
            "model.architecture",
            f"{model.architecture} at resolution {ds.resolution} has {size:,} parameters, more "
            f"than {MAX_MODEL_PARAMETERS:,}: lower dataset.options.resolution",
        )
    pairs = (
        pair_k_problem(objective.pair_k, varying_in_encoder_set(ds, split), split)
        if objective.pair_k is not None
        else None
    )
    if pairs is not None:
        return "model.k", f"{pairs}; allowed: 1 up to that number, or random with 2 or more"
    return None


@functools.cache
def _network_size(architecture: str, channels: int, latent_dim: int, resolution: int) -> int:
    """Parameters of the encoder and decoder, built on the meta device (shapes only, no
    memory); once per shape, since a sweep over loss weights builds the same network."""
    import torch

    from raystudy.models import build_model, num_parameters

    with torch.device("meta"):
        return num_parameters(build_model(architecture, channels, latent_dim, resolution))


def parse_yaml(text: str) -> Any:
    """`text` read under a spec file's rules (`SpecLoader`); ValueError("not valid YAML:
    <why>") for anything it refuses, nesting too deep for the parser included."""
    try:
        return yaml.load(text, Loader=SpecLoader)  # a SafeLoader: plain data only
    except yaml.YAMLError as exc:
        raise ValueError(f"not valid YAML: {exc}") from None
    except RecursionError:
        raise ValueError(f"not valid YAML: nested too deeply ({_TOO_DEEP})") from None


class SpecLoader(yaml.SafeLoader):
    """`yaml.safe_load`'s loader (plain data only, no Python tags), refusing a key that a
    mapping repeats: YAML forbids it, yet PyYAML keeps the last value and silently drops the
    first (`train:` written twice loses half of the training settings)."""

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        # PyYAML copies the entries of every merged mapping (`<<: [*a, *a, ...]`) into the
        # merging one, level by level: ten references per level grow tenfold per level and a
        # few lines hang the loader. Merged mappings are flattened before their users, so a
        # cap checked here stops the growth at the first level past it.
        super().flatten_mapping(node)
        if len(node.value) > MAX_NODES:
            raise yaml.constructor.ConstructorError(
                "while merging mappings",
                node.start_mark,
                f"the merged mapping holds more than {MAX_NODES} values "
                "(YAML merge keys repeating each other?)",
                node.start_mark,
            )

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # PyYAML's scalar constructors raise plain Python errors on well-formed YAML they
        # cannot convert: an integer of 5000 digits (Python's int limit), `!!int 12a`,
        # `2001-13-45` read as a date, `!!timestamp x`. Each becomes a YAML error at its place.
        try:
            return super().construct_object(node, deep=deep)
        except (yaml.YAMLError, RecursionError):
            raise
        except Exception as exc:
            kind = node.tag.rsplit(":", 1)[-1]
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {kind} value: {exc}", node.start_mark
            ) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base` then `key: ...` overrides on purpose
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue  # an unhashable key: the base class reports it
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r} (first at line {first.start_mark.line + 1})",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def load_spec(
    path: str | Path, overrides: Iterable[str] = (), check_data: bool = True
) -> StudySpec:
    """Read, override and validate a study YAML; raise `SpecError` naming file and field
    (`check_data`: see `validate_spec`)."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise SpecError(source, [("", "no such file")])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(source, [("", f"cannot read the file as UTF-8 text: {exc}")]) from None
    try:
        raw = parse_yaml(text)
    except ValueError as exc:
        raise SpecError(source, [("", str(exc))]) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SpecError(source, [("", f"a study spec is a mapping, got {type(raw).__name__}")])
    overrides = list(overrides)
    merged = apply_overrides(raw, overrides, source)
    spec = validate_spec(merged, source, check_data)
    _refuse_shadowed(spec, merged, overrides, source)
    return spec


def _refuse_shadowed(
    spec: StudySpec, merged: dict[str, Any], overrides: list[str], source: str
) -> None:
    """A `--set` of a field that every grid point (or every alternative of the search space)
    sets is replaced in every trial by the point's value: it would do nothing, silently. One
    that some points leave alone sets the base value of those, and stands. `merged` is the
    spec as the overrides left it (`apply_overrides`)."""
    leaves: dict[str, str] = {}  # each field an override sets -> the override's path
    for item in overrides:
        path = item.partition("=")[0].strip()
        if path.split(".")[0] in ("grid", "search"):
            continue
        value: Any = merged
        for part in path.split("."):
            # a later --set of a parent may have replaced this one: nothing of it is left
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None:
            continue
        fields = flatten(value, path + ".") if isinstance(value, Mapping) and value else {path: 0}
        leaves.update(dict.fromkeys(fields, path))
    if not leaves:
        return
    grid = spec.search.method == "grid"
    where = "grid" if grid else "search.space"
    keys = [set(flatten(p)) for p in (spec.points() if grid else bound_points(spec.search.space))]
    shadowed: dict[str, list[str]] = {}
    for leaf, path in leaves.items():
        if all(leaf in k for k in keys):
            shadowed.setdefault(path, []).append(leaf)
    problems = [
        (
            f"--set {path}",
            f"the {where} sets {', '.join(fields)} in every trial, which replaces the value set "
            f"here; override the {where} instead (e.g. --set '{where}.{path.split('.')[0]}=...')",
        )
        for path, fields in shadowed.items()
    ]
    if problems:
        raise SpecError(source, problems)
