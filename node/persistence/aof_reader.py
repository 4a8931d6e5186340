"""Reading an AOF file: RESP commands with the offset each one ends at, the unit boundaries
(a MULTI is complete only with its EXEC) and the rules that tell a truncated tail from a
corrupted file (Redis aof.c loadSingleAppendOnlyFile).

A file is read in large chunks; `command_end` (the effect log's scanner, C with the native
build) finds where each command ends, as canonical RESP (what the effect log writes and
what Redis writes), and hiredis parses it. Blocks of XADDs may be taken straight from the
chunk's bytes by the caller (`append_block`: the replay groups them by stream and appends
them in C). Where the scanner stops — bad bytes, a non-canonical header, or the end of the
chunk inside a command — an exact scan decides between *incomplete* (the next chunk
continues it; at the end of the file, *truncated*: a crash in the middle of a write) and
*corrupt* (the bytes can never become a command), and names the offset.

Lines starting with `#` between units are annotations, as in Redis 7's AOF; Rill writes
`#OFFSET:<n>` where the log moved on by replication-only units the AOF does not keep
(node/persistence/aof.py): the next byte is log offset n. `AofReadResult.log_end` turns the
file's valid length into the log offset it ends at.

Like Redis's AOF, the format has no checksum: a changed byte inside a value is read as that
value. Framing damage (a type byte, a count, a length) is detected.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import hiredis

from node.log.scan import command_end

_CHUNK: Final = 4 * 1024 * 1024
_INCOMPLETE: Final = -1

# Whatever an executor raises to refuse a command (unknown command, wrong arity) becomes a
# format error naming the command's offset.
Executor = Callable[[list[bytes]], None]
# Takes the commands it can from data[pos:] straight from the bytes (whole commands, none of
# them MULTI or EXEC): returns where they end and how many ((pos, 0): none).
BlockAppender = Callable[[bytes, int], tuple[int, int]]


class ReplayRefused(Exception):
    """Raised by an executor: the command cannot be replayed (the text says why)."""


@dataclass(frozen=True, slots=True)
class AofReadResult:
    name: str
    size: int
    valid_up_to: int  # end of the last complete unit (a command, or MULTI..EXEC)
    commands: int  # commands read up to valid_up_to
    status: str  # "ok", "truncated" or "corrupt"
    error: str = ""  # for "corrupt": what is wrong at `error_offset`
    error_offset: int = -1
    open_multi: bool = False  # the file ended inside a MULTI (treated as truncated)
    # The last offset annotation up to valid_up_to: (file position after it, its log offset),
    # and the bytes of other annotations after it (none of them are log bytes).
    anchor: tuple[int, int] | None = None
    annotation_bytes: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def log_end(self, start_offset: int) -> int:
        """The log offset at valid_up_to of a file whose first byte is log offset
        `start_offset` (annotations are not log bytes)."""
        if self.anchor is None:
            return start_offset + self.valid_up_to - self.annotation_bytes
        position, offset = self.anchor
        return offset + self.valid_up_to - position - self.annotation_bytes


def read_aof(
    path: str, execute: Executor | None = None, append_block: BlockAppender | None = None, chunk_size: int = _CHUNK
) -> AofReadResult:
    """Read the AOF file at `path`, passing each command to `execute` in order (MULTI, the
    queued commands and EXEC included; a MULTI left open at the end has had its commands
    passed but not its EXEC), except those `append_block` takes. The file is read
    `chunk_size` bytes at a time. Raises OSError if the file cannot be read."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        reader = hiredis.Reader()
        buf = b""
        base = 0  # file offset of buf[0]
        at = 0  # end of the last complete command, in buf
        valid = 0  # end of the last complete unit (file offset)
        before_multi = -1
        commands = 0
        unit_commands = 0
        anchor: tuple[int, int] | None = None
        annotated = 0
        while True:
            # At least as much as the command cut by the last chunk already holds: a command
            # larger than a chunk (a huge value) is then copied a logarithmic number of times.
            chunk = f.read(max(chunk_size, len(buf) - at))
            if not chunk:
                break
            base += at
            buf = buf[at:] + chunk
            at = 0
            while at < len(buf):
                if buf[at] == 0x23:  # '#': an annotation line
                    nl = buf.find(b"\r\n", at)
                    if nl < 0:
                        break  # cut by the chunk's end (or the file's: truncated)
                    if before_multi >= 0:
                        return AofReadResult(name, size, valid, commands, "corrupt",
                                             "annotation inside a transaction", base + at, anchor=anchor,
                                             annotation_bytes=annotated)
                    offset = _annotated_offset(buf[at + 1 : nl])
                    if offset is None:
                        annotated += nl + 2 - at
                    at = nl + 2
                    valid = base + at
                    if offset is not None:
                        anchor, annotated = (valid, offset), 0
                    continue
                if append_block is not None:
                    end, taken = append_block(buf, at)
                    if taken:
                        at = end
                        unit_commands += taken
                        if before_multi < 0:
                            valid = base + at
                            commands += unit_commands
                            unit_commands = 0
                        continue
                end = command_end(buf, at)
                if end < 0:
                    if scan_command(buf, at)[1]:
                        return _diagnose(name, size, buf[at:] + f.read(), base + at, valid, commands, before_multi,
                                         anchor, annotated)
                    break  # cut by the chunk's end: the next chunk completes it
                reader.feed(buf, at, end - at)
                item = reader.gets()
                if execute is not None:
                    try:
                        execute(item)
                    except ReplayRefused as exc:
                        return AofReadResult(name, size, valid, commands, "corrupt", str(exc), base + at, anchor=anchor,
                                             annotation_bytes=annotated)
                at = end
                unit_commands += 1
                word = item[0].lower()
                if word == b"multi":
                    before_multi = valid
                elif word == b"exec":
                    before_multi = -1
                if before_multi < 0:
                    valid = base + at
                    commands += unit_commands
                    unit_commands = 0
        pos = base + at
        if pos == size and before_multi < 0:
            return AofReadResult(name, size, valid, commands, "ok", anchor=anchor, annotation_bytes=annotated)
        if pos < size:
            return _diagnose(name, size, buf[at:], pos, valid, commands, before_multi, anchor, annotated)
        return AofReadResult(name, size, before_multi, commands, "truncated", open_multi=True, anchor=anchor,
                             annotation_bytes=annotated)


def _annotated_offset(text: bytes) -> int | None:
    """The offset of an `#OFFSET:<n>` annotation; None for any other annotation (skipped, as
    Redis skips the ones it does not know)."""
    if not text.startswith(b"OFFSET:"):
        return None
    digits = text[7:]
    return int(digits) if digits.isdigit() and len(digits) <= 19 else None


def _diagnose(
    name: str, size: int, rest: bytes, pos: int, valid: int, commands: int, before_multi: int,
    anchor: tuple[int, int] | None, annotated: int,
) -> AofReadResult:
    """hiredis stopped at `pos` (`rest` = the whole file from there on): scan exactly."""
    at = 0
    while at < len(rest):
        if rest[at] == 0x23:  # an annotation line (a whole one, or the file ends in it)
            nl = rest.find(b"\r\n", at)
            if nl < 0:
                break
            at = nl + 2
            continue
        end, error = scan_command(rest, at)
        if error:
            return AofReadResult(name, size, valid, commands, "corrupt", error, pos + at, anchor=anchor,
                                 annotation_bytes=annotated)
        if end == _INCOMPLETE:
            break
        at = end
    # A command (and so the file) ends in the middle: a short write.
    cut = before_multi if before_multi >= 0 else valid
    return AofReadResult(name, size, cut, commands, "truncated", open_multi=before_multi >= 0, anchor=anchor,
                         annotation_bytes=annotated)


def scan_command(buf: bytes, pos: int) -> tuple[int, str]:
    """One RESP array of bulk strings at `pos`: (end, "") when complete, (_INCOMPLETE, "")
    when `buf` ends inside it, (-1, reason) when the bytes can never be one."""
    n = len(buf)
    if buf[pos] != 0x2A:  # '*'
        return _INCOMPLETE, "expected '*', got %r" % chr(buf[pos])
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        return (_INCOMPLETE, "") if _could_be_number(buf[pos + 1 :]) else (_INCOMPLETE, "bad multibulk count")
    count = _parse_count(buf[pos + 1 : nl])
    if count is None or count < 1:
        return _INCOMPLETE, "bad multibulk count"
    pos = nl + 2
    for _ in range(count):
        if pos >= n:
            return _INCOMPLETE, ""
        if buf[pos] != 0x24:  # '$'
            return _INCOMPLETE, "expected '$', got %r" % chr(buf[pos])
        nl = buf.find(b"\r\n", pos)
        if nl < 0:
            return (_INCOMPLETE, "") if _could_be_number(buf[pos + 1 :]) else (_INCOMPLETE, "bad bulk length")
        length = _parse_count(buf[pos + 1 : nl])
        if length is None:
            return _INCOMPLETE, "bad bulk length"
        pos = nl + 2 + length
        if pos + 2 > n:
            # Only a prefix of the terminating CRLF may be present.
            if buf[pos:n] not in (b"", b"\r"):
                return _INCOMPLETE, "bulk string not terminated by CRLF"
            return _INCOMPLETE, ""
        if buf[pos : pos + 2] != b"\r\n":
            return _INCOMPLETE, "bulk string not terminated by CRLF"
        pos += 2
    return pos, ""


def _parse_count(raw: bytes) -> int | None:
    if not raw or len(raw) > 19 or not raw.isdigit() or (len(raw) > 1 and raw[0] == 0x30):
        return None
    return int(raw)


def _could_be_number(raw: bytes) -> bool:
    """A header cut short: digits and at most a trailing CR."""
    body = raw[:-1] if raw.endswith(b"\r") else raw
    return len(body) <= 19 and (body == b"" or body.isdigit())
