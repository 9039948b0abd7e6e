"""A trial's trained encoder as an MLflow model: logged, registered, loaded again.

The model is MLflow's `pytorch` flavour in the `pt2` format (`torch.export`): a traced graph
that `mlflow.pytorch.load_model("runs:/<run id>/model")` turns back into a module in any
Python with torch, raystudy or not. The batch dimension is dynamic, so the module takes any
batch size.

Loading runs no code from the file (`load_encoder`): MLflow's `MLFLOW_ALLOW_PICKLE_DESERIALIZATION`
defaults to true (mlflow 3.17.2, `mlflow/environment_variables.py`), and then a `model.pth`
is `torch.load`ed with pickle and a `.pt2` archive is `torch.export.load`ed, which unpickles
its records with `weights_only=False`. With it false, `mlflow.pytorch._load_model` refuses a
pickled `model.pth` (`_load_by_pickle_check`) and first checks that every record of a `.pt2`
archive is JSON/text or passes torch's `weights_only` unpickler
(`_validate_pt2_archive_is_pickle_free`, which needs torch >= 2.10); `load_encoder` sets it
false for its load, whatever the environment says. pyproject.toml requires the mlflow and
torch versions whose source this was read from.

It is logged through the client of the trial's run, not MLflow's fluent `log_model`, which
reads the process-wide tracking URI and experiment (a trial worker sets neither, and a store
given to a client must not move elsewhere) and copies every metric of the run onto the model
(a request per metric key). What `Model.log` does otherwise is done here in the same order:
a LoggedModel named `model` whose source is the run, its artifacts, the run's output, READY.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import mlflow
import mlflow.pytorch
import numpy as np
import torch
from mlflow.entities import LoggedModelOutput, LoggedModelStatus
from mlflow.exceptions import MlflowException
from mlflow.models import Model, ModelSignature
from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS, ErrorCode
from mlflow.tracking import MlflowClient
from mlflow.types import Schema, TensorSpec

from raystudy.spec.url_secrets import expand
from raystudy.tracking.environ import env_restored
from raystudy.tracking.retry import retry_busy

#: The logged model's name in its run: `runs:/<run id>/model` loads it.
MODEL_NAME = "model"
#: `LoggedModel.model_type` of a raystudy encoder (a filter in MLflow's model search).
MODEL_TYPE = "raystudy-encoder"


def registered_model_name(study: str) -> str:
    """The model-registry name of a study's models (`execution.register_models`)."""
    return f"raystudy-{study}"


def _signature(example: np.ndarray, code_dim: int) -> ModelSignature:
    _, channels, height, width = example.shape
    images = TensorSpec(np.dtype(np.float32), (-1, channels, height, width), "images")
    codes = TensorSpec(np.dtype(np.float32), (-1, code_dim), "means")
    return ModelSignature(inputs=Schema([images]), outputs=Schema([codes]))


def _requirements() -> list[str]:
    # Written out: MLflow's inference of them loads the model in a subprocess (about 10 s a
    # trial), and a pt2 model needs torch alone (MLflow to load it through the flavour).
    return [f"torch=={torch.__version__.split('+')[0]}", f"mlflow=={mlflow.__version__}"]


def log_encoder(
    client: MlflowClient,
    run_id: str,
    encoder: torch.nn.Module,
    example: torch.Tensor,
    *,
    params: Mapping[str, Any],
    tags: Mapping[str, str],
    step: int,
) -> str:
    """Log `encoder` (images -> codes) as the model of run `run_id`; returns its model id.

    `example` is a batch of at least two real images (the input example, and what
    torch.export traces; a batch of one would fix the batch size at one). Every request is
    retried while the store is busy; an error after the LoggedModel exists marks it FAILED.
    """
    experiment_id = retry_busy(lambda: client.get_run(run_id)).info.experiment_id
    logged = retry_busy(
        lambda: client.create_logged_model(
            experiment_id,
            name=MODEL_NAME,
            source_run_id=run_id,
            params={k: str(v) for k, v in params.items()},
            tags=dict(tags),
            model_type=MODEL_TYPE,
        )
    )
    model_id = logged.model_id
    try:
        with torch.no_grad():
            codes = encoder(example)
        images = example.cpu().numpy().astype(np.float32)
        mlflow_model = Model(
            artifact_path=logged.artifact_location,
            model_uuid=model_id,
            run_id=run_id,
            model_id=model_id,
        )
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / MODEL_NAME
            mlflow.pytorch.save_model(
                encoder,
                str(local),
                mlflow_model=mlflow_model,
                signature=_signature(images, int(codes.shape[1])),
                input_example=images,
                pip_requirements=_requirements(),
                serialization_format="pt2",
            )
            retry_busy(lambda: client.log_model_artifacts(model_id, str(local)))
        retry_busy(lambda: client.log_outputs(run_id, [LoggedModelOutput(model_id, step)]))
        retry_busy(lambda: client.finalize_logged_model(model_id, LoggedModelStatus.READY))
    except BaseException:
        # The error that stopped the logging is the one to report.
        with contextlib.suppress(Exception):
            client.finalize_logged_model(model_id, LoggedModelStatus.FAILED)
        raise
    return model_id


def register_model(
    client: MlflowClient, name: str, run_id: str, model_id: str, tags: Mapping[str, str]
) -> str:
    """A new version of the registered model `name` (created if missing) from the logged
    model `model_id`, as `mlflow.register_model` makes one; returns the version number."""
    try:
        retry_busy(lambda: client.create_registered_model(name))
    except MlflowException as exc:
        # Trials of one study register at once: all but one find the name taken.
        if exc.error_code != ErrorCode.Name(RESOURCE_ALREADY_EXISTS):
            raise
    # The source is where the artifacts are, not `models:/<id>`: the registry would resolve
    # that URI against the process's tracking URI, which a trial does not set.
    source = retry_busy(lambda: client.get_logged_model(model_id)).artifact_location
    version = retry_busy(
        lambda: client.create_model_version(
            name,
            source=source,
            run_id=run_id,
            tags=dict(tags),
            model_id=model_id,
            await_creation_for=0,
        )
    )
    return str(version.version)


def load_encoder(uri: str, tracking_uri: str | None = None) -> torch.nn.Module:
    """The module a logged encoder's URI (`runs:/<id>/model`, `models:/<id>`,
    `models:/<name>/<version>`) loads.

    `mlflow.pytorch.load_model` resolves such URIs against the process's tracking URI, so
    `tracking_uri`, when given, becomes it.
    """
    if tracking_uri is not None:
        mlflow.set_tracking_uri(expand(tracking_uri))
    with _no_pickle():
        return mlflow.pytorch.load_model(uri)


#: MLflow's switch for unpickling model files (read on every load).
ALLOW_PICKLE = "MLFLOW_ALLOW_PICKLE_DESERIALIZATION"


@contextlib.contextmanager
def _no_pickle() -> Iterator[None]:
    """MLflow refuses to unpickle anything while the block runs (module doc)."""
    with env_restored(ALLOW_PICKLE):
        os.environ[ALLOW_PICKLE] = "false"
        yield
