"""Run as a script (by test_out_of_memory.py): `Stream.append_logged_run` with each
allocation in turn made to fail, the engine imported from its Python sources and the C
appender from its extension. A run that raised MemoryError must leave the stream exactly as
before, one that did not exactly as a run without failures. Prints what happened; exits 1
with the first difference."""

from __future__ import annotations

import os
import sys
from importlib.machinery import SOURCE_SUFFIXES, FileFinder, ModuleSpec, SourceFileLoader
from typing import Any

LOG = b"".join(
    b"*7\r\n$4\r\nXADD\r\n$1\r\n%s\r\n$%d\r\n5-%d\r\n$1\r\nf\r\n$%d\r\nv%d\r\n$1\r\ng\r\n$%d\r\n%d\r\n"
    % (b"s" if i % 3 else b"t", len(b"5-%d" % i), i, len(b"v%d" % i), i, len(b"%d" % i), i)
    for i in range(2, 300)
)
RUN_LENGTH = 199  # the XADDs to s
_ATTEMPTS = 150


class _EngineSources:
    """Finds node.engine's modules as .py sources where there is one (the C appender has
    none, so the ordinary finder loads its extension)."""

    def find_spec(self, fullname: str, path: Any, target: object = None) -> ModuleSpec | None:
        if not fullname.startswith("node.") or path is None:
            return None
        for entry in path:
            spec = FileFinder(entry, (SourceFileLoader, SOURCE_SUFFIXES)).find_spec(fullname)
            if spec is not None:
                return spec
        return None


def stream() -> Any:
    from node.engine.stream_value import StreamValue

    value = StreamValue()
    value.add((5 << 64) | 1, [b"f", b"v", b"g", b"0"], 0, 0)
    return value


def main() -> int:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    sys.meta_path.insert(0, _EngineSources())
    import _testcapi

    from node.engine import stream as stream_module
    from node.engine.logged_run import NATIVE_APPEND_RUN, logged_xadd_block
    from tests.unit.native.appender import state

    assert stream_module.__file__.endswith(".py") and NATIVE_APPEND_RUN is not None
    print("engine from source:", stream_module.__file__)
    positions = logged_xadd_block(LOG, 0)[1][0][1]
    complete = stream()
    assert complete.append_logged_run(LOG, positions, 0, b"s", 0, 0) == (RUN_LENGTH, RUN_LENGTH)
    before, after = state(stream()), state(complete)
    outcomes = []
    for k in range(_ATTEMPTS):
        value = stream()
        try:
            _testcapi.set_nomemory(k, k + 1)
            try:
                value.append_logged_run(LOG, positions, 0, b"s", 0, 0)
            finally:
                _testcapi.remove_mem_hooks()
        except MemoryError:
            outcomes.append("MemoryError")
            if state(value) != before:
                print(f"allocation {k} failed: the stream changed")
                return 1
            continue
        outcomes.append("ok")
        if state(value) != after:
            print(f"allocation {k} failed unnoticed: the stream differs from a complete run")
            return 1
    if outcomes[-5:] != ["ok"] * 5:
        print(f"{_ATTEMPTS} attempts do not pass every allocation")
        return 1
    print(" ".join(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
