"""The node's persistence service: the AOF's multi-part files and the service's lifecycle.
At start-up it loads the data (node/persistence/loading.py) and opens the AOF; it keeps the
manifest, its base and incr files and the replication identity they record, rewrites the AOF
(BGREWRITEAOF, automatic), turns the AOF on and off, runs the periodic work (serverCron's
persistence part) and makes everything durable at shutdown. The open file's writing and
fsyncing is `AofLog` (node/persistence/aof_log.py), the RDB file's `Snapshots`
(node/persistence/snapshots.py). node/app/ builds one `Persistence` over the node's server;
the command layer reaches it as `ctx.node.persistence`.

Rewrite protocol (multi-part AOF, as Redis 7), each step crash-safe:
1. write and fsync the buffered effects into the current incr file;
2. create incr file n+1 and fsync the directory; durably replace the manifest with one
   listing the old base, incr files 1..n and n+1 (nothing is dropped yet);
3. switch the writer to n+1 (its first unit starts with a SELECT) and fork: the child
   writes the keyspace as it was at the switch into a temp snapshot and fsyncs it;
4. when the child succeeds: rename the temp file to base m+1, fsync the directory, durably
   replace the manifest with base m+1 + incr n+1 (the old files listed as history), then
   delete the history files and write the manifest once more without them.
A crash before step 4's manifest leaves the old base + every incr file; after it, the new
base + incr n+1. Either holds every acknowledged effect.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from node.commands.reply import CommandError
from node.persistence import aof as aofmod
from node.persistence.aof import AofWriter
from node.persistence.aof_log import AofLog
from node.persistence.background import ChildSlot, fork_job
from node.persistence.files import fsync_dir, remove_quietly, replace_durably
from node.persistence.loading import PersistenceError, load_aof, load_rdb
from node.persistence.manifest import (
    TEMP_PREFIX,
    AofFile,
    Manifest,
    write_manifest,
)
from node.persistence.snapshot import SnapshotMeta, write_snapshot
from node.persistence.snapshots import Snapshots

if TYPE_CHECKING:
    import asyncio

    from node.server.server import Server
    from node.server.write_gates import WriteGates

log = logging.getLogger("rill.persistence")

AOF_OFF: Final = "off"
AOF_ON: Final = "on"
AOF_WAIT_REWRITE: Final = "wait_rewrite"  # enabled, the first base is being written

_CRON_SECONDS: Final = 0.1
# After this many failed rewrites in a row, automatic ones back off (Redis aofRewriteLimited).
_REWRITE_FAILURES_BEFORE_BACKOFF: Final = 3
_REWRITE_BACKOFF_MAX: Final = 3600

class Persistence:
    def __init__(self, server: Server, write_gates: WriteGates) -> None:
        self.server = server
        # Its -MISCONF gate (node/server/write_gates.py); only _update_denial sets it.
        self.write_gates = write_gates
        self.config = server.config
        self.gate = server.reply_gate
        self.aof_state = AOF_OFF
        self.aof = AofLog(server.effects, self.gate, self.config, self._update_denial)
        self.manifest: Manifest | None = None
        self.child = ChildSlot()  # the background save or rewrite, one at a time
        self.snapshots = Snapshots(server, self.child, self._meta, self._update_denial)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._cron: asyncio.TimerHandle | None = None
        self._sizes: dict[str, int] = {}  # closed base/incr files of the manifest -> bytes
        # Status, for MISCONF and INFO.
        self.rewrite_scheduled = False
        self.rewrite_ok = True
        self.rewrites = 0
        self.rewrite_failures = 0  # in a row
        self.last_rewrite_failure = 0.0
        self.last_rewrite_seconds = -1
        self.rewrite_base_size = 0
        self.keys_loaded = 0
        self.load_seconds = 0.0
        # The replication id the AOF records for its end (its base's, or the last incr file
        # that records one): when the log's differs, a new incr file records the new one.
        self._recorded_replid = ""
        self.config.on_change(self._on_config_change)

    # -- paths ---------------------------------------------------------------------------

    def _dir(self) -> str:
        return self.config.get("dir")

    def _aof_dir(self) -> str:
        return os.path.join(self._dir(), self.config.get("appenddirname"))

    def _aof_name(self) -> str:
        return self.config.get("appendfilename")


    # -- start-up ------------------------------------------------------------------------

    def load(self) -> None:
        """Load the data set from disk and open the AOF; raises PersistenceError when the
        files cannot be used (the message names the file and the offset)."""
        started = time.monotonic()
        self.aof.loading = True
        # Loading creates objects in bulk and none of them is garbage: collections during
        # it would only cost time (the server freezes them out of the GC's view afterwards).
        collecting = gc.isenabled()
        gc.disable()
        try:
            if self.config.get("appendonly") == "yes":
                loaded = load_aof(self.server, self._aof_dir(), self._aof_name(), self.config.get("aof-load-truncated") == "yes")
                if loaded is not None:
                    self.manifest = loaded.manifest
                    self._sizes.update(loaded.sizes)
                    self.rewrite_base_size = loaded.base_size
                    self._restore_position(loaded.meta, loaded.offset)
                elif os.path.exists(self.snapshots.path()):
                    # An AOF is being turned on for a data set saved as a snapshot: start from it
                    # rather than from nothing (Redis would ignore the snapshot here).
                    self._load_rdb(self.snapshots.path())
                self._open_aof_at_start()
            elif os.path.exists(self.snapshots.path()):
                self._load_rdb(self.snapshots.path())
        finally:
            self.aof.loading = False
            if collecting:
                gc.enable()
        self.snapshots.saved_now()  # the loaded data set is the saved one
        self.server.reset_stats()
        self.keys_loaded = self.server.keyspace.key_count()
        self.load_seconds = time.monotonic() - started
        if self.keys_loaded or self.aof_state != AOF_OFF:
            log.info("DB loaded from disk: %.3f seconds (%d keys, offset=%d)", self.load_seconds, self.keys_loaded, self.server.effects.offset)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.aof.loop = loop
        self.gate.reset(self.server.effects.offset)
        self.aof.start_syncer()
        self._cron = loop.call_later(_CRON_SECONDS, self._tick)

    def _load_rdb(self, path: str) -> None:
        meta = load_rdb(self.server, path)
        self._restore_position(meta, meta.offset)
        self.snapshots.lastsave = meta.created or int(time.time())

    def _restore_position(self, meta: SnapshotMeta | None, offset: int) -> None:
        effects = self.server.effects
        if meta is None:
            effects.move_to(offset)
            return
        self._recorded_replid = meta.replid
        try:
            effects.restore(meta.replid, meta.replid2, meta.second_offset, offset)
        except ValueError as exc:
            raise PersistenceError(f"The replication id recorded on disk is unusable: {exc}") from None

    def _open_aof_at_start(self) -> None:
        aofdir = self._aof_dir()
        name = self._aof_name()
        try:
            os.makedirs(aofdir, exist_ok=True)
            self._remove_temp_files(aofdir)
            manifest = self.manifest
            if manifest is None:
                manifest = Manifest().past_seqs_on_disk(aofdir, name)
                base_name, base_seq = manifest.new_base_name(name)
                temp = os.path.join(aofdir, TEMP_PREFIX + base_name)
                meta = self._meta()
                size = write_snapshot(temp, self.server.keyspace, meta)
                self._recorded_replid = meta.replid
                replace_durably(temp, os.path.join(aofdir, base_name))
                log.info("Creating AOF base file %s on server start", base_name)
                manifest = manifest.after_rewrite(base_name, base_seq, 0)
                self._sizes[base_name] = size
                self.rewrite_base_size = size
            if not manifest.incrs:
                manifest, incr = manifest.with_new_incr(name, self.server.effects.offset)
                AofWriter(os.path.join(aofdir, incr.name), incr.start_offset).close()
                fsync_dir(aofdir)
                write_manifest(aofdir, name, manifest)
                log.info("Creating AOF incr file %s on server start", incr.name)
            current = manifest.incrs[-1]
            # The last incr file was just loaded (or created empty at the log's offset): it
            # ends where the loaded log does (its annotations are taken into account there).
            self.aof.writer = AofWriter(
                os.path.join(aofdir, current.name), current.start_offset, self.server.effects.offset
            )
            self._sizes.pop(current.name, None)
            self.manifest = manifest
        except OSError as exc:
            raise PersistenceError(f"Can't open or create the append-only dir {aofdir} or its files: {exc.strerror}") from None
        try:
            self._drop_history()
        except OSError as exc:  # left for the next rewrite; the AOF itself is usable
            log.warning("Can't remove the AOF history files: %s", exc.strerror or exc)
        self.aof_state = AOF_ON

    def _remove_temp_files(self, dirpath: str) -> None:
        for entry in os.listdir(dirpath):
            if entry.startswith(TEMP_PREFIX):
                remove_quietly(os.path.join(dirpath, entry))

    def _drop_history(self) -> None:
        """Delete the history files the manifest lists, then list them no more."""
        manifest = self.manifest
        if manifest is None or not manifest.history:
            return
        aofdir = self._aof_dir()
        for f in manifest.history:
            remove_quietly(os.path.join(aofdir, f.name))
            self._sizes.pop(f.name, None)
        clean = manifest.without_history()
        write_manifest(aofdir, self._aof_name(), clean)
        self.manifest = clean

    def _meta(self) -> SnapshotMeta:
        effects = self.server.effects
        return SnapshotMeta(effects.replid, effects.replid2, effects.second_offset, effects.offset, int(time.time()))

    # -- the AOF: writing (node/persistence/aof_log.py) -------------------------------------

    @property
    def writer(self) -> AofWriter | None:
        """The open AOF incr file, if any."""
        return self.aof.writer

    def commit(self) -> None:
        self.aof.commit()

    def add_durability_listener(self, listener: Callable[[], None]) -> None:
        """See `AofLog.add_durability_listener`."""
        self.aof.add_durability_listener(listener)

    def _switch_writer(self, writer: AofWriter | None) -> None:
        old = self.aof.switch(writer)
        if old is not None:
            self._sizes[os.path.basename(old.path)] = old.size

    def _update_denial(self) -> None:
        """What the dispatcher answers write commands with while persistence fails."""
        text: str | None = None
        rdb_refusal = self.snapshots.refusal()
        if rdb_refusal is not None:
            text = rdb_refusal
        elif self.aof_state != AOF_OFF and (self.aof.write_failure or self.aof.fsync_failure):
            text = f"MISCONF Errors writing to the AOF file: {self.aof.write_failure or self.aof.fsync_failure}"
        self.write_gates.deny_writes(text)

    # -- the RDB file (node/persistence/snapshots.py) ----------------------------------------

    @property
    def lastsave(self) -> int:
        return self.snapshots.lastsave

    def save(self) -> None:
        self.snapshots.save()

    def bgsave(self, schedule: bool, in_exec: bool) -> str:
        return self.snapshots.bgsave(schedule, in_exec)

    # -- AOF rewrite ---------------------------------------------------------------------

    def bgrewriteaof(self, in_exec: bool) -> str:
        if self.child.running("aof"):
            raise CommandError("ERR Background append only file rewriting already in progress")
        if self.child.running() or in_exec:
            self.rewrite_scheduled = True
            self.rewrite_failures = 0
            return "Background append only file rewriting scheduled"
        if not self._start_rewrite():
            raise CommandError("ERR Can't execute an AOF background rewriting. Please check the server logs for more information.")
        return "Background append only file rewriting started"

    def _start_next_incr(
        self, manifest: Manifest, replid: str = "", replid2: str = "", second_offset: int = -1
    ) -> tuple[Manifest, AofFile]:
        """Writes and fsyncs the open incr file, then continues the AOF in a new one that
        starts at the log's offset (recording a replication identity when `replid` is given);
        the manifest naming it is written when the AOF is on. On OSError the current file
        stays open and no new one is left behind."""
        aofdir = self._aof_dir()
        name = self._aof_name()
        self.aof.write_and_sync()
        manifest, incr = manifest.with_new_incr(name, self.server.effects.offset, replid, replid2, second_offset)
        writer = AofWriter(os.path.join(aofdir, incr.name), incr.start_offset)
        try:
            fsync_dir(aofdir)
            if self.aof_state == AOF_ON:
                write_manifest(aofdir, name, manifest)
        except OSError:
            writer.close()
            remove_quietly(writer.path)
            raise
        self._switch_writer(writer)
        # The new file is replayed on its own: its first unit must say its database.
        self.server.effects.force_select()
        return manifest, incr

    def _start_rewrite(self) -> bool:
        aofdir = self._aof_dir()
        name = self._aof_name()
        try:
            os.makedirs(aofdir, exist_ok=True)
            manifest = (self.manifest or Manifest()).past_seqs_on_disk(aofdir, name)
            covered = manifest.incr_seq
            if self.aof_state != AOF_OFF:
                manifest, incr = self._start_next_incr(manifest)
                covered = incr.seq - 1
            self.manifest = manifest
            base_name, base_seq = manifest.new_base_name(name)
            temp = os.path.join(aofdir, f"{TEMP_PREFIX}rewriteaof-bg-{os.getpid()}.rill")
            keyspace = self.server.keyspace
            meta = self._meta()
            job = fork_job("aof", temp, lambda: write_snapshot(temp, keyspace, meta))
        except OSError as exc:
            log.warning("Can't rewrite append only file in background: %s", exc.strerror or exc)
            self._rewrite_finished(False, time.monotonic())
            return False
        job.on_done = functools.partial(self._rewrite_done, temp, base_name, base_seq, covered, meta.replid, job.started)
        self.child.job = job
        self.rewrite_scheduled = False
        log.info("Background append only file rewriting started by pid %d", job.pid)
        return True

    def _rewrite_done(
        self, temp: str, base_name: str, base_seq: int, covered: int, replid: str, started: float, ok: bool, message: str
    ) -> None:
        aofdir = self._aof_dir()
        if ok:
            assert self.manifest is not None
            base_path = os.path.join(aofdir, base_name)
            try:
                replace_durably(temp, base_path)
                manifest = self.manifest.after_rewrite(base_name, base_seq, covered)
                write_manifest(aofdir, self._aof_name(), manifest)
            except OSError as exc:
                # The base stays: once the manifest's rename happened (its directory fsync
                # can still fail), the manifest on disk names it. An orphan base is harmless
                # (its name is never reused) and the next rewrite writes the manifest again.
                self.rewrite_scheduled = True
                ok, message = False, f"installing the new base: {exc.strerror or exc}"
        if not ok:
            remove_quietly(temp)
            log.warning("Background AOF rewrite terminated with error: %s", message)
            self._rewrite_finished(False, started)
            if self.aof_state == AOF_WAIT_REWRITE:
                self.rewrite_scheduled = True  # appendonly stays requested: try again
            return
        self.manifest = manifest
        # An id recorded while the child ran is in an incr file the new base does not cover.
        recorded = manifest.recorded_identity()
        self._recorded_replid = replid if recorded is None else recorded.replid
        self._sizes[base_name] = os.path.getsize(base_path)
        if self.aof_state == AOF_WAIT_REWRITE:
            self.aof_state = AOF_ON
            self._update_denial()
        try:
            self._drop_history()
        except OSError as exc:
            log.warning("Can't remove the AOF history files: %s", exc.strerror or exc)
        self.rewrite_base_size = self.current_size()
        self.rewrites += 1
        self._rewrite_finished(True, started)
        # A first base makes the AOF count for WAITAOF; any new base ends a replica's "no
        # fsynced offset" while the AOF did not follow its history.
        self.aof.durability_changed()
        log.info("Background AOF rewrite finished successfully (base %s, %d bytes)", base_name, self._sizes[base_name])

    def _rewrite_finished(self, ok: bool, started: float) -> None:
        self.rewrite_ok = ok
        self.last_rewrite_seconds = int(time.monotonic() - started)
        if ok:
            self.rewrite_failures = 0
        else:
            self.rewrite_failures += 1
            self.last_rewrite_failure = time.monotonic()

    def current_size(self) -> int:
        """aof_current_size: the base and incr files of the manifest."""
        manifest = self.manifest
        if manifest is None:
            return 0
        total = sum(self._sizes.get(f.name, 0) for f in manifest.files())
        if self.writer is not None:
            total += self.writer.size
        return total

    def _rewrite_limited(self) -> bool:
        n = self.rewrite_failures - _REWRITE_FAILURES_BEFORE_BACKOFF
        if n < 0:
            return False
        delay = min(60 << n, _REWRITE_BACKOFF_MAX)
        return time.monotonic() - self.last_rewrite_failure < delay

    # -- periodic work -------------------------------------------------------------------

    def _tick(self) -> None:
        """serverCron's persistence part, every 100 ms."""
        assert self.loop is not None
        self._cron = self.loop.call_later(_CRON_SECONDS, self._tick)
        try:
            self._tick_once()
        except Exception:  # a bug here must not stop the cron (and with it retries)
            log.exception("persistence cron failed")

    def _tick_once(self) -> None:
        self.child.poll()
        if self.aof.write_failure is not None or (self.aof.fsync_failure is not None and self.aof.policy == aofmod.ALWAYS):
            self.aof.commit()  # retry: a write denied by MISCONF resumes once this succeeds
        if self.child.running():
            return
        self._follow_log_identity()
        if self.rewrite_scheduled and not self._rewrite_limited():
            self._start_rewrite()
        elif self.snapshots.bgsave_scheduled:
            self.snapshots.bgsave_scheduled = False
            self.snapshots.start_bgsave()
        elif self.snapshots.save_point_reached():
            self.snapshots.start_bgsave()
        elif self._auto_rewrite_due():
            growth = self._growth()
            log.info("Starting automatic rewriting of AOF on %d%% growth", growth)
            self._start_rewrite()

    def log_identity_changed(self) -> None:
        """The effect log took a new replication id or offset (a promotion, a restarted
        primary's new history, a replica adopting its primary's id, a full sync): recorded at
        once, so no crash after it comes back with the old id. The cron checks as well."""
        self._follow_log_identity()

    def _follow_log_identity(self) -> None:
        """Keeps what a restart loads in step with the effect log's identity: a new
        replication id (a promotion, a restart, a replica adopting its primary's) is recorded
        by starting a new incr file whose manifest line names it. Without this a restart
        would come back with the old id. The open AOF ends where the log does (it is given
        every unit; a full sync replaces the data set with the AOF off, `replacing_data_set`):
        anything else is a bug (PositionMismatch), which no rewrite would explain."""
        writer = self.writer
        if self.aof_state != AOF_ON or writer is None or self.rewrite_scheduled:
            return
        effects = self.server.effects
        effects.check_follower("the AOF", writer.end_offset)
        if effects.replid != self._recorded_replid:
            self._record_identity()

    def _record_identity(self) -> None:
        """Starts a new incr file at the log's offset, its manifest line recording the log's
        replid, replid2 and second offset (the files before keep their bytes: only who the
        position belongs to changed). Should the cron be the one to record it, units logged
        under the new id meanwhile stay in the previous file, which is harmless: a restart
        takes the identity of the end."""
        effects = self.server.effects
        try:
            manifest = (self.manifest or Manifest()).past_seqs_on_disk(self._aof_dir(), self._aof_name())
            manifest, incr = self._start_next_incr(manifest, effects.replid, effects.replid2, effects.second_offset)
        except OSError as exc:
            log.warning("Can't start a new AOF file for replication id %s: %s; rewriting the AOF instead",
                        effects.replid, exc.strerror or exc)
            self.rewrite_scheduled = True
            return
        self.manifest = manifest
        self._recorded_replid = effects.replid
        log.info("Replication id changed to %s: recorded by the new AOF incr file %s", effects.replid, incr.name)

    def _growth(self) -> int:
        base = self.rewrite_base_size or 1
        return (self.current_size() - base) * 100 // base

    def _auto_rewrite_due(self) -> bool:
        if self.aof_state != AOF_ON:
            return False
        percentage = self.config.get_int("auto-aof-rewrite-percentage")
        if not percentage or self.current_size() <= self.config.get_int("auto-aof-rewrite-min-size"):
            return False
        return self._growth() >= percentage and not self._rewrite_limited()

    # -- configuration -------------------------------------------------------------------

    def _on_config_change(self, name: str, value: str) -> None:
        if name == "appendonly":
            if value == "yes":
                self._enable_aof()
            else:
                self._disable_aof()
        elif name == "appendfsync":
            self.aof.stop_syncer()
            self.aof.start_syncer()
            if self.writer is not None:
                self.aof.refresh_failure()
                self.commit()  # releases or re-requests what waited under the old policy

    @contextmanager
    def replacing_data_set(self) -> Iterator[None]:
        """Wraps replacing the whole data set (a replica loading its primary's snapshot). As
        Redis (stopAppendOnly / restartAOFAfterSYNC): the AOF of the old data set is closed
        first, and a new one starts from a base of the new data once it is in place; until
        that base is written the old AOF stays what a restart loads. The log may then end
        at a lower offset than before (a longer, divergent history was replaced): what the
        reply gate counts as required and durable restarts there."""
        aof = self.config.get("appendonly") == "yes"
        if aof:
            self._disable_aof()
        yield
        self.gate.reset(self.server.effects.offset)
        if aof:
            self._enable_aof()

    def _enable_aof(self) -> None:
        """CONFIG SET appendonly yes: a base of the current data first (in the background);
        the AOF counts as on once it is written (Redis's AOF_WAIT_REWRITE)."""
        if self.aof_state != AOF_OFF:
            return
        self.aof_state = AOF_WAIT_REWRITE
        if self.child.running():
            self.rewrite_scheduled = True
            log.info("AOF was enabled but there is already another background operation. "
                     "An AOF background was scheduled to start when possible.")
        elif not self._start_rewrite():
            self.aof_state = AOF_OFF
            self._switch_writer(None)
            log.warning("Redis needs to enable the AOF but can't trigger a background AOF rewrite operation.")

    def _disable_aof(self) -> None:
        if self.aof_state == AOF_OFF:
            return
        if self.child.running("aof"):
            self.child.abandon()
        try:
            self.aof.write_and_sync()
        except OSError as exc:
            log.warning("Error flushing the AOF before turning it off: %s", exc.strerror or exc)
        self._switch_writer(None)
        self.aof_state = AOF_OFF
        self.rewrite_scheduled = False
        self.aof.clear_failures()
        self.gate.release(self.gate.required)

    # -- shutdown ------------------------------------------------------------------------

    def shutdown(self, flags: frozenset[str]) -> None:
        """Stop background work, make the AOF durable, save a final snapshot when `save`
        points are configured or SHUTDOWN SAVE asked for it (not with NOSAVE), and release
        the replies that waited for the AOF."""
        if self._cron is not None:
            self._cron.cancel()
            self._cron = None
        # As Redis: a background save or rewrite in progress is abandoned (the AOF and the
        # final snapshot below are complete without it).
        self.child.abandon()
        if self.writer is not None:
            try:
                self.aof.write_and_sync()
                log.info("Calling fsync() on the AOF file.")
            except OSError as exc:
                log.warning("Error writing the AOF at shutdown: %s (acknowledged writes are on disk; "
                            "the unacknowledged tail is lost)", exc.strerror or exc)
            self._switch_writer(None)
        if ("save" in flags or self.snapshots.save_points) and "nosave" not in flags:
            log.info("Saving the final RDB snapshot before exiting.")
            self.snapshots.save_now()

    # -- INFO ------------------------------------------------------------------------------

    def aof_buffer_length(self) -> int:
        """Bytes of effects buffered for the AOF, not written yet."""
        writer = self.writer
        return len(writer.buf) if writer is not None else 0

    def aof_size_fields(self) -> list[tuple[str, Any]]:
        """The INFO persistence fields Redis shows only while the AOF is on."""
        if self.aof_state == AOF_OFF:
            return []
        return [
            ("aof_current_size", self.current_size()),
            ("aof_base_size", self.rewrite_base_size),
            ("aof_pending_rewrite", int(self.rewrite_scheduled)),
            ("aof_buffer_length", self.aof_buffer_length()),
            ("aof_pending_bio_fsync", int(self.aof.syncer is not None and self.aof.syncer.in_progress)),
            ("aof_delayed_fsync", 0),
        ]
