"""Scratch tensors that persist across render calls.

Rendering a batch makes many image-sized temporaries. On a CPU a fresh multi-megabyte block
comes from the operating system as untouched pages, and the first write to each page is a
page fault: for the finger scene that cost as much as the arithmetic. A renderer therefore
keeps its intermediate buffers here, one set per thread (so two threads rendering at once
never share one), and only the images it returns are new memory. The contents of a scratch
tensor are undefined when handed out: write it whole before reading it.
"""

from __future__ import annotations

import math
import threading

import torch


class Workspace:
    """Named scratch tensors, per thread and device. Each name keeps one flat buffer that
    only grows (to the largest size asked for, which it keeps), and hands out a view of its
    first elements, so alternating batch sizes (a training batch, then a batch of pairs
    twice its size) reuse the same memory."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(
        self,
        name: str,
        shape: tuple[int, ...],
        device: torch.device,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        buffers = self._buffers()
        key = (name, device, dtype)
        numel = math.prod(shape)
        flat = buffers.get(key)
        if flat is None or flat.numel() < numel:
            flat = torch.empty(numel, dtype=dtype, device=device)
            buffers[key] = flat
        return flat[:numel].view(shape)

    def _buffers(self) -> dict[tuple[str, torch.device, torch.dtype], torch.Tensor]:
        buffers = getattr(self._local, "buffers", None)
        if buffers is None:
            buffers = {}
            self._local.buffers = buffers
        return buffers

    def __getstate__(self) -> dict[str, object]:
        return {}  # scratch does not travel; a copy starts empty

    def __setstate__(self, state: dict[str, object]) -> None:
        self._local = threading.local()
