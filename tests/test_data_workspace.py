"""Scratch buffers: reused, grown, per thread, never shared with what render returns."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest
import torch

from raystudy.data import get_dataset
from raystudy.data.core.workspace import Workspace

CPU = torch.device("cpu")


def test_a_name_reuses_one_growing_buffer() -> None:
    ws = Workspace()
    a = ws.get("x", (2, 3), CPU)
    b = ws.get("x", (3, 2), CPU)
    assert a.data_ptr() == b.data_ptr() and b.shape == (3, 2)
    big = ws.get("x", (4, 5), CPU)
    assert big.shape == (4, 5)
    small = ws.get("x", (2, 2), CPU)
    assert small.data_ptr() == big.data_ptr()  # kept at the largest size
    assert ws.get("y", (2, 3), CPU).data_ptr() != ws.get("x", (2, 3), CPU).data_ptr()
    assert ws.get("x", (2,), CPU, torch.int64).dtype == torch.int64


def test_threads_get_their_own_buffers() -> None:
    ws = Workspace()
    mine = ws.get("x", (8,), CPU).data_ptr()
    theirs = []
    thread = threading.Thread(target=lambda: theirs.append(ws.get("x", (8,), CPU).data_ptr()))
    thread.start()
    thread.join()
    assert theirs and theirs[0] != mine


def test_a_pickled_workspace_starts_empty() -> None:
    ws = Workspace()
    ws.get("x", (1000,), CPU)
    copy = pickle.loads(pickle.dumps(ws))
    assert copy._buffers() == {}


@pytest.mark.parametrize("name", ["shapes3d", "finger", "color_dsprites", "mpi3d"])
def test_renders_do_not_leak_between_batch_sizes(name: str) -> None:
    ds = get_dataset(name)
    idx = ds.factors.sample(40, np.random.default_rng(0))
    fresh = {d: get_dataset(name).render(idx[:3], domain=d) for d in ds.domains}
    first = ds.render(idx[:3], domain="real")
    for domain in ds.domains:
        ds.render(idx, domain=domain)  # a larger batch in between
        again = ds.render(idx[:3], domain=domain)
        assert torch.equal(again, fresh[domain])
    # What render returned earlier is not scratch: later calls left it alone.
    assert torch.equal(first, fresh["real"])
