"""RESP2/RESP3 encoding of reply values (see `node.commands.reply` for the value model;
commands, as the log carries them, are encoded by `node.log.encode`).

Encoding appends byte strings to a list that the connection joins once per batch, so a
pipelined batch of replies costs one `transport.write`.
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.reply import NULL_ARRAY, Pushed, Raw, ReplyError, RSet, Truncated, Verbatim
from node.log.encode import array_header, bulk_header

_CRLF: Final = b"\r\n"
_NULL2: Final = b"$-1\r\n"
_NULL_ARRAY2: Final = b"*-1\r\n"
_NULL3: Final = b"_\r\n"
# Small integers are encoded very often (XLEN, XACK, DEL counts, array headers).
_INT_CACHE: Final = [b":%d\r\n" % i for i in range(1024)]


def _error_line(message: str) -> bytes:
    # An error must stay on one line: Redis replaces CR/LF with spaces in error texts.
    text = message.replace("\r", " ").replace("\n", " ")
    return b"-" + text.encode("utf-8", "replace") + _CRLF


def encode_error(message: str) -> bytes:
    return _error_line(message)


def format_double(value: float) -> bytes:
    """Doubles as Redis prints them (%.17g, with inf/-inf/nan spelled its way)."""
    if value != value:
        return b"nan"
    if value == float("inf"):
        return b"inf"
    if value == float("-inf"):
        return b"-inf"
    # Redis 7.2 prints the shortest representation that round-trips (fpconv_dtoa).
    text = repr(value)
    if text.endswith(".0"):
        text = text[:-2]
    return text.encode()


def encode(reply: Any, proto: int, out: list[bytes]) -> None:
    """Append the encoding of `reply` for protocol 2 or 3 to `out`."""
    t = type(reply)
    if t is bytes:
        # Three parts joined once per batch: cheaper than formatting each bulk string.
        out.append(bulk_header(len(reply)))
        out.append(reply)
        out.append(_CRLF)
    elif t is Raw:
        out.append(reply.data)
    elif t is int:
        if 0 <= reply < 1024:
            out.append(_INT_CACHE[reply])
        else:
            out.append(b":%d\r\n" % reply)
    elif t is list or t is tuple:
        out.append(array_header(len(reply)))
        for item in reply:
            encode(item, proto, out)
    elif reply is None:
        out.append(_NULL3 if proto == 3 else _NULL2)
    elif t is str:
        out.append(b"+" + reply.encode() + _CRLF)
    elif t is dict:
        n = len(reply)
        out.append((b"%%%d\r\n" if proto == 3 else b"*%d\r\n") % (n if proto == 3 else 2 * n))
        for key, value in reply.items():
            encode(key, proto, out)
            encode(value, proto, out)
    elif t is ReplyError:
        out.append(_error_line(reply.message))
    elif t is bool:
        if proto == 3:
            out.append(b"#t\r\n" if reply else b"#f\r\n")
        else:
            out.append(_INT_CACHE[1] if reply else _INT_CACHE[0])
    elif t is float:
        text = format_double(reply)
        if proto == 3:
            out.append(b"," + text + _CRLF)
        else:
            out.append(b"$%d\r\n%s\r\n" % (len(text), text))
    elif reply is NULL_ARRAY:
        out.append(_NULL3 if proto == 3 else _NULL_ARRAY2)
    elif t is RSet:
        out.append((b"~%d\r\n" if proto == 3 else b"*%d\r\n") % len(reply))
        for item in reply:
            encode(item, proto, out)
    elif t is Verbatim:
        if proto == 3:
            body = reply.fmt.encode() + b":" + reply.data
            out.append(b"=%d\r\n%s\r\n" % (len(body), body))
        else:
            out.append(b"$%d\r\n%s\r\n" % (len(reply.data), reply.data))
    elif t is Pushed:
        out.append(reply.pushes)
        encode(reply.reply, proto, out)
    elif t is Truncated:
        out.append(array_header(reply.length))
        for item in reply.items:
            encode(item, proto, out)
    else:
        raise TypeError(f"cannot encode reply of type {t.__name__}")


def encode_one(reply: Any, proto: int) -> bytes:
    out: list[bytes] = []
    encode(reply, proto, out)
    return b"".join(out)
