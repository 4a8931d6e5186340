"""The C appender of logged XADDs (node/engine/_logged_xadd.c), when the native build made
it: `logged_xadd_block` finds a block of XADD effects in the log's bytes and groups it by
stream; `NATIVE_APPEND_RUN` appends a run of them to a stream's tail node (see
`Stream.append_logged_run`). Without it both do nothing and every XADD takes the ordinary way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final


def _native_block() -> Callable[[bytes, int], tuple[int, list[tuple[bytes, bytes]]]] | None:
    try:
        from node.engine._logged_xadd import xadd_block
    except ImportError:
        return None
    return xadd_block


def _native_append_run() -> Callable[..., tuple[int, int, bytes, bytes, bytes, int, int, int]] | None:
    try:
        from node.engine._logged_xadd import append_run
    except ImportError:
        return None
    return append_run


NATIVE_BLOCK: Final = _native_block()
NATIVE_APPEND_RUN: Final = _native_append_run()


def logged_xadd_block(data: bytes, pos: int) -> tuple[int, list[tuple[bytes, bytes]]]:
    """The XADD effects in the form the effect log gives every XADD (``XADD key ms-seq field
    value ...``) that follow each other from ``data[pos:]``: where they end, and their start
    positions grouped by stream (``(key, array('q') bytes)``, streams in the order they first
    appear, positions in log order). XADDs to different streams commute, so the block may be
    applied stream by stream. ``(pos, [])`` when the command there is anything else, and
    always without the native build."""
    if NATIVE_BLOCK is None:
        return pos, []
    return NATIVE_BLOCK(data, pos)
