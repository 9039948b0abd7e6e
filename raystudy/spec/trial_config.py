"""The configuration of one trial: dataset, split, model, training and evaluation.

Pydantic models with the rules each field holds on its own (ranges, no booleans for numbers,
checkpoints on report steps). Names of datasets, objectives, architectures, splits, metrics and
probes are checked against the registries when `raystudy.checks` validates a spec and passes
them in the validation context (`NAMES`); this module imports nothing of raystudy above the
configuration layer.
"""

from __future__ import annotations

import itertools
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
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


class DatasetConfig(_Strict):
    name: str = "color_dsprites"
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _dataset_known(cls, v: str, info: ValidationInfo) -> str:
        return _known("dataset", v, info)


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
        description="weight of the KL (beta_vae, ada_gvae, ml_vae, lie_group_vae) or of the "
        "TC (beta_tcvae)",
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
    lambda_mmd: float = Field(
        10.0, ge=0.0, description="wae: weight of the MMD between q(z) and N(0, I)"
    )
    lambda_logvar: float = Field(
        0.001,
        ge=0.0,
        description="wae: weight of the L1 penalty on the posterior log-variances",
    )
    beta_low: float = Field(
        2.0, ge=0.0, description="cascade_vae: KL weight of a released code dimension"
    )
    beta_high: float = Field(
        10.0, ge=0.0, description="cascade_vae: KL weight of a dimension not yet released"
    )
    release_every: int = Field(
        20_000, ge=1, description="cascade_vae: steps between releases of one more dimension"
    )
    categories: int = Field(
        3,
        ge=0,
        le=64,
        description="cascade_vae: categories of the discrete code the decoder reads beside z "
        "(0: no discrete code; otherwise >= 2)",
    )
    discrete_from: int = Field(
        80_000,
        ge=0,
        description="cascade_vae: step from which each image gets the category that "
        "reconstructs it best (a balanced matching per batch); before it the code is 0",
    )
    category_balance: float = Field(
        0.001,
        ge=0.0,
        description="cascade_vae: weight of the penalty on pairs of a batch's images that "
        "share a category, sum_k n_k (n_k - 1) / 2, in the matching",
    )
    lambda_hessian: float = Field(
        40.0,
        ge=0.0,
        description="lie_group_vae: weight of sum_{i != j} ||A_i A_j||^2 / D^2 on the basis",
    )
    lambda_commute: float = Field(
        0.0,
        ge=0.0,
        description="lie_group_vae: weight of sum_{i != j} ||A_i A_j - A_j A_i||^2 / D^2",
    )
    lambda_group_recon: float = Field(
        0.1,
        ge=0.0,
        description="lie_group_vae: weight of ||encoder group features - vec exp(sum z_i A_i)||^2",
    )
    encoder_features_prob: float = Field(
        0.2,
        ge=0.0,
        le=1.0,
        description="lie_group_vae: fraction of training steps (drawn per step from a fixed "
        "seed) on which the decoder reads the encoder's group features instead",
    )
    group_matrix_dim: int = Field(
        10,
        ge=1,
        le=32,
        description="lie_group_vae: m of the m x m group element the decoder reads (m^2 features)",
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
    def _objective_known(cls, v: str, info: ValidationInfo) -> str:
        return _known("objective", v, info)

    @field_validator("categories")
    @classmethod
    def _categories_not_one(cls, v: int) -> int:
        if v == 1:
            raise ValueError("categories: 0 (no discrete code) or >= 2; one category is no code")
        return v

    @field_validator("architecture")
    @classmethod
    def _architecture_known(cls, v: str, info: ValidationInfo) -> str:
        return _known("architecture", v, info)


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


def _metric_known(v: str, info: ValidationInfo) -> str:
    return _known("metric", v, info)


def _probe_known(v: str, info: ValidationInfo) -> str:
    return _known("probe", v, info)


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
    decoder_test_steps: int = Field(
        0,
        ge=0,
        description="Montero et al. 2022's decoder test: steps of training a re-initialised "
        "decoder on the frozen encoder's codes of the training combinations (train's batch "
        "size and lr), scored on the eval/* images as eval/recon_decoder_test[_heldout]; "
        "0: off",
    )
    seed: int = Field(
        0, ge=0, lt=SEED_LIMIT, description="the same ground-truth draws score every model"
    )

    @model_validator(mode="after")
    def _decoder_test_scored(self) -> EvaluationConfig:
        # Its NLLs are of the eval/* images: without them the test would train for nothing.
        if self.decoder_test_steps and not self.num_eval_images:
            raise ValueError(
                f"decoder_test_steps ({self.decoder_test_steps}) needs num_eval_images > 0: "
                "the decoder test is scored on those images; set both, or decoder_test_steps 0"
            )
        return self


class _TrialFields(_Strict):
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    split: str | dict[str, Any] = "iid"
    model: ModelConfig = Field(default_factory=ModelConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    seed: int = Field(0, ge=0, lt=SEED_LIMIT)

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
