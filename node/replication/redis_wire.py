"""Redis's replication protocol on the wire (replication.c), without I/O: what the two ends
of a Redis replication link say to each other, for node/replication/redis_link.py (Rill as
a replica of a redis-server) and node/replication/redis_primary.py (a redis-server as a
replica of Rill).

The exchange, replica first:

    PING                                   +PONG (or -NOAUTH ...: AUTH comes next)
    AUTH <masterauth>                      +OK
    REPLCONF listening-port <port>         +OK   (the address the primary's INFO and
    REPLCONF ip-address <ip>               +OK    Sentinel show for the replica)
    REPLCONF capa eof capa psync2          +OK   (a diskless transfer may come; PSYNC2 ids)
    PSYNC <replid> <offset + 1>            +CONTINUE [<new replid>]   then the stream
    PSYNC ? -1                             +FULLRESYNC <replid> <offset>, the RDB, the stream

The RDB comes as `$<length>\\r\\n<bytes>` (no CRLF after), or, when the replica announced
`capa eof`, possibly as `$EOF:<40 random bytes>\\r\\n<bytes><the same 40 bytes>`; while the
primary prepares it, it may send lone `\\n` bytes to keep the link alive. Then the command
stream: canonical RESP arrays, the primary's writes as it propagates them, a PING every
repl-ping-replica-period, and `REPLCONF GETACK *` when it wants an acknowledgement. Every
byte of the stream counts in the replication offset; the replica reports the offset it has
processed with `REPLCONF ACK <offset>`, at least once a second (the primary's WAIT counts
it), and at once after a diskless transfer (which is what puts it online).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import hiredis

from node.log.encode import encode_command
from node.log.scan import command_end

EOF_MARK_LEN: Final = 40  # RDB_EOF_MARK_SIZE
# A command of the stream larger than this is refused as garbage (proto-max-bulk-len is
# 512 MB by default; a primary never sends more than one such argument at a time).
MAX_COMMAND_BYTES: Final = 1 << 30


class WireError(Exception):
    """The peer sent what the protocol does not allow."""


@dataclass(frozen=True, slots=True)
class PsyncReply:
    """The primary's answer to PSYNC: `kind` is "full" (FULLRESYNC replid offset), "continue"
    (CONTINUE, replid empty when unchanged) or "error" (its text in `error`)."""

    kind: str
    replid: str = ""
    offset: int = 0
    error: str = ""


def parse_psync_reply(line: bytes) -> PsyncReply:
    """The reply line to PSYNC, without its CRLF."""
    text = line.decode("utf-8", "replace")
    if text.startswith("+FULLRESYNC"):
        parts = text.split()
        if len(parts) != 3 or len(parts[1]) != 40 or not parts[2].lstrip("-").isdigit():
            raise WireError(f"bad FULLRESYNC reply: {text!r}")
        return PsyncReply("full", parts[1], int(parts[2]))
    if text.startswith("+CONTINUE"):
        parts = text.split()
        replid = parts[1] if len(parts) > 1 else ""
        if replid and len(replid) != 40:
            raise WireError(f"bad CONTINUE reply: {text!r}")
        return PsyncReply("continue", replid)
    if text.startswith("-"):
        return PsyncReply("error", error=text[1:])
    raise WireError(f"unexpected reply to PSYNC: {text!r}")


@dataclass(frozen=True, slots=True)
class BulkHeader:
    """How the RDB comes: `size` bytes, or (size -1) up to the 40-byte `mark`."""

    size: int
    mark: bytes = b""


def parse_bulk_header(line: bytes) -> BulkHeader:
    """The `$<length>` or `$EOF:<mark>` line before an RDB (without its CRLF)."""
    if line.startswith(b"-"):
        raise WireError(f"the primary aborted the transfer: {line[1:].decode('utf-8', 'replace')}")
    if not line.startswith(b"$"):
        raise WireError(f"bad protocol from the primary, expected the RDB's header: {line[:64]!r}")
    if line.startswith(b"$EOF:"):
        mark = line[5:]
        if len(mark) != EOF_MARK_LEN:
            raise WireError("bad EOF mark in the RDB's header")
        return BulkHeader(-1, mark)
    digits = line[1:]
    if not digits.isdigit():
        raise WireError(f"bad RDB length {digits[:32]!r}")
    return BulkHeader(int(digits))


def ack_command(offset: int) -> bytes:
    """REPLCONF ACK <offset>."""
    return encode_command([b"REPLCONF", b"ACK", b"%d" % offset])


def is_getack(argv: list[bytes]) -> bool:
    return len(argv) >= 2 and argv[0].lower() == b"replconf" and argv[1].lower() == b"getack"


class CommandFramer:
    """Cuts a byte stream into commands with their exact sizes (each counts in the offset):
    canonical RESP arrays of bulk strings, as a primary writes its stream. Anything else is
    a WireError; an incomplete command waits for more bytes."""

    __slots__ = ("_buf", "_pos", "_reader")

    def __init__(self) -> None:
        self._buf = b""
        self._pos = 0
        self._reader = hiredis.Reader()

    def feed(self, data: bytes) -> None:
        if self._pos:
            self._buf = self._buf[self._pos :]
            self._pos = 0
        self._buf += data

    def buffered(self) -> int:
        return len(self._buf) - self._pos

    def next(self) -> tuple[list[bytes], int] | None:
        """The next whole command and its size in bytes, or None until more bytes come."""
        buf = self._buf
        pos = self._pos
        if pos >= len(buf):
            return None
        if buf[pos] != 0x2A:  # '*'
            raise WireError(f"bad protocol in the replication stream at {buf[pos:pos + 32]!r}")
        end = command_end(buf, pos)
        if end < 0:
            # Incomplete, or not canonical: hiredis tells which (it parses any valid RESP).
            reader = self._reader
            reader.feed(buf, pos, len(buf) - pos)
            try:
                complete = reader.gets()
            except hiredis.ProtocolError as exc:
                raise WireError(f"bad protocol in the replication stream: {exc}") from None
            finally:
                self._reader = hiredis.Reader()
            if complete is not False:
                raise WireError("a command of the replication stream is not in canonical form")
            if len(buf) - pos > MAX_COMMAND_BYTES:
                raise WireError("a command of the replication stream is larger than 1 GB")
            return None
        reader = self._reader
        reader.feed(buf, pos, end - pos)
        argv = reader.gets()
        if not isinstance(argv, list) or not argv or not all(isinstance(a, bytes) for a in argv):
            raise WireError("a command of the replication stream is not an array of strings")
        self._pos = end
        return argv, end - pos
