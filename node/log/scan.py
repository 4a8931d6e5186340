"""Finding the commands in the effect log's bytes: a batch of the primary's log, which a
replica applies, or a chunk of an AOF file being loaded.

A batch must be whole commands, each a non-empty RESP array of bulk strings in canonical
form (the effect log's encoder writes nothing else: lengths in plain digits, no leading
zero), and whole units: every MULTI closed by its EXEC, none nested. `check_units` says why
a batch is not, before anything of it is applied; `command_end` finds where one command
ends, so the replica (and the AOF load) parses only the commands its C XADD path does not
take (`command_at`). With the native build both are C (node/log/_resp_scan.c, same rules);
the Python below is the fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import hiredis

_ARRAY: Final = 0x2A  # '*'
_BULK: Final = 0x24  # '$'
_MAX_DIGITS: Final = 18


def _header(data: bytes, pos: int, kind: int) -> tuple[int, int]:
    """The canonical decimal of the header of type `kind` at data[pos:] and the position
    after its CRLF; (-1, pos) if there is none."""
    if pos >= len(data) or data[pos] != kind:
        return -1, pos
    crlf = data.find(b"\r\n", pos + 1)
    if crlf < 0:
        return -1, pos
    digits = data[pos + 1 : crlf]
    if not digits.isdigit() or len(digits) > _MAX_DIGITS or (digits[0] == 0x30 and len(digits) > 1):
        return -1, pos
    return int(digits), crlf + 2


def _command_end(data: bytes, pos: int) -> int:
    if not 0 <= pos <= len(data):
        raise IndexError("pos out of range")
    n, p = _header(data, pos, _ARRAY)
    if n < 1:
        return -1
    for _ in range(n):
        size, p = _header(data, p, _BULK)
        if size < 0 or p + size + 2 > len(data) or data[p + size : p + size + 2] != b"\r\n":
            return -1
        p += size + 2
    return p


def _check_units(data: bytes) -> str | None:
    pos = 0
    in_multi = False
    while pos < len(data):
        end = _command_end(data, pos)
        if end < 0:
            return f"not a command in the log at byte {pos} (or the batch ends inside it)"
        size, name_at = _header(data, _header(data, pos, _ARRAY)[1], _BULK)
        name = data[name_at : name_at + size].lower()
        if name == b"multi":
            if in_multi:
                return "nested MULTI in the log"
            in_multi = True
        elif name == b"exec":
            if not in_multi:
                return "EXEC without MULTI in the log"
            in_multi = False
        pos = end
    return "the batch ends inside a unit" if in_multi else None


def _native_check() -> Callable[[bytes], str | None] | None:
    try:
        from node.log._resp_scan import check_units
    except ImportError:
        return None
    return check_units


def _native_end() -> Callable[[bytes, int], int] | None:
    try:
        from node.log._resp_scan import command_end
    except ImportError:
        return None
    return command_end


_NATIVE_CHECK: Final = _native_check()
_NATIVE_END: Final = _native_end()


def check_units(data: bytes) -> str | None:
    """None when `data` is whole commands and whole MULTI/EXEC units, else why not."""
    if _NATIVE_CHECK is not None:
        return _NATIVE_CHECK(data)
    return _check_units(data)


def command_end(data: bytes, pos: int) -> int:
    """Where the command at data[pos:] ends; -1 if there is no whole command there."""
    if _NATIVE_END is not None:
        return _NATIVE_END(data, pos)
    return _command_end(data, pos)


def command_at(data: bytes, pos: int) -> list[bytes]:
    """The command at data[pos:], which `command_end` delimits, parsed."""
    reader = hiredis.Reader()
    reader.feed(data, pos, command_end(data, pos) - pos)
    argv: list[bytes] = reader.gets()
    return argv
