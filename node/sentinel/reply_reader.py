"""Reading the replies of monitored nodes and other sentinels: RESP2 bytes in, the policy's
reply values out (`messages.Value`: `str` for a status, `RespError` for an error, `bytes` for
a bulk string, `int`, `list`, `None` for a null), with no I/O.

The status/bulk distinction matters (a PING answered `+PONG` is a valid reply, INFO's body is
a bulk string), which is why this is not hiredis's reader: it returns both as bytes. A
sentinel's replies are small (INFO is the largest), so a plain parser costs nothing that
matters. Sizes are capped: a peer sending a bulk string or an array beyond them is broken, and
the link is closed rather than buffering without bound.
"""

from __future__ import annotations

from typing import Final

from node.sentinel.messages import RespError, Value

# Far above anything a node or a sentinel answers (an INFO reply is a few KB).
MAX_BULK: Final = 64 * 1024 * 1024
MAX_ARRAY: Final = 1024 * 1024
# A header line (type byte, length, CRLF) longer than this is garbage.
_MAX_LINE: Final = 64 * 1024


class ProtocolError(Exception):
    """The peer sent bytes that are not a RESP2 reply (or one beyond the caps)."""


class _Incomplete(Exception):
    pass


class ReplyReader:
    """Feed bytes with `feed`; take complete replies with `gets` until it returns `NOTHING`."""

    NOTHING: Final = object()

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0

    def feed(self, data: bytes) -> None:
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    def gets(self) -> Value | object:
        """The next complete reply, or `NOTHING` if more bytes are needed. Raises
        ProtocolError on malformed input."""
        try:
            value, end = self._parse(self._pos)
        except _Incomplete:
            if len(self._buf) - self._pos > _MAX_LINE and self._buf.find(b"\r\n", self._pos) < 0:
                raise ProtocolError("header line too long") from None
            return self.NOTHING
        self._pos = end
        return value

    def _line(self, pos: int) -> tuple[bytes, int]:
        end = self._buf.find(b"\r\n", pos)
        if end < 0:
            raise _Incomplete
        return bytes(self._buf[pos:end]), end + 2

    def _length(self, text: bytes) -> int:
        try:
            return int(text)
        except ValueError:
            raise ProtocolError(f"bad length {text[:32]!r}") from None

    def _parse(self, pos: int) -> tuple[Value, int]:
        if pos >= len(self._buf):
            raise _Incomplete
        kind = self._buf[pos]
        line, pos = self._line(pos + 1)
        if kind == 0x2B:  # '+'
            return line.decode("latin-1"), pos
        if kind == 0x2D:  # '-'
            return RespError(line.decode("latin-1")), pos
        if kind == 0x3A:  # ':'
            return self._length(line), pos
        if kind == 0x24:  # '$'
            n = self._length(line)
            if n < 0:
                return None, pos
            if n > MAX_BULK:
                raise ProtocolError(f"bulk string of {n} bytes")
            if len(self._buf) < pos + n + 2:
                raise _Incomplete
            if self._buf[pos + n : pos + n + 2] != b"\r\n":
                raise ProtocolError("bulk string not terminated by CRLF")
            return bytes(self._buf[pos : pos + n]), pos + n + 2
        if kind == 0x2A:  # '*'
            n = self._length(line)
            if n < 0:
                return None, pos
            if n > MAX_ARRAY:
                raise ProtocolError(f"array of {n} elements")
            items: list[Value] = []
            for _ in range(n):
                item, pos = self._parse(pos)
                items.append(item)
            return items, pos
        raise ProtocolError(f"unexpected reply type byte {bytes([kind])!r}")
