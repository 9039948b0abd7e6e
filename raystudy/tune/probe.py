"""What the connected Ray cluster holds and may add: its alive nodes and the node types its
autoscaler may launch, asked of Ray, and the request each trial makes of it.

The decision on those tables and the readers of the autoscaler's files and monitor process are
`raystudy.resources`, which imports no Ray; asking the cluster is here, since Ray stays inside
`raystudy.tune`. The study driver calls `cluster_request` once Ray is connected
(`raystudy.tune.cluster.connect`).
"""

from __future__ import annotations

from pathlib import Path

from raystudy.resources import (
    BOOTSTRAP_CONFIG,
    Autoscale,
    Autoscaler,
    Node,
    find_monitor,
    fit_request,
    from_gcs_cluster_config,
    read_cluster_config,
)


def find_autoscaler(proc: Path = Path("/proc")) -> Autoscaler:
    """The node types the connected cluster's autoscaler may launch, looked for in order:

    1. a `ClusterConfig` in the GCS (autoscalers that report one; Ray Data reads the same);
    2. this machine's monitor process for the cluster (`proc`: the process table): with
       `--autoscaling-config=FILE`, FILE's node types; without, none (read-only provider: a
       local `ray start --head`, `ray.init()`), whatever files lie around;
    3. no monitor visible here: `~/ray_bootstrap_config.yaml`, which `ray up` writes on the head
       (Ray Tune's own test for "a cluster-launcher cluster", `tune.execution.cluster_info`).

    Nothing found: an empty `Autoscaler` whose `source` says where raystudy looked.
    """
    import ray

    try:
        from ray._private.state import state

        reported = from_gcs_cluster_config(state.get_cluster_config())
    except Exception:  # a private call: a Ray without it, or a client connection, has none
        reported = None
    if reported is not None:
        return reported
    gcs = ray.get_runtime_context().gcs_address
    monitor = find_monitor(gcs, proc)
    if monitor is not None and monitor.autoscaling_config is None:
        return Autoscaler(
            (),
            f"Ray's monitor (pid {monitor.pid}) runs without --autoscaling-config, so it "
            "never adds a node",
        )
    if monitor is not None:
        return read_cluster_config(monitor.autoscaling_config)
    bootstrap = Path(BOOTSTRAP_CONFIG).expanduser()
    if bootstrap.is_file():
        return read_cluster_config(bootstrap)
    return Autoscaler(
        (),
        f"none found: no autoscaler config in the GCS, no Ray monitor of {gcs} on this "
        f"machine, no {BOOTSTRAP_CONFIG}",
    )


def alive_nodes() -> list[Node]:
    """The CPUs and GPUs of each node of the connected cluster that is alive now."""
    import ray

    return [
        Node(n["Resources"].get("CPU", 0.0), n["Resources"].get("GPU", 0.0))
        for n in ray.nodes()
        if n.get("Alive")
    ]


def cluster_request(cpu: float, gpu: float, autoscale: Autoscale, study: str) -> dict[str, float]:
    """What each trial asks Tune for on the connected cluster; prints the decision once.

    Raises ResourceError when no node, existing or launchable, can hold the request.
    """
    if autoscale is True:
        autoscaler = Autoscaler((), "resources.autoscale: true")
    elif autoscale is False:
        autoscaler = Autoscaler((), "resources.autoscale is false: only existing nodes count")
    else:
        autoscaler = find_autoscaler()
    fitted = fit_request(cpu, gpu, alive_nodes(), autoscaler, trust=autoscale is True, study=study)
    if fitted.message:
        print(fitted.message, flush=True)
    return fitted.resources
