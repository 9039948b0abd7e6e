"""Plain Ray tasks for work over a finished study's runs (`raystudy rescore`): each item a task
with the trials' resources (fractional CPUs and GPUs, as Tune gives trials), results handed
back as they finish, a failed item reported with its error and the rest carried on."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Done(Generic[T]):
    """One item's end: its result, or the error that ended it (one line)."""

    item: T
    result: Any = None
    error: str | None = None


def map_tasks(
    fn: Callable[..., Any], items: Sequence[T], cpu: float, gpu: float, *args: Any
) -> Iterator[Done[T]]:
    """`fn(item, *args)` for every item as a Ray task asking for `cpu` CPUs and `gpu` GPUs,
    yielded in the order they finish. `fn` is a module-level function (Ray ships it by
    reference). Ray must be initialised (`raystudy.tune.cluster.connect`)."""
    import ray

    remote = ray.remote(fn).options(num_cpus=cpu, num_gpus=gpu, max_retries=0)
    pending = {remote.remote(item, *args): item for item in items}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        ref = ready[0]
        item = pending.pop(ref)
        try:
            yield Done(item, result=ray.get(ref))
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            first = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
            yield Done(item, error=f"{type(cause).__name__}: {first[:300]}")
        except ray.exceptions.RayError as exc:  # a worker lost, a node gone
            yield Done(item, error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
