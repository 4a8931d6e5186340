"""Differential harness: the same commands to a real redis-server and to a Rill node, replies
compared byte for byte (RESP2 or RESP3).

`RawConnection` speaks RESP over a plain socket and returns each reply's exact bytes, so a
difference in type (status vs bulk, null vs empty array, map vs array) is caught, not
hidden by a client library's decoding. Intentional differences are normalised by the
reviewed rules in `allowlist.py`, each with its reason.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence

from tests.conformance.allowlist import normalise

Arg = bytes | str | int


def encode(args: Sequence[Arg]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


class RawConnection:
    """A RESP connection returning replies as raw bytes."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def send(self, *args: Arg) -> None:
        self.sock.sendall(encode(args))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def call(self, *args: Arg) -> bytes:
        self.send(*args)
        return self.read_reply()

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed")
        self.buf += chunk

    def _line(self, pos: int) -> int:
        while True:
            i = self.buf.find(b"\r\n", pos)
            if i >= 0:
                return i
            self._fill()

    def _skip(self, pos: int) -> int:
        """Position after the reply starting at pos (reads more as needed)."""
        while len(self.buf) <= pos:
            self._fill()
        kind = self.buf[pos : pos + 1]
        nl = self._line(pos)
        head = self.buf[pos + 1 : nl]
        pos = nl + 2
        if kind in (b"$", b"=", b"!"):
            n = int(head)
            if n < 0:
                return pos
            while len(self.buf) < pos + n + 2:
                self._fill()
            return pos + n + 2
        if kind in (b"*", b"~", b">"):
            n = int(head)
            for _ in range(max(n, 0)):
                pos = self._skip(pos)
            return pos
        if kind in (b"%", b"|"):
            n = int(head)
            for _ in range(2 * n):
                pos = self._skip(pos)
            if kind == b"|":  # attribute: the reply follows it
                pos = self._skip(pos)
            return pos
        return pos  # + - : _ , # ( simple one-line types

    def read_reply(self) -> bytes:
        end = self._skip(0)
        reply, self.buf = self.buf[:end], self.buf[end:]
        return reply


class Pair:
    """One connection to the oracle and one to Rill, in the same protocol."""

    def __init__(self, oracle_port: int, rill_port: int, proto: int = 2) -> None:
        self.oracle = RawConnection(oracle_port)
        self.rill = RawConnection(rill_port)
        self.proto = proto
        if proto == 3:
            self.oracle.call("HELLO", "3")
            self.rill.call("HELLO", "3")

    def close(self) -> None:
        self.oracle.close()
        self.rill.close()

    def both(self, *args: Arg) -> tuple[bytes, bytes]:
        """Replies (oracle, rill), normalised by the allowlist."""
        expected = self.oracle.call(*args)
        actual = self.rill.call(*args)
        return normalise(args, expected, self.proto), normalise(args, actual, self.proto)

    def check(self, *args: Arg) -> bytes:
        """Send to both; assert the replies are identical; return the reply."""
        expected, actual = self.both(*args)
        assert actual == expected, f"{_show(args)} [RESP{self.proto}]\n  redis: {expected!r}\n  rill:  {actual!r}"
        return actual

    def check_all(self, commands: Sequence[Sequence[Arg]]) -> None:
        for cmd in commands:
            self.check(*cmd)


def _show(args: Sequence[Arg]) -> str:
    return " ".join(a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a) for a in args)
