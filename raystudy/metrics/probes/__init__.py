"""Downstream probes for the transfer metric; importing this registers the built-in ones."""

from raystudy.metrics.probes import gbt, linear, mlp, mlp_torch, own
from raystudy.metrics.probes._registry import (
    PROBES,
    Probe,
    get_probe,
    probe_applies,
    probe_implementation,
    register_probe,
)

__all__ = [
    "PROBES",
    "Probe",
    "gbt",
    "get_probe",
    "linear",
    "mlp",
    "mlp_torch",
    "own",
    "probe_applies",
    "probe_implementation",
    "register_probe",
]
