"""The AOF writer: appends the effect log's bytes to the open incr file under an fsync
policy, and holds client replies until the effects they depend on are on disk.

Group commit. Effects are buffered as commands run; the first effect of an event-loop
iteration schedules one `commit` (loop.call_soon), which runs after every I/O callback of
that poll and writes the whole batch with one `write`. While the log is ahead of the disk,
every reply is handed to the server's `ReplyGate` with the log offset it was produced at, and is
released once the disk reaches that offset — so with `always` no client sees an
acknowledgement (nor data) that is not fsynced, and with `everysec`/`no` none sees one that
is not at least in the OS page cache (a killed process loses nothing acknowledged).
Under `always` the fsync runs in a thread: one fsync covers every batch written while the
previous one ran, and the event loop executes the next batch meanwhile (pipelined group
commit), instead of stopping for each fsync.

Policies and their loss windows (see docs/persistence.md):
* always   — replies leave after their fsync: nothing acknowledged is lost, even on power loss.
* everysec — the thread fsyncs at most once a second, off the event loop: a power loss or
             kernel crash loses at most the last ~1 s (plus the duration of an fsync in
             progress); a crash of the process alone loses nothing acknowledged.
* no       — the kernel decides when to write back (typically within 30 s on Linux).

Offsets. The file holds the effect log's bytes, except the replication-only units (PUBLISH),
which Redis never writes to its AOF: where the log moved on without bytes to keep, the writer
puts an annotation line `#OFFSET:<n>` ("the next byte is log offset n"), before the next unit
it keeps and at the end of each write, so a reader knows the log offset at every unit
boundary of the file (node/persistence/aof_reader.py), and a restart resumes at the offset
the node had reached.

Errors. A failed or short write is undone (ftruncate back to the last complete unit) and
kept in the buffer; the held replies stay held and the caller refuses writes (-MISCONF)
until a retry succeeds. A failed fsync is retried the same way. Nothing is acknowledged
before it is written.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from typing import Final

ALWAYS: Final = "always"
EVERYSEC: Final = "everysec"
NO: Final = "no"


def offset_annotation(offset: int) -> bytes:
    """The line that says the file's next byte is log offset `offset` (see the module doc)."""
    return b"#OFFSET:%d\r\n" % offset


class AofWriter:
    """The open incr file. `append` buffers; `write` empties the buffer into the file;
    `fsync` makes what was written durable. Offsets are effect-log offsets: `end_offset` is
    where the log stands as far as the writer was told, `written_offset` and
    `synced_offset` how far the file has it written and fsynced. `end_offset` of an existing
    file is given by whoever read it (annotations make it more than start + size)."""

    def __init__(self, path: str, start_offset: int, end_offset: int | None = None) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.size = os.fstat(self.fd).st_size  # bytes in the file, all whole units
        self.start_offset = start_offset
        self.buf = bytearray()
        self.end_offset = start_offset + self.size if end_offset is None else end_offset
        # The log offset a reader of the file and the buffer computes at their end: behind
        # end_offset while replication-only units came after the last byte kept.
        self._kept_offset = self.end_offset
        self.written_offset = self.end_offset
        self.synced_offset = self.written_offset
        # Held by whoever uses the fd outside the event loop (the everysec thread), and by
        # the loop when it closes or switches it.
        self.lock = threading.Lock()

    def append(self, data: bytes, end_offset: int) -> None:
        """The log's bytes up to `end_offset` (empty: replication-only units, none kept)."""
        if data:
            start = end_offset - len(data)
            if start != self._kept_offset:
                self.buf += offset_annotation(start)
            self.buf += data
            self._kept_offset = end_offset
        self.end_offset = end_offset

    def write(self) -> None:
        """Write the whole buffer. On failure the file is cut back to its last whole unit
        (or, when it cannot be cut, the bytes that did reach it leave the buffer so the
        next write continues them) and OSError is raised."""
        if self._kept_offset != self.end_offset:
            # The file ends knowing the log's offset, even after replication-only units.
            self.buf += offset_annotation(self.end_offset)
            self._kept_offset = self.end_offset
        buf = self.buf
        if not buf:
            return
        written = os.write(self.fd, buf)
        error: OSError | None = None
        if written < len(buf):
            # A short write: the disk (or a size limit) stopped it part way. Writing the rest
            # usually fails with the real reason; Redis reports ENOSPC when it does not.
            try:
                written += os.write(self.fd, memoryview(buf)[written:])
            except OSError as exc:
                error = exc
            if error is None and written < len(buf):
                error = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if error is None:
            self.size += written
            self.written_offset = self.end_offset
            self.buf = bytearray()
            return
        try:
            os.ftruncate(self.fd, self.size)
        except OSError:
            # What reached the file stays; written_offset waits for the rest (the part
            # written may end inside a unit or an annotation).
            self.size += written
            del buf[:written]
        raise error

    def fsync(self) -> None:
        target = self.written_offset
        if target == self.synced_offset:
            return
        with self.lock:
            os.fsync(self.fd)
        self.synced_offset = max(self.synced_offset, target)

    def close(self) -> None:
        with self.lock:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1


class FsyncThread:
    """fsync off the event loop. With an `interval` (everysec) it wakes that often and
    fsyncs if anything was written since; without one (always) it fsyncs on `request`,
    one fsync at a time, requests made during an fsync coalescing into the next. Each result
    goes to `report(offset, error)`, called from this thread (use call_soon_threadsafe)."""

    def __init__(self, writer: AofWriter, report: Callable[[int, OSError | None], None], interval: float | None) -> None:
        self.writer = writer
        self.interval = interval
        self.in_progress = False
        self._report = report
        self._wake = threading.Event()
        self._stopping = False
        self._synced = writer.synced_offset
        self._thread = threading.Thread(target=self._run, name="rill-aof-fsync", daemon=True)
        self._thread.start()

    def request(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        writer = self.writer
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._stopping:
                return
            # Everything written before the fsync starts is covered by it.
            target = writer.written_offset
            if target <= self._synced:
                continue
            error: OSError | None = None
            self.in_progress = True
            try:
                with writer.lock:
                    if writer.fd < 0:
                        return
                    os.fsync(writer.fd)
                self._synced = target
            except OSError as exc:
                error = exc
            finally:
                self.in_progress = False
            self._report(target, error)

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join()
