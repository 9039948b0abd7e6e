"""Tune's saved state of a study whose folder moved, pointed at the new folder.

Tune pickles absolute paths into the state a resume reads: `tuner.pkl` (the run config, and the
trial namer's labels file) and the search's state (`basic-variant-state-*.json`, a pickle
despite its name, whose experiment spec carries the storage path that trials not yet created
at the interruption are given; `searcher-state-*.pkl`, where Optuna's searcher keeps its
storage URL). Tune updates the paths of the trials it had created when it restores a moved
experiment, not these: a trial created after the move would write its checkpoints under the
old folder (Ray 2.60 refuses with "Unable to set up cluster storage"), and a copied study's
Optuna searcher would write into the original's database.

The paths are rewritten inside the pickles' opcodes, without unpickling anything (no Ray
object is built, no code runs): each string that holds the old folder as a path prefix is
re-encoded with the new one, and FRAME opcodes (protocol 4's byte counts, optional to an
unpickler) are dropped since the lengths change. Pickles nested in bytes (cloudpickle's) are
rewritten the same way.
"""

from __future__ import annotations

import os
import pickletools
import re
import struct
from pathlib import Path

#: Opcodes whose argument is a str, and those whose argument is bytes.
_STRINGS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"}
_BYTES = {"SHORT_BINBYTES", "BINBYTES", "BINBYTES8"}
_PROTO = b"\x80"


def _encode_str(text: str) -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) < 256:
        return b"\x8c" + bytes([len(raw)]) + raw  # SHORT_BINUNICODE
    if len(raw) < 2**32:
        return b"X" + struct.pack("<I", len(raw)) + raw  # BINUNICODE
    return b"\x8d" + struct.pack("<Q", len(raw)) + raw  # BINUNICODE8


def _encode_bytes(data: bytes) -> bytes:
    if len(data) < 256:
        return b"C" + bytes([len(data)]) + data  # SHORT_BINBYTES
    if len(data) < 2**32:
        return b"B" + struct.pack("<I", len(data)) + data  # BINBYTES
    return b"\x8e" + struct.pack("<Q", len(data)) + data  # BINBYTES8


def rewrite_pickle_paths(data: bytes, old: str, new: str) -> tuple[bytes, int]:
    """`data` (a pickle) with the folder `old` replaced by `new` wherever a string holds it as
    a path prefix (`old` itself, or followed by `/`), and how many strings changed. A pickle
    with nothing to change is returned as it is."""
    pattern = re.compile(re.escape(old) + r"(?=/|$|[^\w.-])")
    ops = list(pickletools.genops(data))
    out: list[bytes] = []
    changed = 0
    for k, (opcode, arg, pos) in enumerate(ops):
        end = ops[k + 1][2] if k + 1 < len(ops) else len(data)
        raw = data[pos:end]
        if opcode.name == "FRAME":
            continue
        if opcode.name in _STRINGS and isinstance(arg, str) and pattern.search(arg):
            out.append(_encode_str(pattern.sub(new, arg)))
            changed += 1
            continue
        if opcode.name in _BYTES and isinstance(arg, bytes) and arg.startswith(_PROTO):
            try:
                inner, count = rewrite_pickle_paths(arg, old, new)
            except ValueError:  # bytes that only start like a pickle
                count = 0
            if count:
                out.append(_encode_bytes(inner))
                changed += count
                continue
        out.append(raw)
    return (b"".join(out), changed) if changed else (data, 0)


def is_pickle(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(1) == _PROTO


def point_tune_state_at(tune_dir: Path, old: Path, new: Path) -> dict[str, int]:
    """Rewrite `old` to `new` in the pickled files of a study's `tune/` and of its state
    backup beside it (`tune/.last-good/`), each replaced whole (written to a temporary name,
    then renamed); the strings changed, by file name. The trials' folders are left alone: they
    hold results and checkpoints, which record no folder."""
    counts: dict[str, int] = {}
    folders = [tune_dir, *(p for p in tune_dir.iterdir() if p.is_dir() and p.name.startswith("."))]
    for folder in folders:
        for path in sorted(folder.iterdir()):
            if not path.is_file() or not is_pickle(path):
                continue
            data = path.read_bytes()
            try:
                rewritten, count = rewrite_pickle_paths(data, str(old), str(new))
            except ValueError as exc:  # not a whole pickle: a resume would refuse it anyway
                raise ValueError(f"{path}: cannot be read as a pickle ({exc})") from None
            if count:
                temporary = path.with_name(f".{path.name}.relocating")
                temporary.write_bytes(rewritten)
                os.replace(temporary, path)
                counts[str(path.relative_to(tune_dir))] = count
    return counts
