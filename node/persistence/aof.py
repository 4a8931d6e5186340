"""The AOF writer: appends the effect log's bytes to the open incr file under an fsync
policy, and holds client replies until the effects they depend on are on disk.

Group commit. Effects are buffered as commands run; the first effect of an event-loop
iteration schedules one `commit` (loop.call_soon), which runs after every I/O callback of
that poll: one write (and, for `always`, one fsync) covers all the clients that wrote in the
iteration. While effects are buffered, every reply is handed to the `ReplyGate` instead of
the socket, and is released only after the commit succeeds — so with `always` no client
sees an acknowledgement (nor data) that is not fsynced, and with `everysec`/`no` none sees one
that is not at least in the OS page cache (a killed process loses nothing acknowledged).

Policies and their loss windows (see docs/persistence.md):
* always   — fsync before the replies go out: nothing acknowledged is lost, even on power loss.
* everysec — a background thread fsyncs at most once a second, off the event loop: a power
             loss or kernel crash loses at most the last ~1 s (plus the duration of an fsync
             in progress); a crash of the process alone loses nothing acknowledged.
* no       — the kernel decides when to write back (typically within 30 s on Linux).

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
from typing import Final, Protocol

ALWAYS: Final = "always"
EVERYSEC: Final = "everysec"
NO: Final = "no"


class HeldConnection(Protocol):
    """A client connection whose output can be held back and released later."""

    def release_output(self, data: bytes) -> None: ...


class ReplyGate:
    """Replies waiting for the AOF. `barrier` is true while effects are buffered: replies
    produced then must wait. A connection with held output keeps holding (its replies must
    stay in order) until `release`."""

    __slots__ = ("barrier", "held")

    def __init__(self) -> None:
        self.barrier = False
        self.held: dict[HeldConnection, list[bytes]] = {}

    def must_hold(self, conn: HeldConnection) -> bool:
        return self.barrier or conn in self.held

    def hold(self, conn: HeldConnection, data: bytes) -> None:
        chunks = self.held.get(conn)
        if chunks is None:
            self.held[conn] = [data]
        else:
            chunks.append(data)

    def release(self) -> None:
        held = self.held
        if not held:
            return
        self.held = {}
        for conn, chunks in held.items():
            conn.release_output(chunks[0] if len(chunks) == 1 else b"".join(chunks))


class AofWriter:
    """The open incr file. `append` buffers; `write` empties the buffer into the file;
    `fsync` makes what was written durable. Offsets are effect-log offsets."""

    def __init__(self, path: str, start_offset: int) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.size = os.fstat(self.fd).st_size  # bytes in the file, all whole units
        self.start_offset = start_offset
        self.buf = bytearray()
        self.written_offset = start_offset + self.size
        self.synced_offset = self.written_offset
        # Held by whoever uses the fd outside the event loop (the everysec thread), and by
        # the loop when it closes or switches it.
        self.lock = threading.Lock()

    def append(self, data: bytes) -> None:
        self.buf += data

    def write(self) -> None:
        """Write the whole buffer. On failure the file is cut back to its last whole unit
        (or, when it cannot be cut, the bytes that did reach it leave the buffer so the
        next write continues them) and OSError is raised."""
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
            self.written_offset += written
            self.buf = bytearray()
            return
        try:
            os.ftruncate(self.fd, self.size)
        except OSError:
            self.size += written
            self.written_offset += written
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


class EverysecSyncer:
    """The `everysec` background fsync: a thread that wakes once a second and fsyncs the
    writer's file if anything was written since its last fsync, then reports the result to
    the event loop through `report(offset, error)` (called with call_soon_threadsafe)."""

    def __init__(self, writer: AofWriter, report: Callable[[int, OSError | None], None]) -> None:
        self.writer = writer
        self._report = report
        self._stop = threading.Event()
        self.in_progress = False
        self._thread = threading.Thread(target=self._run, name="rill-aof-fsync", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            writer = self.writer
            target = writer.written_offset
            if target <= writer.synced_offset:
                continue
            error: OSError | None = None
            self.in_progress = True
            try:
                with writer.lock:
                    if writer.fd < 0:
                        continue
                    os.fsync(writer.fd)
            except OSError as exc:
                error = exc
            finally:
                self.in_progress = False
            self._report(target, error)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
