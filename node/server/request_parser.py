"""Turns the bytes a client sends into command argument vectors; the one rule it owns is
Redis's request framing and its limits (networking.c processMultibulkBuffer/processInlineBuffer).

Sans-I/O: `feed(data)` returns the complete commands and, when the input broke the rules,
a protocol error message after which the connection must be closed (Redis replies
`-ERR Protocol error: ...` and closes).

Multibulk requests are parsed by hiredis (C) for speed. hiredis knows no limits and no inline
requests, so Python scans the framing only where it matters: the incomplete command held
across reads (to enforce `proto-max-bulk-len`, the multibulk count limit and the
unauthenticated limits before buffering a huge request) and chunks that are not pure
multibulk (inline commands, as telnet and `redis-benchmark PING_INLINE` send).
"""

from __future__ import annotations

import re
from typing import Any, Final

import hiredis

from node.log.encode import decimal_digits
from node.text import split_inline_args

MAX_MULTIBULK: Final = 1024 * 1024
MAX_INLINE: Final = 64 * 1024  # PROTO_INLINE_MAX_SIZE
UNAUTH_MAX_MULTIBULK: Final = 10
UNAUTH_MAX_BULK: Final = 16384

_INCOMPLETE: Final = -1
# An incomplete request larger than this is kept once (see RequestParser._deferred).
_DEFER: Final = 1 << 20


class ProtocolError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# A chunk this large could hold a complete request over a limit: it takes the exact path.
# Smaller chunks cannot (a request over a limit needs more bytes than this), and a request
# spanning chunks is checked as its partial bytes arrive.
_SMALL_CHUNK: Final = 1 << 20
_MULTIBULK_START: Final = (0x2A, 0x24)  # '*', and '$' (see _feed)
# hiredis allocates an array as soon as it reads its count (and freeing it walks every slot):
# a count of a million or more (Redis's limit is 1024*1024) is checked by the exact path
# first. A value that merely contains such text only takes the slower path.
_LARGE_COUNT: Final = re.compile(rb"\*[1-9][0-9]{6}")
# Elements hiredis would turn into bytes although they are not bulk strings (Redis answers
# "expected '$', got '+'"); values containing these bytes also just take the exact path.
# Each is looked for only when its marker byte occurs at all: `int in bytes` is a memchr,
# a bytes needle costs ~0.3 us per read even when absent.
_STATUS_LIKE_ELEMENT: Final = b"\r\n+"
_VERBATIM_LIKE_ELEMENT: Final = b"\r\n="
_BIGNUM_LIKE_ELEMENT: Final = b"\r\n("
_PLUS: Final = 0x2B
_EQUALS: Final = 0x3D
_PAREN: Final = 0x28


def _canonical_size(item: list[Any]) -> int:
    """Bytes of the canonical RESP encoding of a request hiredis returned; -1 unless every
    element is a bytes object (hiredis also returns ints, lists, None, errors...)."""
    size = 3 + decimal_digits(len(item))
    for arg in item:
        if type(arg) is not bytes:
            return -1
        n = len(arg)
        size += n + 5 + decimal_digits(n)
    return size


class RequestParser:
    """Per-connection request parser. `authenticated` is updated by the connection so the
    tighter unauthenticated limits apply only before AUTH (as in Redis 7)."""

    __slots__ = ("_reader", "_partial", "_scan", "_unparsed", "_deferred", "max_bulk", "authenticated")

    def __init__(self, max_bulk: int = 512 * 1024 * 1024) -> None:
        self._reader = hiredis.Reader()
        # The exact bytes of the incomplete request received so far (None at a request
        # boundary). For a multibulk request hiredis holds the same bytes.
        self._partial: bytearray | None = None
        # [position of the next unchecked element header in _partial, elements left].
        self._scan: list[int] | None = None
        # Before AUTH, requests are parsed one at a time (Redis applies its limits per
        # request, so an AUTH lifts them for the very next one): the rest waits here.
        self._unparsed = b""
        # A large incomplete request is held in `_partial` only, not also in hiredis, so
        # what it costs is what buffered() counts (client-query-buffer-limit); it is parsed
        # once complete.
        self._deferred = False
        self.max_bulk = max_bulk
        self.authenticated = True

    def feed(self, data: bytes) -> tuple[list[list[bytes]], str | None]:
        """Complete requests in `data`, and a protocol error message if the input broke
        the rules (the requests before the error are still returned)."""
        commands: list[list[bytes]] = []
        try:
            self._feed(data, commands)
        except ProtocolError as exc:
            return commands, exc.message
        return commands, None

    def buffered(self) -> int:
        """Bytes held for requests not complete or not parsed yet (client-query-buffer-limit)."""
        return (len(self._partial) if self._partial is not None else 0) + len(self._unparsed)

    def has_unparsed(self) -> bool:
        """True when requests received before AUTH wait to be parsed (call feed(b""))."""
        return bool(self._unparsed)

    def _feed(self, data: bytes, commands: list[list[bytes]]) -> None:
        if self._deferred:
            partial = self._partial
            assert partial is not None
            partial += data
            if not self._check_partial(partial, complete_ok=True):
                return  # still incomplete
            # Complete: parse it (and what follows it) as a fresh chunk.
            self._deferred = False
            self._partial = None
            data = bytes(partial)
            del partial
        if self._unparsed:
            data = self._unparsed + data
            self._unparsed = b""
            self._rescan(data, commands)
            return
        if not data:
            return
        partial = self._partial
        first_byte = data[0] if partial is None else partial[0]
        # '$' at a believed boundary also goes to hiredis: the boundary test below can take an
        # element boundary inside a request for a request boundary (when a value ends with
        # the previous request's encoding), and then the next read starts with '$'. hiredis
        # knows its real state: it continues the request, or returns a bare bulk string,
        # which is redone exactly as an inline request.
        if (
            first_byte not in _MULTIBULK_START
            or not self.authenticated
            or len(data) > _SMALL_CHUNK
            or (partial is not None and partial.find(b"\r\n") < 0)  # its count is still unread
            or _LARGE_COUNT.search(data) is not None
            or (_EQUALS in data and _VERBATIM_LIKE_ELEMENT in data)
        ):
            self._rescan(data, commands)
            return
        reader = self._reader
        reader.feed(data)
        first = len(commands)
        last: object = False
        # Bytes of the requests completed by this chunk, counted as if canonical ($-bulk
        # strings with plain lengths) minus what arrived before it.
        consumed = -(len(partial) if partial is not None else 0)
        while True:
            try:
                item = reader.gets()
            except hiredis.ProtocolError:
                self._rescan(data, commands, first)
                return
            if item is False:
                break
            size = _canonical_size(item) if type(item) is list and item else -1
            if size >= 0:
                commands.append(item)
                consumed += size
            elif item == []:
                consumed += 4  # *0\r\n: an empty request, ignored
            else:
                # Not a multibulk of bulk strings (None may be *-1 or a bare $-1, which
                # Redis takes as an inline command): redo exactly to get Redis's behaviour.
                self._rescan(data, commands, first)
                return
            last = item
        if last is False:
            # Nothing completed: the whole chunk belongs to the pending request.
            if partial is None:
                self._partial = bytearray(data)
                self._scan = None
            else:
                partial += data  # the header scan resumes where it stopped
        elif not reader.has_data() and consumed == len(data):
            # hiredis holds no unread bytes (it leaves an incomplete bulk string unread) and
            # the requests account for every byte: a request boundary. A status (+) or
            # bignum (() element, which hiredis returns as bytes but Redis refuses, is
            # shorter than its canonical form, so it can never account exactly (the only
            # element longer than canonical, verbatim (=), was excluded above).
            self._partial = None
        else:
            # The chunk ends inside a request: find where it starts. That needs every
            # completed request canonical: anything else takes the exact path.
            if (
                (_PLUS in data and _STATUS_LIKE_ELEMENT in data)
                or (_PAREN in data and _BIGNUM_LIKE_ELEMENT in data)
                or not 0 <= consumed < len(data)
            ):
                self._rescan(data, commands, first)
                return
            self._partial = bytearray(data[consumed:])
            self._scan = None
        if self._partial is not None:
            self._check_partial(self._partial)
            self._defer_if_large()

    def _defer_if_large(self) -> None:
        """Past _DEFER bytes an incomplete request stops being fed to hiredis, which would
        hold a second copy of it (a request split between two reads stays on the fast path)."""
        partial = self._partial
        if partial is not None and len(partial) > _DEFER and self.authenticated and partial[0] == 0x2A:
            self._reader = hiredis.Reader()
            self._deferred = True

    def _check_partial(self, partial: bytearray, complete_ok: bool = False) -> bool:
        """Enforce the limits on the element headers received so far (hiredis buffers the
        rest). The walk resumes where the previous read left it, so a large request arriving
        in many reads costs time linear in its size. Returns whether the request is
        complete, which only a deferred one (`complete_ok`) may be."""
        scan = self._scan
        if scan is None:
            nl = partial.find(b"\r\n")
            if nl < 0:
                if len(partial) > MAX_INLINE:
                    raise ProtocolError("Protocol error: too big mbulk count string")
                return False
            count = _parse_ll(partial[1:nl])
            if count is None or count > MAX_MULTIBULK:
                raise ProtocolError("Protocol error: invalid multibulk length")
            scan = self._scan = [nl + 2, count]
        pos, left = scan
        n = len(partial)
        while left > 0 and pos < n:
            if partial[pos] != 0x24:  # '$'
                raise ProtocolError("Protocol error: expected '$', got '%s'" % chr(partial[pos]))
            nl = partial.find(b"\r\n", pos)
            if nl < 0:
                if n - pos > MAX_INLINE:
                    raise ProtocolError("Protocol error: too big bulk count string")
                break
            size = _parse_ll(partial[pos + 1 : nl])
            if size is None or size < 0 or size > self.max_bulk:
                raise ProtocolError("Protocol error: invalid bulk length")
            pos = nl + 2 + size + 2  # may lie past the bytes received: the value is incomplete
            left -= 1
        scan[0], scan[1] = pos, left
        if left <= 0 and pos <= n:
            if complete_ok:
                return True
            raise ProtocolError("Protocol error: invalid multibulk request")
        return False

    def _rescan(self, data: bytes, commands: list[list[bytes]], first: int | None = None) -> None:
        """Exact path: forget what hiredis holds and re-parse the pending bytes plus `data`
        in Python (inline requests, limits, Redis's error texts)."""
        if first is not None:
            del commands[first:]
        self._reader = hiredis.Reader()
        buf = data if self._partial is None else bytes(self._partial) + data
        self._partial = None
        pos = 0
        n = len(buf)
        while pos < n:
            if buf[pos] == 0x2A:
                end = self._scan_multibulk(buf, pos)
                if end == _INCOMPLETE:
                    self._partial = bytearray(buf[pos:])
                    self._scan = None
                    self._reader.feed(buf[pos:])
                    self._defer_if_large()
                    return
                if buf[pos + 1 : pos + 2] != b"-" and buf[pos + 1 : pos + 3] != b"0\r":
                    # A count <= 0 is an empty request, ignored as Redis does (hiredis would
                    # refuse counts below -1).
                    self._reader.feed(buf[pos:end])
                    commands.append(self._reader.gets())
                pos = end
                if not self.authenticated and pos < n:
                    self._unparsed = buf[pos:]
                    return
            else:
                pos = self._inline_from(buf, pos, commands)
                if pos < 0:
                    return

    def _inline_from(self, buf: bytes, pos: int, commands: list[list[bytes]]) -> int:
        """Parse one inline line at pos; return the next position, or -1 when the line is
        incomplete (it is kept as the partial request)."""
        nl = buf.find(b"\n", pos)
        if nl < 0:
            if len(buf) - pos > MAX_INLINE:
                raise ProtocolError("Protocol error: too big inline request")
            self._partial = bytearray(buf[pos:])
            self._scan = None
            return -1
        if nl - pos > MAX_INLINE:
            raise ProtocolError("Protocol error: too big inline request")
        line = buf[pos:nl]
        if line.endswith(b"\r"):
            line = line[:-1]
        args = split_inline_args(line)
        if args is None:
            raise ProtocolError("Protocol error: unbalanced quotes in request")
        if args:
            commands.append(args)
            if not self.authenticated and nl + 1 < len(buf):
                self._unparsed = buf[nl + 1 :]
                return -1
        return nl + 1

    def _scan_multibulk(self, buf: bytes | bytearray, pos: int) -> int:
        """Walk one multibulk request at pos checking Redis's limits; return its end
        position, or _INCOMPLETE. Raises ProtocolError with Redis's texts."""
        nl = buf.find(b"\r\n", pos)
        if nl < 0:
            if len(buf) - pos > MAX_INLINE:
                raise ProtocolError("Protocol error: too big mbulk count string")
            return _INCOMPLETE
        count = _parse_ll(buf[pos + 1 : nl])
        if count is None or count > MAX_MULTIBULK:
            raise ProtocolError("Protocol error: invalid multibulk length")
        if not self.authenticated and count > UNAUTH_MAX_MULTIBULK:
            raise ProtocolError("Protocol error: unauthenticated multibulk length")
        pos = nl + 2
        for _ in range(max(count, 0)):
            if pos >= len(buf):
                return _INCOMPLETE
            if buf[pos] != 0x24:  # '$'
                raise ProtocolError("Protocol error: expected '$', got '%s'" % chr(buf[pos]))
            nl = buf.find(b"\r\n", pos)
            if nl < 0:
                if len(buf) - pos > MAX_INLINE:
                    raise ProtocolError("Protocol error: too big bulk count string")
                return _INCOMPLETE
            size = _parse_ll(buf[pos + 1 : nl])
            if size is None or size < 0 or size > self.max_bulk:
                raise ProtocolError("Protocol error: invalid bulk length")
            if not self.authenticated and size > UNAUTH_MAX_BULK:
                raise ProtocolError("Protocol error: unauthenticated bulk length")
            pos = nl + 2 + size + 2
            if pos > len(buf):
                return _INCOMPLETE
        return pos


def _parse_ll(raw: bytes | bytearray) -> int | None:
    # string2ll: optional '-', digits, no spaces or '+'.
    if not raw or len(raw) > 20:
        return None
    digits = raw[1:] if raw[:1] == b"-" else raw
    if not digits or not digits.isdigit() or (len(digits) > 1 and digits[:1] == b"0"):
        return None
    return int(raw)
