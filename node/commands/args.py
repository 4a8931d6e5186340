"""Argument parsing shared by every command family: integers with Redis's rules and texts.

Stream-specific parsing (IDs, COUNT, BLOCK, MAXLEN/MINID) lives in `stream_args`.
"""

from __future__ import annotations

from typing import Final

from node.commands.reply import CommandError

NOT_AN_INTEGER: Final = "ERR value is not an integer or out of range"
SYNTAX_ERROR: Final = "ERR syntax error"

_I64_MIN: Final = -(1 << 63)
_I64_MAX: Final = (1 << 63) - 1


def to_int(raw: bytes) -> int | None:
    """Redis's string2ll: optional '-', digits, no leading zeros or spaces, fits in int64."""
    n = len(raw)
    if n == 0 or n > 20:
        return None
    if raw.isdigit():
        if n > 1 and raw[0] == 0x30:
            return None
        value = int(raw)
    elif raw[0] == 0x2D and n > 1 and raw[1:].isdigit() and raw[1] != 0x30:
        value = int(raw)
    else:
        return None
    if value < _I64_MIN or value > _I64_MAX:
        return None
    return value


def parse_int(raw: bytes, error: str = NOT_AN_INTEGER) -> int:
    value = to_int(raw)
    if value is None:
        raise CommandError(error)
    return value


def parse_non_negative(raw: bytes, error: str) -> int:
    value = to_int(raw)
    if value is None or value < 0:
        raise CommandError(error)
    return value
