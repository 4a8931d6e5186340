"""The open AOF file, fed by the effect log: group commit under the fsync policy, write and
fsync errors, and what has become durable (node/persistence/aof.py has the writer, the fsync
thread and the policies' loss windows).

Every committed unit of the effect log is appended to the open incr file's buffer while one
is open (the effect log encodes nothing for the AOF otherwise), replication-only units
(PUBLISH) as an offset annotation only (node/persistence/aof.py); the first unit of an
event-loop turn schedules one `commit`, which writes them all. Replies wait in the server's
reply gate until their effects are written (`everysec`, `no`) or fsynced (`always`). A
failed write or fsync is retried (the service's cron calls `commit`) and refuses writes
meanwhile (MISCONF, `failure_changed`); durability listeners learn of every change of what is
on disk (WAITAOF).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from node.config import Config
from node.log.effect_log import EffectLog
from node.persistence.aof import ALWAYS, NO, AofWriter, FsyncThread
from node.server.reply_gate import ReplyGate

log = logging.getLogger("rill.persistence")


class AofLog:
    """The AOF as the effect log's listener (`Persistence.aof`)."""

    def __init__(self, effects: EffectLog, gate: ReplyGate, config: Config, failure_changed: Callable[[], None]) -> None:
        self.effects = effects
        self.gate = gate
        self.config = config
        # Called when a write or fsync starts or stops failing (the service's MISCONF text).
        self._failure_changed = failure_changed
        self._writer: AofWriter | None = None
        self._effects_listener = self._on_effects  # kept: the effect log also removes it
        self.syncer: FsyncThread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loading = False  # units logged while the AOF itself is replayed are not appended
        self._commit_scheduled = False
        self.write_failure: str | None = None  # strerror of a failed AOF write
        self.fsync_failure: str | None = None  # strerror of a failed AOF fsync
        self._durability_listeners: list[Callable[[], None]] = []

    @property
    def writer(self) -> AofWriter | None:
        """The open AOF incr file, if any. The effect log encodes its units for the AOF only
        while one is open."""
        return self._writer

    @writer.setter
    def writer(self, writer: AofWriter | None) -> None:
        self._writer = writer
        if writer is not None:
            self.effects.add_listener(self._effects_listener, durable=True)
        else:
            self.effects.remove_listener(self._effects_listener)

    @property
    def policy(self) -> str:
        return self.config.get("appendfsync")

    def clear_failures(self) -> None:
        """The AOF was turned off: nothing fails any more."""
        self.write_failure = self.fsync_failure = None
        self.refresh_failure()

    def _on_effects(self, data: bytes, offset: int) -> None:
        writer = self.writer
        if writer is None or self.loading:
            return
        writer.append(data, offset)
        if data:
            # Replies wait for what is kept; a replication-only unit (empty here) holds none.
            self.gate.required = offset
        if not self._commit_scheduled and self.loop is not None:
            self._commit_scheduled = True
            self.loop.call_soon(self.commit)

    def commit(self) -> None:
        """Write the buffered effects, once per event-loop iteration at most. Under
        `everysec`/`no` the replies that waited for them go out now; under `always` the fsync
        thread is asked for an fsync and they go out when it reports (the loop meanwhile runs
        the next batch, whose fsync follows: a pipelined group commit)."""
        self._commit_scheduled = False
        writer = self.writer
        if writer is None:
            self.gate.stalled = False
            self.gate.release(self.gate.required)
            return
        try:
            writer.write()
        except OSError as exc:
            self._failed("write", exc)
            return
        if self.write_failure is not None:
            log.warning("AOF write error looks solved, Redis can write again.")
            self.write_failure = None
            self.refresh_failure()
        if self.syncer is not None and self.syncer.interval is None:
            self.syncer.request()
        else:
            self.gate.release(writer.written_offset)

    def _failed(self, what: str, exc: OSError) -> None:
        reason = exc.strerror or str(exc)
        if what == "fsync" and self.policy == ALWAYS:
            # After a failed fsync the kernel may have dropped the dirty pages, so a retry
            # that succeeds proves nothing about the writes held for it: like Redis (aof.c,
            # "Can't persist append-only file"), exit rather than acknowledge them.
            log.critical("Can't persist append-only file %s (fsync: %s). Exiting...",
                         self.writer.path if self.writer else "?", reason)
            logging.shutdown()
            os._exit(1)
        first = (self.write_failure if what == "write" else self.fsync_failure) is None
        if what == "write":
            self.write_failure = reason
        else:
            self.fsync_failure = reason
        if first:
            log.warning("Error %s the AOF file %s: %s; writes are refused (MISCONF) until it succeeds again",
                        "writing to" if what == "write" else "fsyncing", self.writer.path if self.writer else "?", reason)
        self.refresh_failure()

    def refresh_failure(self) -> None:
        """After a change of write/fsync status: replies held for the failed part wait for
        the retry while other connections' replies flow (a stalled gate), and writes are
        refused while anything fails."""
        self.gate.stalled = self.write_failure is not None or (
            self.fsync_failure is not None and self.policy == ALWAYS
        )
        self._failure_changed()

    def start_syncer(self) -> None:
        """The fsync thread the policy needs: on request (always), every second (everysec),
        none (no)."""
        writer = self.writer
        loop = self.loop
        policy = self.policy
        if writer is None or loop is None or policy == NO:
            return

        def report(offset: int, error: OSError | None) -> None:
            loop.call_soon_threadsafe(self._fsync_reported, writer, offset, error)

        self.syncer = FsyncThread(writer, report, None if policy == ALWAYS else 1.0)

    def stop_syncer(self) -> None:
        if self.syncer is not None:
            self.syncer.stop()
            self.syncer = None

    def _fsync_reported(self, writer: AofWriter, offset: int, error: OSError | None) -> None:
        if writer is not self.writer:
            return
        if error is not None:
            self._failed("fsync", error)
            return
        writer.synced_offset = max(writer.synced_offset, offset)
        if self.fsync_failure is not None:
            log.warning("AOF fsync error looks solved, Redis can write again.")
            self.fsync_failure = None
            self.refresh_failure()
        self.gate.release(writer.synced_offset)
        self.durability_changed()

    def write_and_sync(self) -> None:
        """Everything buffered, written and fsynced now, on the loop (a file switch, a
        change of policy, shutdown)."""
        writer = self.writer
        if writer is not None:
            writer.write()
            writer.fsync()
            self.gate.release(writer.synced_offset)
            self.durability_changed()

    def switch(self, writer: AofWriter | None) -> AofWriter | None:
        """Continues in `writer` (None: the AOF is closed); returns the previous file, closed."""
        self.stop_syncer()
        old = self.writer
        self.writer = writer
        if old is not None:
            old.close()
        if writer is not None:
            self.start_syncer()
        self.durability_changed()
        return old

    # -- durability, for WAITAOF ------------------------------------------------------------

    def add_durability_listener(self, listener: Callable[[], None]) -> None:
        """`listener()` is called whenever the AOF's durable state may have changed: an fsync
        reported, everything written and fsynced at once, a rewrite installed (the AOF counts
        from then on), the AOF turned off."""
        self._durability_listeners.append(listener)

    def durability_changed(self) -> None:
        for listener in self._durability_listeners:
            listener()
