"""The node's persistence service: loads the data at start-up, keeps the AOF of the effect
log (group commit, fsync policy, write errors), takes snapshots (SAVE, BGSAVE, `save`
points), rewrites the AOF (BGREWRITEAOF, automatic), tells WAITAOF when the AOF got durable
further and reports INFO persistence. node/app/ builds one `Persistence` over the node's server and calls it at the
node's edges (start-up, shutdown); the command layer reaches it as `ctx.node.persistence`.

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

from node.commands.context import Session
from node.commands.reply import CommandError, ReplyError
from node.log.applier import LogApplier
from node.persistence import aof as aofmod
from node.persistence.aof import AofWriter, FsyncThread
from node.persistence.aof_reader import ReplayRefused, read_aof
from node.persistence.background import ChildJob, fork_job, kill_job, poll_job
from node.persistence.files import fsync_dir, remove_quietly, replace_durably
from node.persistence.manifest import (
    TEMP_PREFIX,
    AofFile,
    Manifest,
    ManifestError,
    load_manifest,
    manifest_name,
    write_manifest,
)
from node.persistence.snapshot import SnapshotError, SnapshotMeta, load_snapshot, write_snapshot

if TYPE_CHECKING:
    import asyncio

    from node.server.server import Server

log = logging.getLogger("rill.persistence")

AOF_OFF: Final = "off"
AOF_ON: Final = "on"
AOF_WAIT_REWRITE: Final = "wait_rewrite"  # enabled, the first base is being written

_CRON_SECONDS: Final = 0.1
# Redis CONFIG_BGSAVE_RETRY_DELAY: a failed periodic save is retried after this long.
_BGSAVE_RETRY_DELAY: Final = 5
# After this many failed rewrites in a row, automatic ones back off (Redis aofRewriteLimited).
_REWRITE_FAILURES_BEFORE_BACKOFF: Final = 3
_REWRITE_BACKOFF_MAX: Final = 3600

# shared.bgsaveerr (server.c), without the leading '-'.
_BGSAVE_ERR: Final = (
    "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. "
    "Commands that may modify the data set are disabled, because this instance is configured to report "
    "errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check "
    "the Redis logs for details about the RDB error."
)


class PersistenceError(Exception):
    """The node cannot start (or continue) with the data on disk: the text says which file,
    where, and what to do."""


class Persistence:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.config = server.config
        self.gate = server.reply_gate
        self.aof_state = AOF_OFF
        self._writer: AofWriter | None = None
        self._effects_listener = self._on_effects  # kept: the effect log also removes it
        self.syncer: FsyncThread | None = None
        self.manifest: Manifest | None = None
        self.child: ChildJob | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._cron: asyncio.TimerHandle | None = None
        self._commit_scheduled = False
        self._loading = False
        # Called whenever what is durable may have changed (`_durability_changed`).
        self._durability_listeners: list[Callable[[], None]] = []
        self._sizes: dict[str, int] = {}  # closed base/incr files of the manifest -> bytes
        self._save_points = _parse_save(self.config.get("save"))
        # Status, for MISCONF and INFO.
        self.write_failure: str | None = None  # strerror of a failed AOF write
        self.fsync_failure: str | None = None  # strerror of a failed AOF fsync
        self.bgsave_ok = True
        self.last_bgsave_try = 0.0
        self.last_bgsave_seconds = -1
        self.rdb_saves = 0
        self.bgsave_scheduled = False
        self.rewrite_scheduled = False
        self.rewrite_ok = True
        self.rewrites = 0
        self.rewrite_failures = 0  # in a row
        self.last_rewrite_failure = 0.0
        self.last_rewrite_seconds = -1
        self.rewrite_base_size = 0
        self.keys_loaded = 0
        self.load_seconds = 0.0
        self.lastsave = int(time.time())  # unix time of the last successful save (LASTSAVE)
        # The replication id the AOF records for its end (its base's, or the last incr file
        # that records one): when the log's differs, a new incr file records the new one.
        self._recorded_replid = ""
        self.config.on_change(self._on_config_change)

    @property
    def writer(self) -> AofWriter | None:
        """The open AOF incr file, if any. The effect log encodes its units for the AOF only
        while one is open."""
        return self._writer

    @writer.setter
    def writer(self, writer: AofWriter | None) -> None:
        self._writer = writer
        if writer is not None:
            self.server.effects.add_listener(self._effects_listener)
        else:
            self.server.effects.remove_listener(self._effects_listener)

    # -- paths ---------------------------------------------------------------------------

    def _dir(self) -> str:
        return self.config.get("dir")

    def _aof_dir(self) -> str:
        return os.path.join(self._dir(), self.config.get("appenddirname"))

    def _aof_name(self) -> str:
        return self.config.get("appendfilename")

    def _rdb_path(self) -> str:
        return os.path.join(self._dir(), self.config.get("dbfilename"))

    @property
    def policy(self) -> str:
        return self.config.get("appendfsync")

    # -- start-up ------------------------------------------------------------------------

    def load(self) -> None:
        """Load the data set from disk and open the AOF; raises PersistenceError when the
        files cannot be used (the message names the file and the offset)."""
        started = time.monotonic()
        self._loading = True
        # Loading creates objects in bulk and none of them is garbage: collections during
        # it would only cost time (the server freezes them out of the GC's view afterwards).
        collecting = gc.isenabled()
        gc.disable()
        try:
            if self.config.get("appendonly") == "yes":
                loaded = self._load_aof()
                if not loaded and os.path.exists(self._rdb_path()):
                    # An AOF is being turned on for a data set saved as a snapshot: start from it
                    # rather than from nothing (Redis would ignore the snapshot here).
                    self._load_rdb(self._rdb_path())
                self._open_aof_at_start()
            elif os.path.exists(self._rdb_path()):
                self._load_rdb(self._rdb_path())
        finally:
            self._loading = False
            if collecting:
                gc.enable()
        self.server.dirty = 0
        self.server.reset_stats()
        self.keys_loaded = self.server.keyspace.key_count()
        self.load_seconds = time.monotonic() - started
        if self.keys_loaded or self.aof_state != AOF_OFF:
            log.info("DB loaded from disk: %.3f seconds (%d keys, offset=%d)", self.load_seconds, self.keys_loaded, self.server.effects.offset)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.gate.reset(self.server.effects.offset)
        self._start_syncer()
        self._cron = loop.call_later(_CRON_SECONDS, self._tick)

    def _load_rdb(self, path: str) -> None:
        started = time.monotonic()
        try:
            loaded = load_snapshot(path, self.server.keyspace.dbs)
        except SnapshotError as exc:
            raise PersistenceError(f"{exc}. The snapshot is damaged: restore a backup or move it away to start empty.") from None
        except OSError as exc:
            raise PersistenceError(f"Can't read the snapshot file {path}: {exc.strerror}") from None
        self._restore_position(loaded.meta, loaded.meta.offset)
        self.lastsave = loaded.meta.created or int(time.time())
        log.info("Snapshot %s loaded: %d keys in %.3f seconds", os.path.basename(path), loaded.keys, time.monotonic() - started)

    def _load_aof(self) -> bool:
        """Load base + incr files named by the manifest; False when there is no AOF yet."""
        aofdir = self._aof_dir()
        mpath = os.path.join(aofdir, manifest_name(self._aof_name()))
        if not os.path.exists(mpath):
            return False
        try:
            manifest = load_manifest(mpath)
        except ManifestError as exc:
            raise PersistenceError(f"*** FATAL AOF MANIFEST FILE ERROR *** {exc}") from None
        except OSError as exc:
            raise PersistenceError(f"Fatal error: can't open the AOF manifest file {mpath} for reading: {exc.strerror}") from None
        for f in manifest.files():
            if not os.path.exists(os.path.join(aofdir, f.name)):
                raise PersistenceError(f"The AOF file {f.name} named by the manifest {os.path.basename(mpath)} doesn't exist")
        meta: SnapshotMeta | None = None
        if manifest.base is not None:
            started = time.monotonic()
            path = os.path.join(aofdir, manifest.base.name)
            try:
                loaded = load_snapshot(path, self.server.keyspace.dbs)
            except SnapshotError as exc:
                raise PersistenceError(f"{exc}. Restore a backup of the AOF directory.") from None
            except OSError as exc:
                raise PersistenceError(f"Can't read the AOF base file {path}: {exc.strerror}") from None
            meta = loaded.meta
            self._sizes[manifest.base.name] = loaded.size
            self.rewrite_base_size = loaded.size
            log.info("DB loaded from base file %s: %.3f seconds", manifest.base.name, time.monotonic() - started)
        offset = meta.offset if meta is not None else (manifest.incrs[0].start_offset if manifest.incrs else 0)
        for i, incr in enumerate(manifest.incrs):
            if incr.start_offset != offset:
                raise PersistenceError(
                    f"The AOF file {incr.name} starts at offset {incr.start_offset} but the files before it end at "
                    f"{offset}: part of the AOF is missing. Restore a backup of the AOF directory."
                )
            size = self._replay_incr(os.path.join(aofdir, incr.name), last=i == len(manifest.incrs) - 1)
            self._sizes[incr.name] = size
            offset += size
        self.manifest = manifest
        recorded = manifest.recorded_identity()
        if recorded is not None:
            meta = SnapshotMeta(
                recorded.replid, recorded.replid2, recorded.second_offset, offset, meta.created if meta else 0
            )
        self._restore_position(meta, offset)
        return True

    def _replay_incr(self, path: str, last: bool) -> int:
        """Replay one incr file; returns its usable size (after cutting a truncated tail)."""
        name = os.path.basename(path)
        started = time.monotonic()
        assert self.server.node is not None
        session = Session(self.server.node, 0)
        session.authenticated = True
        session.flags.add("replay")
        errors = 0

        def failed(argv: list[bytes], reply: Any) -> None:
            # As Redis: an unknown command makes the file unusable; any other error is
            # reported and the load goes on.
            nonlocal errors
            if type(reply) is not ReplyError:
                return
            if reply.message.startswith("ERR unknown command"):
                raise ReplayRefused(f"Unknown command '{argv[0].decode('utf-8', 'replace')}'")
            errors += 1
            if errors <= 5:
                log.warning("AOF %s: %s replayed with an error: %s", name, argv[0].decode("utf-8", "replace"), reply.message)

        applier = LogApplier(self.server, session, failed)
        try:
            result = read_aof(path, applier.apply_command, applier.apply_block)
        except OSError as exc:
            raise PersistenceError(f"Unrecoverable error reading the append only file {name}: {exc.strerror}") from None
        applier.finish()
        fix = f"make a backup of your AOF file, then use `rill check-aof --fix {manifest_name(self._aof_name())}`"
        if result.status == "corrupt":
            raise PersistenceError(
                f"Bad file format reading the append only file {name} at offset {result.error_offset} "
                f"({result.error}): {fix}"
            )
        size = result.size
        if result.status == "truncated":
            if result.open_multi:
                log.warning("Revert incomplete MULTI/EXEC transaction in AOF file %s", name)
            if not last or self.config.get("aof-load-truncated") != "yes":
                raise PersistenceError(
                    f"Unexpected end of file reading the append only file {name} at offset {result.valid_up_to}"
                    f"{'' if last else ' (it is not the last file)'}. You can: 1) {fix}. 2) Alternatively you can set "
                    "the 'aof-load-truncated' configuration option to yes and restart the server."
                )
            log.warning("!!! Warning: short read while loading the AOF file %s!!!", name)
            log.warning("!!! Truncating the AOF %s at offset %d (%d bytes cut) !!!", name, result.valid_up_to, result.size - result.valid_up_to)
            try:
                os.truncate(path, result.valid_up_to)
            except OSError as exc:
                raise PersistenceError(f"Error truncating the AOF file {name}: {exc.strerror}") from None
            log.warning("AOF %s loaded anyway because aof-load-truncated is enabled", name)
            size = result.valid_up_to
        if errors:
            log.warning("AOF %s: %d command(s) replayed with an error", name, errors)
        log.info("DB loaded from incr file %s: %.3f seconds (%d commands)", name, time.monotonic() - started, result.commands)
        return size

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
                size = write_snapshot(temp, self.server.keyspace.dbs, meta)
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
            self.writer = AofWriter(os.path.join(aofdir, current.name), current.start_offset)
            self._sizes.pop(current.name, None)
            self.manifest = manifest
        except OSError as exc:
            raise PersistenceError(f"Can't open or create the append-only dir {aofdir} or its files: {exc.strerror}") from None
        try:
            self._drop_history()
        except OSError as exc:  # left for the next rewrite; the AOF itself is usable
            log.warning("Can't remove the AOF history files: %s", exc.strerror or exc)
        if self.writer.written_offset != self.server.effects.offset:
            raise PersistenceError(
                f"The AOF file {current.name} ends at offset {self.writer.written_offset}, "
                f"the loaded data at {self.server.effects.offset}"
            )
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

    # -- the AOF: group commit -----------------------------------------------------------

    def _on_effects(self, data: bytes, offset: int) -> None:
        writer = self.writer
        if writer is None or self._loading:
            return
        writer.append(data)
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
            self._aof_failed("write", exc)
            return
        if self.write_failure is not None:
            log.warning("AOF write error looks solved, Redis can write again.")
            self.write_failure = None
            self._refresh_failure()
        if self.syncer is not None and self.syncer.interval is None:
            self.syncer.request()
        else:
            self.gate.release(writer.written_offset)

    def _aof_failed(self, what: str, exc: OSError) -> None:
        reason = exc.strerror or str(exc)
        if what == "fsync" and self.policy == aofmod.ALWAYS:
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
        self._refresh_failure()

    def _refresh_failure(self) -> None:
        """After a change of write/fsync status: replies held for the failed part wait for
        the retry while other connections' replies flow (a stalled gate), and writes are
        refused while anything fails."""
        self.gate.stalled = self.write_failure is not None or (
            self.fsync_failure is not None and self.policy == aofmod.ALWAYS
        )
        self._update_denial()

    def _update_denial(self) -> None:
        """What the dispatcher answers write commands with while persistence fails."""
        text: str | None = None
        if not self.bgsave_ok and self._save_points:
            text = _BGSAVE_ERR
        elif self.aof_state != AOF_OFF and (self.write_failure or self.fsync_failure):
            text = f"MISCONF Errors writing to the AOF file: {self.write_failure or self.fsync_failure}"
        self.server.dispatcher.write_denial = text

    def _start_syncer(self) -> None:
        """The fsync thread the policy needs: on request (always), every second (everysec),
        none (no)."""
        writer = self.writer
        loop = self.loop
        policy = self.policy
        if writer is None or loop is None or policy == aofmod.NO:
            return

        def report(offset: int, error: OSError | None) -> None:
            loop.call_soon_threadsafe(self._fsync_reported, writer, offset, error)

        self.syncer = FsyncThread(writer, report, None if policy == aofmod.ALWAYS else 1.0)

    def _stop_syncer(self) -> None:
        if self.syncer is not None:
            self.syncer.stop()
            self.syncer = None

    def _fsync_reported(self, writer: AofWriter, offset: int, error: OSError | None) -> None:
        if writer is not self.writer:
            return
        if error is not None:
            self._aof_failed("fsync", error)
            return
        writer.synced_offset = max(writer.synced_offset, offset)
        if self.fsync_failure is not None:
            log.warning("AOF fsync error looks solved, Redis can write again.")
            self.fsync_failure = None
            self._refresh_failure()
        self.gate.release(writer.synced_offset)
        self._durability_changed()

    def _write_and_sync(self) -> None:
        """Everything buffered, written and fsynced now, on the loop (a file switch, a
        change of policy, shutdown)."""
        writer = self.writer
        if writer is not None:
            writer.write()
            writer.fsync()
            self.gate.release(writer.synced_offset)
            self._durability_changed()

    def _switch_writer(self, writer: AofWriter | None) -> None:
        self._stop_syncer()
        old = self.writer
        self.writer = writer
        if old is not None:
            self._sizes[os.path.basename(old.path)] = old.size
            old.close()
        if writer is not None:
            self._start_syncer()
        self._durability_changed()

    # -- durability, for WAITAOF -------------------------------------------------------------

    def add_durability_listener(self, listener: Callable[[], None]) -> None:
        """`listener()` is called whenever the AOF's durable state may have changed: an fsync
        reported, everything written and fsynced at once, a rewrite installed (the AOF counts
        from then on), the AOF turned off."""
        self._durability_listeners.append(listener)

    def _durability_changed(self) -> None:
        for listener in self._durability_listeners:
            listener()

    # -- snapshots -------------------------------------------------------------------------

    def save(self) -> None:
        """SAVE: a snapshot written on the event loop (clients wait, as in Redis)."""
        if self.child is not None and self.child.kind == "rdb":
            raise CommandError("ERR Background save already in progress")
        self.rdb_saves += 1
        if not self._save_now():
            raise CommandError("ERR")

    def _save_now(self) -> bool:
        path = self._rdb_path()
        temp = os.path.join(self._dir(), f"temp-{os.getpid()}.rdb")
        try:
            write_snapshot(temp, self.server.keyspace.dbs, self._meta())
            replace_durably(temp, path)
        except OSError as exc:
            remove_quietly(temp)
            log.warning("Write error saving DB on disk: %s", exc.strerror or exc)
            return False
        self.server.dirty = 0
        self.lastsave = int(time.time())
        self.bgsave_ok = True
        self._update_denial()
        log.info("DB saved on disk")
        return True

    def bgsave(self, schedule: bool, in_exec: bool) -> str:
        if self.child is not None and self.child.kind == "rdb":
            raise CommandError("ERR Background save already in progress")
        if self.child is not None or in_exec:
            if schedule or in_exec:
                self.bgsave_scheduled = True
                return "Background saving scheduled"
            raise CommandError(
                "ERR Another child process is active (AOF?): can't BGSAVE right now. "
                "Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible."
            )
        if not self._start_bgsave():
            raise CommandError("ERR")
        return "Background saving started"

    def _start_bgsave(self) -> bool:
        self.last_bgsave_try = time.time()
        self.rdb_saves += 1
        temp = os.path.join(self._dir(), f"temp-bgsave-{os.getpid()}.rdb")
        dbs = self.server.keyspace.dbs
        meta = self._meta()
        try:
            job = fork_job("rdb", temp, lambda: write_snapshot(temp, dbs, meta))
        except OSError as exc:
            log.warning("Can't save in background: fork: %s", exc.strerror)
            self._bgsave_finished(False, time.monotonic())
            return False
        job.on_done = functools.partial(self._bgsave_done, temp, self.server.dirty, job.started)
        self.child = job
        log.info("Background saving started by pid %d", job.pid)
        return True

    def _bgsave_done(self, temp: str, dirty_before: int, started: float, ok: bool, message: str) -> None:
        if ok:
            try:
                replace_durably(temp, self._rdb_path())
            except OSError as exc:
                ok, message = False, f"rename: {exc.strerror}"
        if ok:
            self.server.dirty = max(0, self.server.dirty - dirty_before)
            self.lastsave = int(time.time())
            log.info("Background saving terminated with success")
        else:
            remove_quietly(temp)
            log.warning("Background saving error: %s", message)
        self._bgsave_finished(ok, started)

    def _bgsave_finished(self, ok: bool, started: float) -> None:
        self.bgsave_ok = ok
        self.last_bgsave_seconds = int(time.monotonic() - started)
        self._update_denial()

    # -- AOF rewrite ---------------------------------------------------------------------

    def bgrewriteaof(self, in_exec: bool) -> str:
        if self.child is not None and self.child.kind == "aof":
            raise CommandError("ERR Background append only file rewriting already in progress")
        if self.child is not None or in_exec:
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
        self._write_and_sync()
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
            dbs = self.server.keyspace.dbs
            meta = self._meta()
            job = fork_job("aof", temp, lambda: write_snapshot(temp, dbs, meta))
        except OSError as exc:
            log.warning("Can't rewrite append only file in background: %s", exc.strerror or exc)
            self._rewrite_finished(False, time.monotonic())
            return False
        job.on_done = functools.partial(self._rewrite_done, temp, base_name, base_seq, covered, meta.replid, job.started)
        self.child = job
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
        self._durability_changed()
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
        child = self.child
        if child is not None:
            result = poll_job(child)
            if result is not None:
                self.child = None
                if child.on_done is not None:
                    child.on_done(*result)
        if self.write_failure is not None or (self.fsync_failure is not None and self.policy == aofmod.ALWAYS):
            self.commit()  # retry: a write denied by MISCONF resumes once this succeeds
        if self.child is not None:
            return
        self._follow_log_identity()
        if self.rewrite_scheduled and not self._rewrite_limited():
            self._start_rewrite()
        elif self.bgsave_scheduled:
            self.bgsave_scheduled = False
            self._start_bgsave()
        elif self._save_point_reached():
            self._start_bgsave()
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
        """Keeps what a restart loads in step with the effect log's identity. A new
        replication id (a promotion, a restart, a replica adopting its primary's) is recorded
        by starting a new incr file whose manifest line names it; a log at another offset
        than the AOF's end (a full sync loaded another data set) needs a rewrite. Without
        this a restart would come back with the old id or a wrong offset."""
        writer = self.writer
        if self.aof_state != AOF_ON or writer is None or self.rewrite_scheduled:
            return
        effects = self.server.effects
        if writer.written_offset + len(writer.buf) != effects.offset:
            log.warning("The effect log is at offset %d but the AOF at %d: rewriting the AOF",
                        effects.offset, writer.written_offset + len(writer.buf))
            self.rewrite_scheduled = True
        elif effects.replid != self._recorded_replid:
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

    def _save_point_reached(self) -> bool:
        if not self._save_points:
            return False
        now = time.time()
        if not self.bgsave_ok and now - self.last_bgsave_try < _BGSAVE_RETRY_DELAY:
            return False
        dirty = self.server.dirty
        since = now - self.lastsave
        for seconds, changes in self._save_points:
            if dirty >= changes and since > seconds:
                log.info("%d changes in %d seconds. Saving...", changes, seconds)
                return True
        return False

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
            self._stop_syncer()
            self._start_syncer()
            if self.writer is not None:
                self._refresh_failure()
                self.commit()  # releases or re-requests what waited under the old policy
        elif name == "save":
            self._save_points = _parse_save(value)
            self._update_denial()

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
        if self.child is not None:
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
        if self.child is not None and self.child.kind == "aof":
            kill_job(self.child)
            remove_quietly(self.child.temp_path)
            self.child = None
        try:
            self._write_and_sync()
        except OSError as exc:
            log.warning("Error flushing the AOF before turning it off: %s", exc.strerror or exc)
        self._switch_writer(None)
        self.aof_state = AOF_OFF
        self.rewrite_scheduled = False
        self.write_failure = self.fsync_failure = None
        self._refresh_failure()
        self.gate.release(self.gate.required)

    # -- shutdown ------------------------------------------------------------------------

    def shutdown(self, flags: frozenset[str]) -> None:
        """Stop background work, make the AOF durable, save a final snapshot when `save`
        points are configured or SHUTDOWN SAVE asked for it (not with NOSAVE), and release
        the replies that waited for the AOF."""
        if self._cron is not None:
            self._cron.cancel()
            self._cron = None
        if self.child is not None:
            # As Redis: a background save or rewrite in progress is abandoned (the AOF and
            # the final snapshot below are complete without it).
            kill_job(self.child)
            remove_quietly(self.child.temp_path)
            self.child = None
        if self.writer is not None:
            try:
                self._write_and_sync()
                log.info("Calling fsync() on the AOF file.")
            except OSError as exc:
                log.warning("Error writing the AOF at shutdown: %s (acknowledged writes are on disk; "
                            "the unacknowledged tail is lost)", exc.strerror or exc)
            self._switch_writer(None)
        if ("save" in flags or self._save_points) and "nosave" not in flags:
            log.info("Saving the final RDB snapshot before exiting.")
            self._save_now()

    # -- INFO ------------------------------------------------------------------------------

    def aof_size_fields(self) -> list[tuple[str, Any]]:
        """The INFO persistence fields Redis shows only while the AOF is on."""
        if self.aof_state == AOF_OFF:
            return []
        writer = self.writer
        return [
            ("aof_current_size", self.current_size()),
            ("aof_base_size", self.rewrite_base_size),
            ("aof_pending_rewrite", int(self.rewrite_scheduled)),
            ("aof_buffer_length", len(writer.buf) if writer is not None else 0),
            ("aof_pending_bio_fsync", int(self.syncer is not None and self.syncer.in_progress)),
            ("aof_delayed_fsync", 0),
        ]

def _parse_save(value: str) -> list[tuple[int, int]]:
    words = value.split()
    return [(int(words[i]), int(words[i + 1])) for i in range(0, len(words) - 1, 2)]
