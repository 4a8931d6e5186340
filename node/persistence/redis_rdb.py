"""Redis RDB files on disk: loading a redis-server's `dump.rdb` into the node (the start-up
load takes one wherever it takes a snapshot: the file starts with `REDIS` rather than
`RILLSNAP`), and writing the node's data as an RDB file that redis-server loads (`rill rdb
export`). The format is node/rdb/'s; this module does the file I/O and the policy.

Strings and streams (with their consumer groups) load, each key with its deadline; keys
already past it are deleted by a primary once loaded, as any loaded key (docs/persistence.md).
A key of a type Rill does not hold stops the load with a message naming the key, its type
and the offset, unless `rdb-skip-unsupported` is on: then it is skipped and counted (the
first ones are logged by name). The same goes for function libraries and module data. A
damaged or truncated file is refused naming the offset of the first byte that cannot be
read (and the CRC at the end is checked, unless the file was written without one).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from node.engine.keyspace import Keyspace
from node.rdb.encoding import RdbError
from node.rdb.file import MAGIC, Aux, End, Key, Unsupported, read_records, write_rdb

log = logging.getLogger("rill.persistence")

# Skipped keys logged one by one before only counting them.
_SKIPPED_LOGGED: Final = 10


class RdbLoadError(Exception):
    """The RDB file cannot be loaded: the text names the file, the offset and why."""


@dataclass(frozen=True, slots=True)
class LoadedRdb:
    keys: int
    skipped: int
    aux: dict[bytes, bytes]
    checksum_checked: bool


def is_redis_rdb(path: str) -> bool:
    """Whether the file at `path` starts as a Redis RDB file does."""
    with open(path, "rb") as f:
        return f.read(len(MAGIC)) == MAGIC


def load_rdb_file(path: str, keyspace: Keyspace, skip_unsupported: bool) -> LoadedRdb:
    """Loads the RDB file at `path` into `keyspace` (empty); RdbLoadError when it cannot."""
    name = os.path.basename(path)
    # Read whole: the codec works on bytes in memory (a file of a few GB needs that much).
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        raise RdbLoadError(f"Bad RDB file {name} at offset 0: the file is empty")
    return load_rdb_bytes(data, keyspace, skip_unsupported, name)


def load_rdb_bytes(data: bytes | memoryview, keyspace: Keyspace, skip_unsupported: bool, name: str) -> LoadedRdb:
    """Loads an RDB file held in memory (a file, or a full sync's transfer) into `keyspace`."""
    return fill_keyspace(read_records(data, len(keyspace.dbs)), keyspace, skip_unsupported, name)


def fill_keyspace(records: Iterable[object], keyspace: Keyspace, skip_unsupported: bool, name: str) -> LoadedRdb:
    keys = 0
    skipped = 0
    aux: dict[bytes, bytes] = {}
    it: Iterator[object] = iter(records)
    try:
        for record in it:
            if type(record) is Key:
                db = keyspace.dbs[record.db]
                if record.key in db:
                    raise RdbError(record.offset, f"duplicate key '{_show(record.key)}' in db {record.db}")
                db[record.key] = record.value
                if record.expire_ms is not None:
                    keyspace.expires[record.db].set(record.key, record.expire_ms)
                keys += 1
            elif type(record) is Unsupported:
                what = (f"key '{_show(record.key)}' (db {record.db}) of type {record.what}" if record.key is not None
                        else record.what)
                if not skip_unsupported:
                    raise RdbLoadError(
                        f"The RDB file {name} holds {what} at offset {record.offset}, which Rill does not hold "
                        "(it keeps strings and streams): remove it from the source first, or start with "
                        "`rdb-skip-unsupported yes` to load the rest without it"
                    )
                skipped += 1
                if skipped <= _SKIPPED_LOGGED:
                    log.warning("RDB %s: skipped %s (rdb-skip-unsupported)", name, what)
            elif type(record) is Aux:
                aux[record.name] = record.value
            elif type(record) is End:
                if not record.checksum_checked:
                    log.info("RDB file %s was saved with checksum disabled: no check performed.", name)
                if skipped > _SKIPPED_LOGGED:
                    log.warning("RDB %s: %d keys or items of unsupported types skipped in all", name, skipped)
                return LoadedRdb(keys, skipped, aux, record.checksum_checked)
    except RdbError as exc:
        raise RdbLoadError(f"Bad RDB file {name} {exc}") from None
    raise RdbLoadError(f"Bad RDB file {name}: it ends without its EOF record")


def _show(key: bytes) -> str:
    return key.decode("utf-8", "backslashreplace")


def rdb_aux_fields(redis_version: str, ctime: int, used_mem: int) -> list[tuple[bytes, bytes]]:
    """The AUX fields Redis writes at the top of an RDB file (rdbSaveInfoAuxFields)."""
    return [
        (b"redis-ver", redis_version.encode()),
        (b"redis-bits", b"64"),
        (b"ctime", b"%d" % ctime),
        (b"used-mem", b"%d" % used_mem),
        (b"aof-base", b"0"),
    ]


def write_rdb_file(
    path: str, keyspace: Keyspace, rdb_version: int, aux: list[tuple[bytes, bytes]], compress: bool, checksum: bool,
) -> int:
    """Writes the RDB file of `keyspace` at `path` (via a temporary file beside it, fsynced
    and renamed into place); returns its size."""
    temp = f"{path}.tmp-{os.getpid()}"
    size = 0
    try:
        with open(temp, "wb") as f:
            for chunk in write_rdb(keyspace, rdb_version, aux, compress, checksum):
                f.write(chunk)
                size += len(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return size
