"""Fenced mode's promises on disk: a node's fence epoch, the epoch it leads and the epoch
histories of its recent logs, in one small JSON file in `dir` (`rill-fence.json`), replaced
atomically and fsynced (temporary file, fsync, rename, fsync of the directory) before the
change it records is relied upon: a FENCE reply, an acknowledgement to a new primary, a
promotion. docs/safety.md, *Fenced mode*.
"""

from __future__ import annotations

import json
import os
from typing import Any, Final

from node.persistence.files import atomic_write
from replication import EpochHistory, Fence

FILENAME: Final = "rill-fence.json"
_FORMAT: Final = 1


class FenceFileError(Exception):
    """The file exists but cannot be read: the node must not start with forgotten promises."""


def fence_path(directory: str) -> str:
    return os.path.join(directory, FILENAME)


def load_fence(path: str, replid: str, end: int) -> Fence:
    """The node's fence state, with the history of the log it loaded (`replid` up to `end`);
    a fresh state (epoch 0, leading epoch 0) when the file does not exist yet."""
    fence = Fence(replid, save=lambda f: save_fence(path, f))
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return fence
    except OSError as exc:
        raise FenceFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        state = json.loads(raw)
        if state.get("format") != _FORMAT:
            raise ValueError(f"unknown format {state.get('format')!r}")
        fence.fence_epoch = _int(state["fence_epoch"])
        fence.tenure = _int(state["tenure"])
        fence.histories = {
            str(entry["replid"]): EpochHistory.from_pairs((_int(e), _int(s)) for e, s in entry["epochs"])
            for entry in state["histories"]
        }
    except (ValueError, KeyError, TypeError) as exc:
        raise FenceFileError(f"{path} is not a valid fence file: {exc}") from None
    fence.restore(replid, end)
    return fence


def save_fence(path: str, fence: Fence) -> None:
    state: dict[str, Any] = {
        "format": _FORMAT,
        "fence_epoch": fence.fence_epoch,
        "tenure": fence.tenure,
        "histories": [{"replid": replid, "epochs": h.pairs()} for replid, h in fence.histories.items()],
    }
    atomic_write(path, json.dumps(state, separators=(",", ":")).encode() + b"\n")


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{value!r} is not an integer")
    return value
