"""Loading the data set at start-up: a snapshot (the RDB file), or the AOF's base and incr
files as its manifest names them, the incr files replayed through the node's log applier
(node/log/applier.py), as a replica applies its primary's log. Damage is reported as a
`PersistenceError` that names the file, the offset and what to do (Redis aof.c's rules for a
truncated tail: cut with aof-load-truncated, only in the last file).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from node.commands.context import Session
from node.commands.reply import ReplyError
from node.log.applier import LogApplier
from node.persistence.aof_reader import ReplayRefused, read_aof
from node.persistence.manifest import Manifest, ManifestError, aof_files_on_disk, load_manifest, manifest_name
from node.persistence.redis_rdb import RdbLoadError, is_redis_rdb, load_rdb_file
from node.persistence.snapshot import SnapshotError, SnapshotMeta, load_snapshot

if TYPE_CHECKING:
    from node.server.server import Server

log = logging.getLogger("rill.persistence")


class PersistenceError(Exception):
    """The node cannot start (or continue) with the data on disk: the text says which file,
    where, and what to do."""


@dataclass(frozen=True)
class LoadedAof:
    """What loading an AOF found: the manifest, the size of each of its files, the base's
    size, the replication position it records (None: none recorded) and the offset it ends at."""

    manifest: Manifest
    sizes: dict[str, int]
    base_size: int
    meta: SnapshotMeta | None
    offset: int


def load_rdb(server: Server, path: str) -> SnapshotMeta:
    """Loads the snapshot at `path` into the (empty) keyspace; returns what it records. A
    Redis RDB file there (a redis-server's dump.rdb) is loaded as one (node/persistence/
    redis_rdb.py), as the start of a new history."""
    started = time.monotonic()
    try:
        if is_redis_rdb(path):
            return _load_redis_rdb(server, path, started)
        loaded = load_snapshot(path, server.keyspace)
    except SnapshotError as exc:
        raise PersistenceError(f"{exc}. The snapshot is damaged: restore a backup or move it away to start empty.") from None
    except OSError as exc:
        raise PersistenceError(f"Can't read the snapshot file {path}: {exc.strerror}") from None
    log.info("Snapshot %s loaded: %d keys in %.3f seconds", os.path.basename(path), loaded.keys, time.monotonic() - started)
    return loaded.meta


def _load_redis_rdb(server: Server, path: str, started: float) -> SnapshotMeta:
    name = os.path.basename(path)
    skip = server.config.get("rdb-skip-unsupported") == "yes"
    try:
        loaded = load_rdb_file(path, server.keyspace, skip)
    except RdbLoadError as exc:
        raise PersistenceError(f"{exc}. Move the file away to start without it.") from None
    version = loaded.aux.get(b"redis-ver", b"?").decode("utf-8", "replace")
    log.info(
        "Redis RDB %s (produced by Redis %s) loaded: %d keys%s in %.3f seconds", name, version, loaded.keys,
        f", {loaded.skipped} of unsupported types skipped" if loaded.skipped else "", time.monotonic() - started,
    )
    ctime = loaded.aux.get(b"ctime", b"0")
    return SnapshotMeta(server.effects.replid, offset=0, created=int(ctime) if ctime.isdigit() else 0)


def load_aof(server: Server, aofdir: str, filename: str, truncated_tail_ok: bool) -> LoadedAof | None:
    """Loads the base and incr files the manifest of `filename` in `aofdir` names into the
    (empty) keyspace; None when there is no AOF yet. `truncated_tail_ok`: aof-load-truncated."""
    mpath = os.path.join(aofdir, manifest_name(filename))
    if not os.path.exists(mpath):
        bases, incrs = aof_files_on_disk(aofdir, filename)
        if bases or incrs:
            # Starting empty would lose them at the next rewrite (node.persistence.manifest_rebuild).
            raise PersistenceError(
                f"The AOF directory {aofdir} holds AOF files ({', '.join(f.name for f in bases + incrs)}) but no "
                f"manifest {manifest_name(filename)}: refusing to start with an empty data set. Rebuild the manifest "
                f"with `rill check-aof --fix {mpath}`, or move the files away to start empty."
            )
        return None
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
    sizes: dict[str, int] = {}
    base_size = 0
    if manifest.base is not None:
        started = time.monotonic()
        path = os.path.join(aofdir, manifest.base.name)
        try:
            loaded = load_snapshot(path, server.keyspace)
        except SnapshotError as exc:
            raise PersistenceError(f"{exc}. Restore a backup of the AOF directory.") from None
        except OSError as exc:
            raise PersistenceError(f"Can't read the AOF base file {path}: {exc.strerror}") from None
        meta = loaded.meta
        sizes[manifest.base.name] = loaded.size
        base_size = loaded.size
        log.info("DB loaded from base file %s: %.3f seconds", manifest.base.name, time.monotonic() - started)
    offset = meta.offset if meta is not None else (manifest.incrs[0].start_offset if manifest.incrs else 0)
    for i, incr in enumerate(manifest.incrs):
        if incr.start_offset != offset:
            raise PersistenceError(
                f"The AOF file {incr.name} starts at offset {incr.start_offset} but the files before it end at "
                f"{offset}: part of the AOF is missing. Restore a backup of the AOF directory."
            )
        last = i == len(manifest.incrs) - 1
        size, offset = _replay_incr(server, os.path.join(aofdir, incr.name), filename, truncated_tail_ok and last, last, offset)
        sizes[incr.name] = size
    recorded = manifest.recorded_identity()
    if recorded is not None:
        meta = SnapshotMeta(
            recorded.replid, recorded.replid2, recorded.second_offset, offset, meta.created if meta else 0
        )
    return LoadedAof(manifest, sizes, base_size, meta, offset)


def _replay_incr(server: Server, path: str, filename: str, cut_truncated: bool, last: bool, start_offset: int) -> tuple[int, int]:
    """Replays one incr file, whose first byte is log offset `start_offset`, through the log
    applier; returns its usable size (after cutting a truncated tail, when `cut_truncated`)
    and the log offset it ends at."""
    name = os.path.basename(path)
    started = time.monotonic()
    session = Session(server.node, 0)
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

    applier = LogApplier(server, session, failed)
    try:
        result = read_aof(path, applier.apply_command, applier.apply_block)
    except OSError as exc:
        raise PersistenceError(f"Unrecoverable error reading the append only file {name}: {exc.strerror}") from None
    applier.finish()
    fix = f"make a backup of your AOF file, then use `rill check-aof --fix {manifest_name(filename)}`"
    if result.status == "corrupt":
        raise PersistenceError(
            f"Bad file format reading the append only file {name} at offset {result.error_offset} "
            f"({result.error}): {fix}"
        )
    size = result.size
    if result.status == "truncated":
        if result.open_multi:
            log.warning("Revert incomplete MULTI/EXEC transaction in AOF file %s", name)
        if not cut_truncated:
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
    return size, result.log_end(start_offset)
