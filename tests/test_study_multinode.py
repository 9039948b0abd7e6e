"""A real multi-node Ray cluster on this machine: a head and two workers, one with a logical GPU."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest
from conftest import fresh_ray, ray_cluster
from tiny import LIGHT, SMOKE, tiny

from raystudy.checks import load_spec
from raystudy.study.driver import run_study
from raystudy.tags import TRIAL_RUNS


@pytest.fixture(scope="module")
def cluster():
    import ray

    # Logical resources: the 2 real cores are shared, the counts are what Ray schedules by.
    fresh_ray()
    nodes = ray_cluster(num_cpus=1)
    cpu_node = nodes.add_node(num_cpus=2)
    gpu_node = nodes.add_node(num_cpus=2, num_gpus=1)
    nodes.wait_for_nodes()
    ray.init(address=nodes.address)
    yield nodes, cpu_node, gpu_node
    ray.shutdown()
    nodes.shutdown()


def runs_of(info) -> list:
    client = mlflow.MlflowClient(info.tracking_uri)
    return client.search_runs([info.experiment_id], TRIAL_RUNS)


# heavy (the fault tier, run by `.ci/run` after the quick suite): ~60 s of 2 cores.
@pytest.mark.heavy
def test_cpu_trials_spread_over_nodes_into_one_store(cluster, tmp_path: Path) -> None:
    spec = load_spec(
        SMOKE, tiny("spread", LIGHT, "resources={cpu: 1, gpu: 0}", "grid={seed: [0, 1, 2, 3]}")
    )
    outcome = run_study(spec, output=tmp_path, address="auto", verbose=0)
    assert outcome.ok, outcome.states
    runs = runs_of(outcome.info)
    assert len(runs) == 4 and {r.info.status for r in runs} == {"FINISHED"}
    nodes = {r.data.tags["ray.node_id"] for r in runs}
    assert len(nodes) >= 2, "four 1-CPU trials on nodes of 1, 2 and 2 CPUs use several nodes"


# heavy (the fault tier, as above).
@pytest.mark.heavy
def test_four_quarter_gpu_trials_share_the_logical_gpu(cluster, tmp_path: Path) -> None:
    _, _, gpu_node = cluster
    spec = load_spec(
        SMOKE,
        tiny("packed", LIGHT, "resources={cpu: 0.5, gpu: 0.25}", "grid={seed: [0, 1, 2, 3]}"),
    )
    outcome = run_study(spec, output=tmp_path, address="auto", verbose=0)
    assert outcome.ok, outcome.states
    runs = runs_of(outcome.info)
    assert len(runs) == 4
    assert {r.data.tags["ray.node_id"] for r in runs} == {gpu_node.node_id}
    assert {r.data.tags["ray.gpu_ids"] for r in runs} == {"0"}
    # all four held a quarter of the GPU at once: their run intervals share a common instant
    latest_start = max(r.info.start_time for r in runs)
    earliest_end = min(r.info.end_time for r in runs)
    assert latest_start < earliest_end


def test_a_request_no_node_can_satisfy_fails_at_once(cluster, tmp_path: Path) -> None:
    from raystudy.study.folder import StudyError

    spec = load_spec(SMOKE, tiny("toobig", "resources={cpu: 3, gpu: 1}"))
    with pytest.raises(StudyError, match=r"no node .* has that \(nodes: .*2 CPU/1 GPU"):
        run_study(spec, output=tmp_path, address="auto", verbose=0)
