"""Reply values that command handlers return, independent of the wire protocol.

A handler builds its reply out of plain Python values; the RESP encoder
(`node.server.resp`) turns them into RESP2 or RESP3 bytes for the client's protocol:

    bytes          bulk string
    str            simple string (+OK)
    bool           RESP3 boolean, RESP2 integer 1/0
    int            integer
    float          RESP3 double, RESP2 bulk string
    None           null: RESP2 `$-1`, RESP3 `_`
    NULL_ARRAY     null array: RESP2 `*-1`, RESP3 `_`
    list / tuple   array
    dict           RESP3 map, RESP2 flat array of key, value, ...
    RSet           RESP3 set, RESP2 array
    Verbatim       RESP3 verbatim string, RESP2 bulk string
    ReplyError     error (also inside arrays, e.g. EXEC results)
    Raw            bytes already encoded the same way in both protocols
    Pushed         pushes a command produced inside EXEC, then its reply
    Truncated      an array header followed by fewer items than it counts
"""

from __future__ import annotations

from typing import Final, Union


class CommandError(Exception):
    """Raised by a handler to reply with an error; `message` is the full text after '-'.

    Redis error texts start with a code (ERR, WRONGTYPE, NOGROUP, …) that INFO
    errorstats counts, so the message always carries it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ReplyError:
    """An error as a value, for errors nested in arrays (EXEC) or returned directly."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReplyError) and other.message == self.message

    def __hash__(self) -> int:
        return hash(self.message)

    def __repr__(self) -> str:
        return f"ReplyError({self.message!r})"


class _NullArray:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL_ARRAY"


NULL_ARRAY: Final = _NullArray()


class RSet(list):  # type: ignore[type-arg]
    """An array that RESP3 sends as a set (`~`)."""


class Verbatim:
    """A verbatim string (RESP3 `=`) with its three-letter format, e.g. "txt"."""

    __slots__ = ("fmt", "data")

    def __init__(self, fmt: str, data: bytes) -> None:
        self.fmt = fmt
        self.data = data


class Raw:
    """Bytes that are already valid RESP in both protocols (hot-path replies like +OK)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class Pushed:
    """An element of EXEC's reply: the pushes (Pub/Sub confirmations and messages, already
    encoded for the client) one queued command produced, then its reply. Redis appends both
    to the client's buffer as the command runs, so they sit inside EXEC's array."""

    __slots__ = ("pushes", "reply")

    def __init__(self, pushes: bytes, reply: object) -> None:
        self.pushes = pushes
        self.reply = reply


class Truncated:
    """An array Redis started and stopped writing: the header counts `length` items, only
    `items` follow. EXEC's reply once a queued CLIENT KILL closed the caller: Redis adds
    nothing more to a client flagged CLIENT_CLOSE_AFTER_REPLY (prepareClientToWrite)."""

    __slots__ = ("length", "items")

    def __init__(self, length: int, items: list[object]) -> None:
        self.length = length
        self.items = items


Reply = Union[
    bytes, str, int, float, None, list, tuple, dict, RSet, Verbatim, ReplyError, Raw, Pushed, _NullArray,  # type: ignore[type-arg]
    Truncated,
]

OK: Final = Raw(b"+OK\r\n")
QUEUED: Final = Raw(b"+QUEUED\r\n")
