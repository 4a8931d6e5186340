"""Every C entry point, and the stream's commit of a C run, with each allocation in turn
made to fail (CPython's _testcapi.set_nomemory): the call raises MemoryError or returns what
it returns without the failure, and a stream that got a MemoryError is exactly as before
(the C appender returns what to append and `Stream.append_logged_run` commits all of it or
nothing)."""

from __future__ import annotations

import _testcapi
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from node.engine import _logged_xadd
from node.engine.logged_run import logged_xadd_block
from node.log import _resp_encode, _resp_scan
from tests.unit.native.appender import state
from tests.unit.native.logs import encode
from tests.unit.native.out_of_memory_sweep import LOG as _LOG
from tests.unit.native.out_of_memory_sweep import RUN_LENGTH, stream

# Enough to pass every allocation of each call below (checked: the last attempts succeed).
_ATTEMPTS = 120


def _failing(k: int, call: Callable[[], Any]) -> Any:
    """call() with the k-th allocation from now failing."""
    _testcapi.set_nomemory(k, k + 1)
    try:
        return call()
    finally:
        _testcapi.remove_mem_hooks()


def _outcomes(call: Callable[[], Any]) -> list[str]:
    expected = call()
    outcomes = []
    for k in range(_ATTEMPTS):
        try:
            result = _failing(k, call)
        except MemoryError:
            outcomes.append("MemoryError")
            continue
        assert result == expected, k
        outcomes.append("ok")
    assert outcomes[-5:] == ["ok"] * 5  # every allocation was made to fail once
    return outcomes


@pytest.mark.parametrize("call", [
    lambda: _resp_encode.encode_command([b"XADD", b"s", b"1-1", b"f", b"v" * 2000, bytearray(b"w")]),
    lambda: _resp_scan.check_units(_LOG + encode([b"MULTI"])),
    lambda: _resp_scan.command_end(_LOG, 0),
    lambda: _logged_xadd.xadd_block(_LOG, 0),
], ids=["encode_command", "check_units", "command_end", "xadd_block"])
def test_a_c_call_raises_memory_error_or_returns_its_result(call: Callable[[], Any]) -> None:
    _outcomes(call)


def test_a_stream_that_runs_out_of_memory_during_a_run_is_as_before() -> None:
    """In a process of its own that runs the engine from its Python sources: mypyc's
    compiled code aborts on a failed allocation (CPyError_OutOfMemory when it boxes an int),
    as redis-server does, so only interpreted code can be swept."""
    script = os.path.join(os.path.dirname(__file__), "out_of_memory_sweep.py")
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MemoryError" in done.stdout and "engine from source" in done.stdout


def test_a_node_whose_data_cannot_grow_is_as_before() -> None:
    """The last of the three extends failing (the data is exported to a memoryview, so it
    cannot be resized): keys and offsets, already extended, are cut back."""
    value = stream()
    before = state(value)
    end, groups = logged_xadd_block(_LOG, 0)
    view = memoryview(value.nodes[-1].data)
    with pytest.raises(BufferError):
        value.append_logged_run(_LOG, groups[0][1], 0, b"s", 0, 0)
    view.release()
    assert state(value) == before
    assert value.append_logged_run(_LOG, groups[0][1], 0, b"s", 0, 0)[1] == RUN_LENGTH
