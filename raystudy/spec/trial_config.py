"""The configuration of one trial: dataset, split, model, training and evaluation.

Pydantic models with the rules each field holds on its own (ranges, no booleans for numbers,
checkpoints on report steps). Names of datasets, objectives, architectures, splits, metrics and
probes are checked against the registries when `raystudy.checks` validates a spec and passes
them in the validation context (`NAMES`); this module imports nothing of raystudy above the
configuration layer.
"""

from __future__ import annotations

import difflib
import itertools
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

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

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
#: A study name is a folder name and an MLflow experiment name; well under both limits.
NAME_MAX_LENGTH = 100
#: Seeds go to numpy, torch and the search samplers; the last take 32-bit seeds only.
SEED_LIMIT = 2**32


def _takes_number_not_bool(annotation: Any) -> bool:
    """Whether a field holds a number and never a boolean (`int`, `float | None`, ...)."""
    args = typing.get_args(annotation) or (annotation,)
    plain = [a for a in args if a is not type(None)]
    return bool not in plain and any(a in (int, float) for a in plain)


class StrictConfig(BaseModel):
    """A config block: no unknown field, frozen, finite numbers, no boolean for a number."""

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


#: The validation-context key under which the checks pass the registered names of each kind
#: (`{"names": {"dataset": [...], "objective": [...], ...}}`): the registries live in the cores
#: above this module, so the schema is told the names rather than importing them.
NAMES = "names"
KnownNames = Mapping[str, Sequence[str]]


def _known(kind: str, name: str, info: ValidationInfo) -> str:
    """`name` if the validation context lists it among the `kind`s (or lists no `kind`s:
    a config re-read after its study was checked, in a trial or the analysis)."""
    names = ((info.context or {}).get(NAMES) or {}).get(kind)
    if names is not None and name not in names:
        raise ValueError(unknown_name_message(kind, name, list(names)))
    return name


class DatasetConfig(StrictConfig):
    name: str = "color_dsprites"
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _dataset_known(cls, v: str, info: ValidationInfo) -> str:
        return _known("dataset", v, info)


class ModelConfig(StrictConfig):
    """Objective and architecture by name, the code size, and the objective's options.

    An objective's options (``beta``, ``gamma``, ``k``, ...) are its own: each objective file
    declares them, with their defaults and ranges, in its `ObjectiveParams` model
    (`raystudy.models.objectives`), and reads only those. Here they are kept as written
    (``model_extra``); a study's checks validate them against the objective's model, refuse an
    option no objective has, and one written for an objective that does not read it
    (`raystudy.checks.model_options`). The spec's base ``model`` section may hold options of
    several objectives, as shared defaults for the objectives a grid sweeps; ``null`` is the
    objective's default.
    """

    # Options are the objectives' own fields, validated against their models (module doc).
    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)

    objective: str = "beta_vae"
    architecture: str = "conv"
    latent_dim: int = Field(
        10, ge=1, le=1024, description="code size; gt_decoder and supervised: one per factor"
    )
    lr: float | None = Field(
        None,
        gt=0.0,
        description="Adam's learning rate for this model, in place of train.lr, so that one "
        "grid trains each model at its own rate (Montero 2021's GT decoder at 1e-3 beside "
        "VAEs at 1e-4); null: train.lr",
    )

    @property
    def options(self) -> dict[str, Any]:
        """The objective options as written, without those left at the objective's default
        (``null``)."""
        return {k: v for k, v in (self.model_extra or {}).items() if v is not None}

    @field_validator("objective")
    @classmethod
    def _objective_known(cls, v: str, info: ValidationInfo) -> str:
        return _known("objective", v, info)

    @field_validator("architecture")
    @classmethod
    def _architecture_known(cls, v: str, info: ValidationInfo) -> str:
        return _known("architecture", v, info)

    @model_validator(mode="after")
    def _options_valid(self, info: ValidationInfo) -> ModelConfig:
        # Without the objectives' models (a config re-read in a trial or the analysis, after
        # its study was checked) the options are kept as they are.
        schemas = (info.context or {}).get(OPTIONS)
        if schemas is None:
            return self
        problem = option_problem(self.objective, self.options, schemas)
        if problem is not None:
            raise ValueError(problem)
        return self


#: The validation-context key under which the checks pass each objective's options model
#: (`{"objective_options": {"beta_vae": <its ObjectiveParams>, ...}}`), as `NAMES` passes
#: the registered names.
OPTIONS = "objective_options"
ObjectiveOptions = Mapping[str, type[BaseModel]]


def all_options(schemas: ObjectiveOptions) -> list[str]:
    """Every option some objective has, sorted."""
    return sorted({name for schema in schemas.values() for name in schema.model_fields})


def option_problem(
    objective: str, options: Mapping[str, Any], schemas: ObjectiveOptions
) -> str | None:
    """ "<option>: <why>" for the first option that no objective has, or that `objective`
    has and refuses; None when all are fine. Options of other objectives pass: the base
    `model` section holds shared defaults (`raystudy.checks.model_options` refuses those
    written for an objective that does not read them)."""
    known = all_options(schemas)
    own = schemas.get(objective)
    reads = sorted(own.model_fields) if own is not None else []
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            return (
                f"{name}: no objective has this option; objective {objective!r} reads "
                f"{', '.join(reads) or 'none'}{hint}"
            )
    if own is None:
        return None
    mine = {k: v for k, v in options.items() if k in own.model_fields}
    try:
        own.model_validate(mine)
    except ValidationError as exc:
        err = exc.errors()[0]
        # the option's name; deeper parts name a branch of its type ("constrained-int")
        where = str(err["loc"][0]) if err["loc"] else "options"
        message = str(err["msg"]).removeprefix("Value error, ")
        got = f" (got {err['input']!r})" if "input" in err and err["loc"] else ""
        return f"{where}: {message}{got} (objective {objective!r})"
    return None


class TrainConfig(StrictConfig):
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


def _metric_known(v: str, info: ValidationInfo) -> str:
    return _known("metric", v, info)


def _probe_known(v: str, info: ValidationInfo) -> str:
    return _known("probe", v, info)


MetricName = Annotated[str, AfterValidator(_metric_known)]
ProbeName = Annotated[str, AfterValidator(_probe_known)]


#: An arm of Montero et al. (2022)'s decoder test: the part re-initialised and trained again
#: while the other stays frozen (`raystudy.training.decoder_retrain`).
DecoderTestArm = typing.Literal["decoder", "encoder"]


#: Where a trial's probes fit (`evaluation.device`).
ScoringDevice = typing.Literal["auto", "cpu", "cuda"]


class EvaluationConfig(StrictConfig):
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
    decoder_test_steps: int = Field(
        0,
        ge=0,
        description="Montero et al. 2022's decoder test: steps of training a re-initialised "
        "decoder on the frozen encoder's codes of the training combinations (train's batch "
        "size and lr), scored on the eval/* images as eval/recon_decoder_test[_heldout]; "
        "0: off",
    )
    decoder_test_arms: list[DecoderTestArm] = Field(
        default_factory=lambda: ["decoder"],
        min_length=1,
        description="the decoder test's arms, each decoder_test_steps long (Montero et al. "
        "2022's finetune.py): decoder, the encoder frozen and the decoder re-initialised and "
        "trained (eval/recon_decoder_test); encoder, the decoder frozen and the encoder "
        "re-initialised and trained with the VAE loss (eval/recon_encoder_test; not for "
        "gt_decoder, which has no encoder)",
    )
    decoder_test_rebalance: bool = Field(
        False,
        description="the decoder test draws its training images so that every value of the "
        "shape factor is as frequent (the authors' rebalance_dataset); needs a shape factor",
    )
    decoder_test_lr: float | None = Field(
        None, gt=0.0, description="Adam's learning rate in the decoder test; null: train.lr"
    )
    seed: int = Field(
        0, ge=0, lt=SEED_LIMIT, description="the same ground-truth draws score every model"
    )
    device: ScoringDevice = Field(
        "auto",
        description="where the probes fit: auto, the trial's device (its GPU where it has "
        "one); cpu; cuda, the trial's GPU (needs resources.gpu > 0). The mlp probe (scikit-learn's "
        "batched torch twin) and gbt (xgboost) fit there; DCI and the other metrics stay on "
        "the CPU (docs/performance/scoring.md)",
    )

    @model_validator(mode="after")
    def _decoder_test_scored(self) -> EvaluationConfig:
        # Its NLLs are of the eval/* images: without them the test would train for nothing.
        if self.decoder_test_steps and not self.num_eval_images:
            raise ValueError(
                f"decoder_test_steps ({self.decoder_test_steps}) needs num_eval_images > 0: "
                "the decoder test is scored on those images; set both, or decoder_test_steps 0"
            )
        if len(set(self.decoder_test_arms)) < len(self.decoder_test_arms):
            raise ValueError(f"decoder_test_arms {self.decoder_test_arms} names an arm twice")
        return self


class _TrialFields(StrictConfig):
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    split: str | dict[str, Any] = "iid"
    model: ModelConfig = Field(default_factory=ModelConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    seed: int = Field(0, ge=0, lt=SEED_LIMIT)

    @model_validator(mode="before")
    @classmethod
    def _model_lr_trains(cls, data: Any) -> Any:
        # model.lr is the rate training uses: written into train.lr here, every reader of
        # train.lr (both training loops, the decoder test's default, params) sees one value.
        if not isinstance(data, Mapping):
            return data
        model = data.get("model")
        lr = model.get("lr") if isinstance(model, Mapping) else getattr(model, "lr", None)
        if isinstance(lr, bool) or not isinstance(lr, int | float) or lr <= 0:
            return data  # null, or refused by model.lr's own rule
        train = data.get("train") or {}
        train = dict(train) if isinstance(train, Mapping) else train.model_dump()
        return {**data, "train": {**train, "lr": lr}}

    @field_validator("split")
    @classmethod
    def _split_known(cls, v: str | dict[str, Any], info: ValidationInfo) -> str | dict[str, Any]:
        if isinstance(v, str):
            return _known("split", v, info)
        # {name: <built-in split>, options: {...}}; a split written out names itself freely.
        if "options" in v and isinstance(v.get("name"), str):
            _known("split", v["name"], info)
        return v


class TrialConfig(_TrialFields):
    """Everything one trial needs: the spec's base values with one grid point substituted."""
