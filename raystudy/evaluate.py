"""Scoring any encoder as a trial is scored: `evaluate_encoder` (and `raystudy evaluate`).

An encoder is a logged model (`runs:/<run id>/model`, `models:/...`), a `package.module:name`
that names a callable images -> codes or a factory (no required arguments) of an `nn.Module`,
or such a callable or module itself. It gets the dis/*, down/* and transfer/* keys a trial
logs, from `raystudy.scoring.score_representation` on the same ground-truth draws
(`evaluation.seed`), so its numbers sit beside the study's; eval/* needs a decoder and is not
reported.

Every batch an encoder returns is checked (a [B, D] array for B images, D the same on every
call, finite), and a first batch of three images is encoded before any metric runs, so an
encoder that cannot work says so at once, by name, with what was expected. No Ray; MLflow only
to load a logged model or log the scores (`raystudy.tracking`), imported when asked for. It
sits in the layer of `checks` and `trials`: it checks the names it is given as a spec's are.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from pydantic import ValidationError
from torch import nn

from raystudy.checks.names import known_names
from raystudy.data import GroundTruthDataset, Split, get_dataset
from raystudy.scoring import build_split, score_representation
from raystudy.spec import NAMES, EvaluationConfig, SpecError, TrialConfig
from raystudy.spec.problems import problems_of

#: Encoder URIs that MLflow resolves (a logged or registered model).
MLFLOW_SCHEMES = ("runs:/", "models:/")
#: Images of the first batch an encoder is tried on, before any metric.
TRIAL_BATCH = 3


class EncoderError(ValueError):
    """An encoder that cannot be scored; the message names it and what was expected."""


def _load_named(name: str) -> Any:
    """The object `package.module:attribute` names."""
    module_name, sep, attribute = name.partition(":")
    if not sep or not module_name or not attribute:
        raise EncoderError(
            f"encoder {name!r}: expected runs:/<run id>/model, models:/<id or name/version>, "
            "or package.module:function (a callable images -> codes, or a factory that "
            "returns an nn.Module)"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise EncoderError(
            f"encoder {name!r}: module {module_name!r} cannot be imported "
            f"({type(exc).__name__}: {exc}); is its package installed or on PYTHONPATH?"
        ) from exc
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            public = sorted(n for n in vars(module) if not n.startswith("_"))[:20]
            raise EncoderError(
                f"encoder {name!r}: module {module_name!r} has no {attribute!r} "
                f"(it has: {', '.join(public) or 'nothing public'})"
            )
        target = getattr(target, part)
    return target


def _is_factory(obj: Any) -> bool:
    """A class of module, or a function every parameter of which has a default."""
    if isinstance(obj, type):
        return issubclass(obj, nn.Module)
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: an images -> codes fn
        return False
    return not any(
        p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        for p in params
    )


def resolve_encoder(
    encoder: str | Callable[..., Any], tracking_uri: str | None = None
) -> tuple[Callable[[torch.Tensor], Any], str]:
    """The callable images -> codes that `encoder` names, and a name for messages and runs."""
    if not isinstance(encoder, str):
        if not callable(encoder):
            raise EncoderError(
                f"encoder {encoder!r}: expected a callable images -> codes, an nn.Module, or "
                "a string naming one"
            )
        name = getattr(encoder, "__qualname__", type(encoder).__name__)
        return encoder, f"{getattr(encoder, '__module__', '?')}:{name}"
    if encoder.startswith(MLFLOW_SCHEMES):
        from raystudy.tracking.models import load_encoder

        try:
            return load_encoder(encoder, tracking_uri), encoder
        except Exception as exc:
            where = f" in {tracking_uri}" if tracking_uri else ""
            raise EncoderError(
                f"encoder {encoder!r}: MLflow could not load it{where} "
                f"({type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''})"
            ) from exc
    target = _load_named(encoder)
    if _is_factory(target):
        try:
            target = target()
        except Exception as exc:
            raise EncoderError(
                f"encoder {encoder!r}: calling the factory failed ({type(exc).__name__}: {exc})"
            ) from exc
        if not isinstance(target, nn.Module):
            raise EncoderError(
                f"encoder {encoder!r}: a factory (no required arguments) must return an "
                f"nn.Module, got {type(target).__name__}"
            )
    if not callable(target):
        raise EncoderError(f"encoder {encoder!r}: {type(target).__name__} is not callable")
    return target, encoder


class CheckedEncoder:
    """An encoder whose every answer is checked: a [B, D] float array or tensor for a batch of
    B images, the same D on every call, finite. Returns CPU tensors."""

    def __init__(self, fn: Callable[[torch.Tensor], Any], name: str) -> None:
        self.fn, self.name = fn, name
        self.dim: int | None = None
        if isinstance(fn, nn.Module):
            # A dropout or batch-norm layer must not change the codes. A module torch.export
            # gave back (a logged model) refuses eval(): it was traced in evaluation mode.
            with contextlib.suppress(NotImplementedError):
                fn.eval()

    def _fail(self, what: str) -> EncoderError:
        return EncoderError(
            f"encoder {self.name!r}: {what}; expected codes [B, D] (one row of D numbers per "
            "image) for images [B, C, H, W] in [0, 1]"
        )

    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            try:
                out = self.fn(images)
            except Exception as exc:
                raise self._fail(
                    f"failed on images {tuple(images.shape)} ({type(exc).__name__}: {exc})"
                ) from exc
        if isinstance(out, tuple | list):
            raise self._fail(
                f"returned a {type(out).__name__} of {len(out)} (a VAE's (mu, logvar)? return "
                "the means alone)"
            )
        try:
            codes = torch.as_tensor(np.asarray(out.detach().cpu() if torch.is_tensor(out) else out))
        except Exception as exc:
            raise self._fail(f"returned {type(out).__name__}, not an array") from exc
        if not (codes.dtype.is_floating_point or codes.dtype in (torch.int32, torch.int64)):
            raise self._fail(f"returned {codes.dtype} values, not numbers")
        batch = images.shape[0]
        if codes.ndim != 2:
            raise self._fail(f"returned shape {tuple(codes.shape)} for {batch} images")
        if codes.shape[0] != batch:
            raise self._fail(
                f"returned {codes.shape[0]} rows for a batch of {batch} images (a model "
                "traced for one batch size?)"
            )
        if self.dim is not None and codes.shape[1] != self.dim:
            raise self._fail(f"returned {codes.shape[1]} columns, and {self.dim} before")
        self.dim = int(codes.shape[1])
        codes = codes.double()
        if not torch.isfinite(codes).all():
            bad = int((~torch.isfinite(codes)).any(dim=1).sum())
            raise self._fail(f"returned NaN or infinite codes for {bad} of {batch} images")
        return codes


def evaluation_setup(
    dataset: str | GroundTruthDataset,
    split: str | Mapping[str, Any],
    evaluation: EvaluationConfig | Mapping[str, Any] | None = None,
    *,
    metrics: Sequence[str] | None = None,
    probes: Sequence[str] | None = None,
    dataset_options: Mapping[str, Any] | None = None,
) -> tuple[GroundTruthDataset, Split, TrialConfig]:
    """The dataset, split and settings an encoder is scored with, as a trial config without a
    model (its `dataset`, `split` and `evaluation` are what a trial logs), checked as a
    spec's are: a bad name or value is a `SpecError` naming the field and what is allowed."""
    fields = dict(
        evaluation.model_dump() if isinstance(evaluation, EvaluationConfig) else evaluation or {}
    )
    if metrics is not None:
        fields["metrics"] = list(metrics)
    if probes is not None:
        fields["probes"] = list(probes)
    given = isinstance(dataset, GroundTruthDataset)
    raw = {
        "dataset": {
            "name": dataset.name if given else dataset,
            "options": dict(dataset_options or {}),
        },
        "split": split if isinstance(split, str) else dict(split),
        "evaluation": fields,
    }
    try:
        config = TrialConfig.model_validate(raw, context={NAMES: known_names()})
    except ValidationError as exc:
        raise SpecError("evaluate", problems_of(exc, root=TrialConfig)) from None
    try:
        data = dataset if given else get_dataset(config.dataset.name, **config.dataset.options)
        return data, build_split(config, data), config
    except SpecError:
        raise
    except (ValueError, TypeError, FileNotFoundError) as exc:
        raise SpecError("evaluate", [("", str(exc))]) from None


@dataclass(frozen=True)
class EncoderScores:
    """An encoder's scores and what they were computed with: `name`, as messages and its run
    name it, and the trial config (dataset, split, evaluation) its run logs."""

    name: str
    config: TrialConfig
    scores: dict[str, float]


def encoder_scores(
    encoder: str | Callable[..., Any],
    setup: tuple[GroundTruthDataset, Split, TrialConfig],
    *,
    tracking_uri: str | None = None,
    device: str | torch.device = "cpu",
    n_jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> EncoderScores:
    """`evaluate_encoder`'s scores on `setup` (`evaluation_setup`), logged nowhere, with the
    encoder's name and config (what `tracking.external.log_external_run` logs them with);
    `progress` is told each step."""
    data, split, config = setup
    fn, name = resolve_encoder(encoder, tracking_uri)
    scores = score_encoder(
        fn, name, data, split, config.evaluation, torch.device(device), n_jobs, progress
    )
    return EncoderScores(name, config, scores)


def evaluate_encoder(
    encoder: str | Callable[..., Any],
    dataset: str | GroundTruthDataset,
    split: str | Mapping[str, Any] = "iid",
    evaluation: EvaluationConfig | Mapping[str, Any] | None = None,
    *,
    metrics: Sequence[str] | None = None,
    probes: Sequence[str] | None = None,
    dataset_options: Mapping[str, Any] | None = None,
    tracking_uri: str | None = None,
    experiment: str | None = None,
    device: str | torch.device = "cpu",
    n_jobs: int = 1,
) -> dict[str, float]:
    """The dis/*, down/* and transfer/* scores of `encoder` on `dataset` and `split`, keyed
    as a trial logs them, on the draws `evaluation.seed` fixes (a trial's `evaluation`, a
    mapping of its fields, or the defaults; `metrics`/`probes` override its lists).

    `tracking_uri` is the store a `runs:/` or `models:/` encoder is loaded from (default:
    MLflow's), and where `experiment`, when given, gets a run of the scores tagged
    `raystudy.role = external`, which `raystudy analyze` of a study of that name reads as
    its own group. Raises `EncoderError` for an encoder that cannot be scored.
    """
    setup = evaluation_setup(
        dataset, split, evaluation, metrics=metrics, probes=probes, dataset_options=dataset_options
    )
    scored = encoder_scores(encoder, setup, tracking_uri=tracking_uri, device=device, n_jobs=n_jobs)
    if experiment is not None:
        from raystudy.tracking.external import log_external_run

        log_external_run(tracking_uri, experiment, scored.name, scored.config, scored.scores)
    return scored.scores


def score_encoder(
    fn: Callable[[torch.Tensor], Any],
    name: str,
    dataset: GroundTruthDataset,
    split: Split,
    evaluation: EvaluationConfig,
    device: torch.device,
    n_jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> dict[str, float]:
    """`score_representation` of a resolved encoder, tried on a first batch before any
    metric. The `own` probe (code column k predicts factor k) needs one column per factor;
    `progress` is told each step as it starts."""
    if isinstance(fn, nn.Module) and device.type != "cpu":
        fn.to(device)  # the images are rendered there
    checked = CheckedEncoder(fn, name)
    idx = split.sample("encoder", TRIAL_BATCH, np.random.default_rng([evaluation.seed, 7]))
    checked(dataset.render(torch.from_numpy(idx).to(device)))
    factors = dataset.factors.num_factors
    factor_sized = checked.dim == factors
    if "own" in evaluation.probes and not factor_sized:
        raise checked._fail(
            f"probe 'own' reads code column k as factor k, so it needs {factors} columns "
            f"(one per factor of {dataset.name}); this encoder gives {checked.dim}"
        )
    return score_representation(
        checked,
        dataset,
        split,
        evaluation,
        device,
        n_jobs=n_jobs,
        factor_sized=factor_sized,
        progress=progress,
    )
