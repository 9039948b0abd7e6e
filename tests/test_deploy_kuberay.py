"""deploy/kuberay/ against KubeRay's own CRD schemas (ray.io/v1 of KubeRay v1.7.0, kept in
deploy/kuberay/crd-schemas/ with their source): the RayJob and the RayCluster validate, a
broken copy does not, and the manifests agree with each other, with the image deploy/Dockerfile
builds and with raystudy (the entrypoint is a raystudy command whose spec loads). No
Kubernetes cluster is reachable here: nothing is applied."""

from __future__ import annotations

import copy
import gzip
import json
import re
import shlex
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import ray
import yaml

from raystudy.checks import load_spec

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
KUBERAY = DEPLOY / "kuberay"


def schema(kind: str) -> jsonschema.Draft7Validator:
    """The CRD's openAPIV3Schema; Kubernetes' own keywords (x-kubernetes-*) are ignored."""
    with gzip.open(KUBERAY / "crd-schemas" / f"{kind}-v1.schema.json.gz") as f:
        return jsonschema.Draft7Validator(json.load(f))


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((KUBERAY / name).read_text()) if d]


def problems(validator: jsonschema.Draft7Validator, doc: dict[str, Any]) -> list[str]:
    return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]


def test_the_ray_job_and_cluster_validate_against_kuberays_crds() -> None:
    (job,) = documents("rayjob.yaml")
    (cluster,) = documents("raycluster.yaml")
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    assert problems(schema("rayjob"), job) == []
    assert problems(schema("raycluster"), cluster) == []
    # The job starts the cluster of raycluster.yaml, not another.
    assert job["spec"]["rayClusterSpec"] == cluster["spec"]


@pytest.mark.parametrize(
    ("kind", "path", "value", "message"),
    [
        ("raycluster", ["spec", "workerGroupSpecs", 0, "groupName"], None, "'groupName' is a"),
        ("raycluster", ["spec", "headGroupSpec", "template"], None, "'template' is a"),
        ("rayjob", ["spec", "ttlSecondsAfterFinished"], "ten minutes", "is not of type"),
        ("rayjob", ["spec", "rayClusterSpec", "workerGroupSpecs", 0, "maxReplicas"], "4", "type"),
    ],
)
def test_a_broken_manifest_is_refused_by_the_same_schema(
    kind: str, path: list[Any], value: Any, message: str
) -> None:
    (doc,) = documents(f"{kind}.yaml")
    broken = copy.deepcopy(doc)
    parent = broken
    for key in path[:-1]:
        parent = parent[key]
    if value is None:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    found = problems(schema(kind), broken)
    assert any(message in p for p in found), found


def test_the_manifests_agree_with_the_image_the_store_and_raystudy() -> None:
    (job,) = documents("rayjob.yaml")
    store = {d["kind"] + "/" + d["metadata"]["name"]: d for d in documents("mlflow.yaml")}
    cluster = job["spec"]["rayClusterSpec"]
    # Ray's version and image are those raystudy runs with.
    assert cluster["rayVersion"] == ray.__version__
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    base = re.search(r"^FROM rayproject/ray:(\S+)-py(\d)(\d+)-cpu$", dockerfile, re.MULTILINE)
    assert base and base.group(1) == ray.__version__
    workdir = re.search(r"^WORKDIR (\S+)$", dockerfile, re.MULTILINE)
    assert workdir
    # Every Ray pod mounts the volume the study folder and MLflow's artifacts live on.
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    for group in groups:
        pod = group["template"]["spec"]
        claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
        mounts = {m["mountPath"]: claims[m["name"]] for m in pod["containers"][0]["volumeMounts"]}
        assert mounts == {"/mnt/shared": "raystudy-shared"}
    assert "PersistentVolumeClaim/raystudy-shared" in store
    assert store["PersistentVolumeClaim/raystudy-shared"]["spec"]["accessModes"] == [
        "ReadWriteMany"
    ]
    assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"  # trials on workers
    # The entrypoint: a raystudy command on a spec the image holds, logging to the server.
    argv = shlex.split(job["spec"]["entrypoint"])
    assert argv[:2] == ["raystudy", "run"]
    spec_path = Path(argv[2])
    assert spec_path.parent.parent == Path(workdir.group(1))
    spec = load_spec(ROOT / spec_path.relative_to(workdir.group(1)))
    assert spec.name == "laptop"
    uri = argv[argv.index("--tracking-uri") + 1]
    service = store["Service/raystudy-mlflow"]
    server = store["Deployment/raystudy-mlflow"]["spec"]["template"]["spec"]["containers"][0]
    port = service["spec"]["ports"][0]["port"]
    assert uri == f"http://raystudy-mlflow:{port}"
    assert f"--port={port}" in server["args"]
    assert argv[argv.index("--output") + 1].startswith("/mnt/shared/")
    # No password is written in any manifest: the server reads PGPASSWORD from a Secret.
    backend = next(a for a in server["args"] if a.startswith("--backend-store-uri="))
    assert ":" not in backend.split("//", 1)[1].split("@", 1)[0]
    assert {e["name"] for e in server["env"] if "valueFrom" in e} == {"PGPASSWORD"}
