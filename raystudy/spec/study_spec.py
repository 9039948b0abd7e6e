"""The study spec: base trial values, the grid or search space over them, and how the study
is run (search, execution, resources) and tracked (the MLflow store).

Only what a field holds on its own and what the fields of one block say together are checked
here; what needs datasets, models or metrics is checked above, in `raystudy.checks`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from raystudy.keys import train_key
from raystudy.spec.grid import ALSO, deep_merge, flatten, grid_points
from raystudy.spec.search_space import check_space, random_points
from raystudy.spec.tracking_config import TrackingConfig, absolute_sqlite, postgres_driver
from raystudy.spec.trial_config import (
    NAME_MAX_LENGTH,
    NAME_PATTERN,
    SEED_LIMIT,
    StrictConfig,
    TrialConfig,
    _TrialFields,
)
from raystudy.spec.url_secrets import literal_password, placeholders, storage_message


class AshaConfig(StrictConfig):
    """Early stopping of poor trials on a metric reported during training (Li et al. 2020)."""

    metric: str = train_key("loss")
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


class SearchConfig(StrictConfig):
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

    def first_target(self) -> tuple[str | None, str | None]:
        """The (first) searched metric and its mode; (None, None) for a grid."""
        metric = self.metric[0] if isinstance(self.metric, list) else self.metric
        mode = self.mode[0] if isinstance(self.mode, list) else self.mode
        return metric, mode

    @field_validator("storage")
    @classmethod
    def _storage_url(cls, v: str | None) -> str | None:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        if v is None:
            return v
        if literal_password(v) or placeholders(v):
            raise ValueError(storage_message(v))
        try:
            url = make_url(v)
        except ArgumentError:
            raise ValueError(
                f"{v!r} is not a database URL: use sqlite:///path/to/optuna.db, "
                "postgresql://user@host/db, mysql://... or null (optuna.db in the study folder)"
            ) from None
        if url.get_backend_name() == "sqlite":
            return absolute_sqlite(v, "search.storage")
        return postgres_driver(v, "search.storage")

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> SearchConfig:
        problems = check_space(self.space, config=TrialConfig, context=info.context)
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


class ExecutionConfig(StrictConfig):
    """How Tune runs the trials."""

    max_failures: int = Field(1, ge=0, description="retries of a failed trial from its checkpoint")
    time_budget_s: float | None = Field(None, gt=0, description="stop the study after this")
    trial_time_limit_s: float | None = Field(
        None,
        gt=0,
        description="wall seconds one attempt of a trial (training and scoring) may take; past "
        "it the trial fails (raystudy.error TrialTimedOut, tag raystudy.timed_out_after_s) and "
        "is retried from its checkpoint up to max_failures; null: no limit",
    )
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
    system_metrics: bool = Field(
        True,
        description="log MLflow system metrics (CPU, memory, GPU utilisation and memory) on "
        "each trial's run, a point a minute; false turns them off",
    )
    log_models: bool = Field(
        True,
        description="log each finished trial's encoder as an MLflow model (runs:/<run id>/"
        "model, images -> representation means; 1.9 MB a trial for the conv net at 64 px, 38 "
        "MB for the resnet at 128 px); false for huge sweeps whose models are not worth it",
    )
    log_artifacts: bool = Field(
        True,
        description="draw and log each finished trial's figures (reconstructions, held-out "
        "reconstructions, latent traversals and their GIF, the DCI Hinton diagram; ~0.4 MB and "
        "~1-2 CPU s a trial on 2026-11-27's dev box); false for huge sweeps: the metrics and "
        "models are logged all the same",
    )
    register_models: bool = Field(
        False,
        description="also register each logged model in the MLflow model registry, as a "
        "version of raystudy-<study name> tagged with the trial's key params (needs "
        "log_models)",
    )

    @model_validator(mode="after")
    def _registering_logs(self) -> ExecutionConfig:
        if self.register_models and not self.log_models:
            raise ValueError(
                "register_models registers the logged models: it needs log_models: true"
            )
        return self


class ResourcesConfig(StrictConfig):
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

    @field_validator("grid")
    @classmethod
    def _also_blocks(cls, grid: dict[str, Any]) -> dict[str, Any]:
        blocks = grid.get(ALSO)
        if blocks is None:
            return grid
        if not isinstance(blocks, list) or not all(isinstance(b, dict) and b for b in blocks):
            raise ValueError(
                f"grid.{ALSO} is a list of grid blocks, each a mapping of axes that replace the "
                f"grid's own (e.g. also: [{{dataset: [mpi3d], split: [...]}}]); got {blocks!r}"
            )
        nested = [i for i, b in enumerate(blocks) if ALSO in b]
        if nested:
            raise ValueError(f"grid.{ALSO}[{nested[0]}] holds its own `{ALSO}`: blocks do not nest")
        return grid

    @model_validator(mode="after")
    def _cuda_scoring_has_a_gpu(self) -> StudySpec:
        # A trial without a GPU would fail at its first probe, after training: say so now.
        if self.scores_on_cuda() and not self.resources.gpu:
            raise ValueError(
                "evaluation.device: cuda scores each trial on its GPU, but resources.gpu is 0; "
                "give the trials a GPU (resources.gpu > 0) or set evaluation.device to auto "
                "(the trial's device) or cpu"
            )
        return self

    def scores_on_cuda(self) -> bool:
        """Whether any trial asks to fit its probes on a GPU (`evaluation.device: cuda`)."""
        in_grid = (self.grid.get("evaluation") or {}).get("device", [])
        return "cuda" in {
            self.evaluation.device,
            *(in_grid if isinstance(in_grid, list) else [in_grid]),
        }

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
        return grid_points(self.grid)

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
