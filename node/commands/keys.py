"""Generic keyspace commands, whatever the value's type: DEL, UNLINK, EXISTS, TYPE, KEYS,
SCAN, RENAME, RENAMENX, MOVE, COPY, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, RANDOMKEY, TOUCH and
OBJECT.

Replies and error texts are Redis 7.2's (db.c, object.c). A key's time to live goes where
the key goes (RENAME, MOVE and COPY carry it; a deleted or replaced key loses it). Keys that
are logically expired are never returned: KEYS skips them, SCAN and RANDOMKEY delete them on
a primary (node.commands.expiry); DBSIZE counts them until they are deleted, as Redis does.
Effects: DEL and UNLINK log `DEL` with only the keys that existed; RENAME/RENAMENX log
`RENAME src dst` when they moved a key; MOVE and COPY are logged as sent when they moved or
copied one; FLUSHDB, FLUSHALL and SWAPDB are logged verbatim, always (Redis forces their
propagation even on empty databases).
"""

from __future__ import annotations

import random
from collections import OrderedDict
from itertools import islice
from typing import Any, Final

from node.commands.args import NOT_AN_INTEGER, SYNTAX_ERROR, parse_int, to_int
from node.commands.context import Session
from node.commands.expiry import deletes_expired, expire_if_needed, sees_expiry
from node.commands.glob import compile_glob
from node.commands.helptext import help_reply
from node.commands.reply import OK, CommandError, Raw
from node.commands.table import command, container, subcommand
from node.engine.keyspace import Database, type_name
from node.engine.stream_value import StreamValue

_NONE: Final = Raw(b"+none\r\n")
_STRING: Final = Raw(b"+string\r\n")
_STREAM: Final = Raw(b"+stream\r\n")

# ---------------------------------------------------------------------------------------
# DEL, UNLINK, EXISTS, TOUCH, TYPE, DBSIZE, RANDOMKEY
# ---------------------------------------------------------------------------------------


def _delete(ctx: Session, keys: list[bytes]) -> int:
    keyspace = ctx.node.keyspace
    index = ctx.db_index
    removed = [key for key in keys if keyspace.delete(index, key) is not None]
    if removed:
        ctx.propagate(b"DEL", *removed)
    return len(removed)


@command("del", -2, "write", 1, -1, 1, group="generic", summary="Deletes one or more keys.")
def del_(ctx: Session, argv: list[bytes]) -> Any:
    return _delete(ctx, argv[1:])


# Rill frees values synchronously either way; UNLINK logs the same `DEL` effect so that a
# replica's state never depends on which of the two a client used.
@command("unlink", -2, "write fast", 1, -1, 1, group="generic",
         summary="Asynchronously deletes one or more keys.")
def unlink(ctx: Session, argv: list[bytes]) -> Any:
    return _delete(ctx, argv[1:])


def _count_existing(ctx: Session, keys: list[bytes]) -> int:
    # Repeated keys count once per mention, as in Redis.
    db = ctx.db
    return sum(1 for key in keys if key in db)


@command("exists", -2, "readonly fast", 1, -1, 1, group="generic",
         summary="Determines whether one or more keys exist.")
def exists(ctx: Session, argv: list[bytes]) -> Any:
    return _count_existing(ctx, argv[1:])


# Rill keeps no access times (OBJECT IDLETIME is always 0), so TOUCH only counts.
@command("touch", -2, "readonly fast", 1, -1, 1, group="generic",
         summary="Returns the number of existing keys out of those specified after updating the time they were last accessed.")
def touch(ctx: Session, argv: list[bytes]) -> Any:
    return _count_existing(ctx, argv[1:])


@command("type", 2, "readonly fast", 1, 1, 1, group="generic", summary="Determines the type of value stored at a key.")
def type_(ctx: Session, argv: list[bytes]) -> Any:
    value = ctx.db.get(argv[1])
    if value is None:
        return _NONE
    return _STRING if type(value) is bytes else _STREAM


@command("dbsize", 1, "readonly fast", group="server", summary="Returns the number of keys in the database.")
def dbsize(ctx: Session, argv: list[bytes]) -> Any:
    return len(ctx.db)


@command("randomkey", 1, "readonly", group="generic", summary="Returns a random key name from the database.")
def randomkey(ctx: Session, argv: list[bytes]) -> Any:
    db = ctx.db
    deadlines = ctx.expires.deadlines
    all_volatile = len(db) == len(deadlines)
    tries = 100
    while db:
        # A dict has no random access; skipping through its iterator runs at C speed.
        key = next(islice(iter(db), random.randrange(len(db)), None))
        if key not in deadlines:
            return key
        # dbRandomKey: a replica whose keys are all volatile and all expired would loop
        # forever, so it gives up after 100 tries and returns an expired name.
        tries -= 1
        if all_volatile and not deletes_expired(ctx.node) and tries == 0:
            return key
        if not expire_if_needed(ctx, key):
            return key
    return None


# ---------------------------------------------------------------------------------------
# RENAME, RENAMENX
# ---------------------------------------------------------------------------------------


def _rename(ctx: Session, argv: list[bytes], nx: bool) -> bool:
    """Move argv[1] to argv[2]; False when RENAMENX found the destination taken."""
    db = ctx.db
    src, dst = argv[1], argv[2]
    value = db.get(src)
    if value is None:
        raise CommandError("ERR no such key")
    if src == dst:
        return not nx  # nothing changes, so nothing is logged
    if nx and dst in db:
        return False
    keyspace = ctx.node.keyspace
    when = ctx.expires.get(src)
    keyspace.delete(ctx.db_index, dst)
    keyspace.delete(ctx.db_index, src)
    db[dst] = value
    if when is not None:
        ctx.expires.set(dst, when)  # the deadline moves with the key
    ctx.propagate(b"RENAME", src, dst)
    return True


@command("rename", 3, "write", 1, 2, 1, group="generic", summary="Renames a key and overwrites the destination.")
def rename(ctx: Session, argv: list[bytes]) -> Any:
    _rename(ctx, argv, nx=False)
    return OK


@command("renamenx", 3, "write fast", 1, 2, 1, group="generic",
         summary="Renames a key only when the target key name doesn't exist.")
def renamenx(ctx: Session, argv: list[bytes]) -> Any:
    return 1 if _rename(ctx, argv, nx=True) else 0


# ---------------------------------------------------------------------------------------
# MOVE, COPY
# ---------------------------------------------------------------------------------------

_SAME_OBJECT: Final = "ERR source and destination objects are the same"


def _target_db(ctx: Session, raw: bytes) -> int:
    """A database index argument (getIntFromObjectOrReply, then selectDb's range check)."""
    index = _db_index(raw, NOT_AN_INTEGER)
    if not 0 <= index < len(ctx.node.keyspace.dbs):
        raise CommandError("ERR DB index is out of range")
    return index


def _taken(ctx: Session, index: int, key: bytes) -> bool:
    """Whether key exists in database index (lookupKeyWrite: expired means absent)."""
    return key in ctx.node.keyspace.dbs[index] and not expire_if_needed(ctx, key, index)


@command("move", 3, "write fast", 1, 1, 1, group="generic", summary="Moves a key to another database.")
def move(ctx: Session, argv: list[bytes]) -> Any:
    index = _target_db(ctx, argv[2])
    if index == ctx.db_index:
        raise CommandError(_SAME_OBJECT)
    key = argv[1]
    value = ctx.db.get(key)
    if value is None or _taken(ctx, index, key):
        return 0
    keyspace = ctx.node.keyspace
    when = ctx.expires.get(key)
    keyspace.delete(ctx.db_index, key)
    keyspace.dbs[index][key] = value
    if when is not None:
        keyspace.expires[index].set(key, when)
    ctx.propagate(b"MOVE", key, argv[2])
    ctx.node.watches.touch(index, key)  # the effect's own key is the source's
    return 1


@command("copy", -3, "write denyoom", 1, 2, 1, group="generic", summary="Copies the value of a key to a new key.")
def copy(ctx: Session, argv: list[bytes]) -> Any:
    index = ctx.db_index
    replace = False
    j = 3
    while j < len(argv):
        option = argv[j].lower()
        if option == b"replace":
            replace = True
        elif option == b"db" and j + 1 < len(argv):
            index = _target_db(ctx, argv[j + 1])
            j += 1
        else:
            raise CommandError(SYNTAX_ERROR)
        j += 1
    src, dst = argv[1], argv[2]
    if index == ctx.db_index and src == dst:
        raise CommandError(_SAME_OBJECT)
    value = ctx.db.get(src)
    if value is None:
        return 0
    keyspace = ctx.node.keyspace
    when = ctx.expires.get(src)
    if _taken(ctx, index, dst):
        if not replace:
            return 0
        keyspace.delete(index, dst)
    keyspace.dbs[index][dst] = value.copy() if isinstance(value, StreamValue) else value
    if when is not None:
        keyspace.expires[index].set(dst, when)
    ctx.propagate_argv(argv)
    # Only the destination changes (the server does not touch the keys a COPY names).
    ctx.node.watches.touch(index, dst)
    return 1


# ---------------------------------------------------------------------------------------
# FLUSHDB, FLUSHALL, SWAPDB
# ---------------------------------------------------------------------------------------


def _check_flush_mode(argv: list[bytes]) -> None:
    """FLUSHDB/FLUSHALL take no argument or one of SYNC/ASYNC (both mean the same in Rill)."""
    if len(argv) > 2 or len(argv) == 2 and argv[1].lower() not in (b"sync", b"async"):
        raise CommandError(SYNTAX_ERROR)


def _flush(ctx: Session, argv: list[bytes], db_index: int | None) -> Any:
    _check_flush_mode(argv)
    node = ctx.node
    # WATCHes are invalidated only for keys that exist at the moment of the flush
    # (touchAllWatchedKeysInDb), so this must run before the databases are emptied.
    node.watches.touch_all(db_index)
    keyspace = node.keyspace
    for db in keyspace.dbs if db_index is None else [keyspace.dbs[db_index]]:
        _SCANS.forget(db)
    keyspace.flush(db_index)
    ctx.propagate_argv(argv)
    return OK


@command("flushdb", -1, "write", group="server", summary="Removes all keys from the current database.")
def flushdb(ctx: Session, argv: list[bytes]) -> Any:
    return _flush(ctx, argv, ctx.db_index)


@command("flushall", -1, "write", group="server", summary="Removes all keys from all databases.")
def flushall(ctx: Session, argv: list[bytes]) -> Any:
    return _flush(ctx, argv, None)


def _db_index(raw: bytes, error: str) -> int:
    # getIntFromObjectOrReply: anything that is not a C int gets the caller's text.
    value = to_int(raw)
    if value is None or not -(1 << 31) <= value < 1 << 31:
        raise CommandError(error)
    return value


@command("swapdb", 3, "write fast", group="server", summary="Swaps two Redis databases.")
def swapdb(ctx: Session, argv: list[bytes]) -> Any:
    a = _db_index(argv[1], "ERR invalid first DB index")
    b = _db_index(argv[2], "ERR invalid second DB index")
    count = len(ctx.node.keyspace.dbs)
    if not (0 <= a < count and 0 <= b < count):
        raise CommandError("ERR DB index is out of range")
    if a != b:
        ctx.node.watches.swapdb(a, b)
    ctx.propagate(b"SWAPDB", argv[1], argv[2])
    return OK


# ---------------------------------------------------------------------------------------
# KEYS, SCAN
# ---------------------------------------------------------------------------------------


@command("keys", 2, "readonly", group="generic", summary="Returns all key names that match a pattern.")
def keys(ctx: Session, argv: list[bytes]) -> Any:
    pattern = argv[1]
    found = list(ctx.db) if pattern == b"*" else list(filter(compile_glob(pattern), ctx.db))
    expires = ctx.expires
    if expires.deadlines and sees_expiry(ctx):
        # keysCommand skips logically expired keys without deleting them.
        now = ctx.command_ms()
        found = [key for key in found if not expires.is_expired(key, now)]
    return found


class ScanSnapshots:
    """The key lists that SCAN cursors walk.

    Guarantee (Redis's): a full iteration returns every key that is present from its first
    to its last call at least once; a key that is absent all along is never returned.

    How: `SCAN 0` copies the database's key list (a C-speed copy, ~10 ms per million keys)
    into a numbered snapshot; a cursor is `generation << 32 | position` in that snapshot,
    and each call walks COUNT positions, skipping keys deleted since. A key present for the
    whole scan is in the snapshot, so it is returned exactly once. Keys added meanwhile are
    not returned, which Redis allows.

    Snapshots live until their scan ends; beyond `max_snapshots` or `max_refs` held key
    references the least recently used are dropped. A cursor whose snapshot is gone (or
    that belongs to another database, or to no snapshot) restarts the iteration from a
    fresh snapshot: keys may then repeat, but none is missed, so the guarantee holds.
    Memory is one pointer per key per unfinished scan, within the bounds above.
    """

    def __init__(self, max_snapshots: int = 64, max_refs: int = 8_000_000) -> None:
        self.max_snapshots = max_snapshots
        self.max_refs = max_refs
        self._snapshots: OrderedDict[int, tuple[Database, list[bytes]]] = OrderedDict()
        self._refs = 0
        self._next_generation = 1

    def start(self, db: Database) -> tuple[int, list[bytes]]:
        generation = self._next_generation
        # Generations stay below 2**31 so that cursors fit a signed 64-bit integer.
        self._next_generation = generation % ((1 << 31) - 1) + 1
        self.drop(generation)
        snapshot = list(db)
        self._snapshots[generation] = (db, snapshot)
        self._refs += len(snapshot)
        while len(self._snapshots) > 1 and (
            len(self._snapshots) > self.max_snapshots or self._refs > self.max_refs
        ):
            oldest = next(iter(self._snapshots))
            self.drop(oldest)
        return generation, snapshot

    def find(self, db: Database, generation: int) -> list[bytes] | None:
        entry = self._snapshots.get(generation)
        if entry is None or entry[0] is not db:
            return None
        self._snapshots.move_to_end(generation)
        return entry[1]

    def drop(self, generation: int) -> None:
        entry = self._snapshots.pop(generation, None)
        if entry is not None:
            self._refs -= len(entry[1])

    def forget(self, db: Database) -> None:
        """The database was emptied: its snapshots would only pin the old keys."""
        for generation in [g for g, (d, _) in self._snapshots.items() if d is db]:
            self.drop(generation)


_SCANS: Final = ScanSnapshots()

_ULONG_MAX: Final = (1 << 64) - 1
_C_SPACE: Final = frozenset(b" \t\n\v\f\r")
# getObjectTypeByName: the names SCAN TYPE recognises (module types aside).
_TYPE_NAMES: Final = frozenset({"string", "list", "set", "zset", "hash", "stream"})


def _parse_cursor(raw: bytes) -> int:
    """Redis's parseScanCursorOrReply, i.e. strtoul() with a leading-space check."""
    text = raw.split(b"\0", 1)[0]  # the C string ends at the first NUL
    if text and text[0] in _C_SPACE:
        raise CommandError("ERR invalid cursor")
    if not text:
        return 0
    sign = 1
    digits = text
    if text[0] in b"+-":
        sign = -1 if text[0] == 0x2D else 1
        digits = text[1:]
    if not digits.isdigit():
        raise CommandError("ERR invalid cursor")
    value = int(digits)
    if value > _ULONG_MAX:
        raise CommandError("ERR invalid cursor")
    return value if sign > 0 else (-value) & _ULONG_MAX


@command("scan", -2, "readonly", group="generic", summary="Iterates over the key names in the database.")
def scan(ctx: Session, argv: list[bytes]) -> Any:
    cursor = _parse_cursor(argv[1])
    count = 10
    pattern: bytes | None = None
    type_filter: str | None = None
    i = 2
    while i < len(argv):
        option = argv[i].lower()
        if i + 1 >= len(argv):
            raise CommandError(SYNTAX_ERROR)
        if option == b"count":
            count = parse_int(argv[i + 1], NOT_AN_INTEGER)
            if count < 1:
                raise CommandError(SYNTAX_ERROR)
        elif option == b"match":
            pattern = None if argv[i + 1] == b"*" else argv[i + 1]
        elif option == b"type":
            type_filter = argv[i + 1].decode("utf-8", "replace").lower()
        else:
            raise CommandError(SYNTAX_ERROR)
        i += 2

    db = ctx.db
    snapshot = _SCANS.find(db, cursor >> 32) if cursor else None
    position = cursor & 0xFFFFFFFF
    if snapshot is None or position > len(snapshot):
        generation, snapshot = _SCANS.start(db)
        position = 0
    else:
        generation = cursor >> 32
    end = min(position + count, len(snapshot))
    batch = [key for key in snapshot[position:end] if key in db]
    if end == len(snapshot):
        _SCANS.drop(generation)
        next_cursor = 0
    else:
        next_cursor = generation << 32 | end

    if pattern is not None:
        batch = list(filter(compile_glob(pattern), batch))
    if ctx.expires.deadlines:
        # Expired keys that match are deleted on a primary and never returned.
        batch = [key for key in batch if not expire_if_needed(ctx, key)]
    if type_filter is not None:
        if type_filter in _TYPE_NAMES:
            batch = [key for key in batch if type_name(db[key]) == type_filter]
        else:
            batch = []  # Redis 7.2 accepts an unknown type name and matches nothing
    return [str(next_cursor).encode(), batch]


# ---------------------------------------------------------------------------------------
# OBJECT
# ---------------------------------------------------------------------------------------

container("object", -2, group="generic", summary="A container for object introspection commands.")

# Redis shares the string objects of the integers 0..9999 (OBJ_SHARED_INTEGERS) and
# reports their refcount as OBJ_SHARED_REFCOUNT.
_SHARED_INTEGERS: Final = 10000
_SHARED_REFCOUNT: Final = 2147483647
# Strings up to this length are allocated with their object (OBJ_ENCODING_EMBSTR_SIZE_LIMIT).
_EMBSTR_LIMIT: Final = 44


def _encoding(value: bytes) -> bytes:
    # tryObjectEncoding: integers that fit a long become "int". Values built by APPEND are
    # "raw" in Redis whatever their length; Rill does not track that history.
    if len(value) <= 20 and to_int(value) is not None:
        return b"int"
    return b"embstr" if len(value) <= _EMBSTR_LIMIT else b"raw"


@subcommand("object", "encoding", 3, "readonly", 2, 2, 1,
            summary="Returns the internal encoding of a Redis object.")
def object_encoding(ctx: Session, argv: list[bytes]) -> Any:
    value = ctx.db.get(argv[2])
    if value is None:
        return None
    return _encoding(value) if type(value) is bytes else b"stream"


@subcommand("object", "refcount", 3, "readonly", 2, 2, 1,
            summary="Returns the reference count of a value of a key.")
def object_refcount(ctx: Session, argv: list[bytes]) -> Any:
    value = ctx.db.get(argv[2])
    if value is None:
        return None
    if type(value) is bytes:
        number = to_int(value) if len(value) <= 20 else None
        if number is not None and 0 <= number < _SHARED_INTEGERS:
            return _SHARED_REFCOUNT
    return 1


@subcommand("object", "freq", 3, "readonly", 2, 2, 1,
            summary="Returns the logarithmic access frequency counter of a Redis object.")
def object_freq(ctx: Session, argv: list[bytes]) -> Any:
    if argv[2] not in ctx.db:
        return None
    # Rill evicts nothing (maxmemory-policy is always noeviction), so there is no LFU data.
    raise CommandError(
        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
        "that when switching between policies at runtime LRU and LFU data will take some time to adjust."
    )


@subcommand("object", "idletime", 3, "readonly", 2, 2, 1,
            summary="Returns the time since the last access to a Redis object.")
def object_idletime(ctx: Session, argv: list[bytes]) -> Any:
    if argv[2] not in ctx.db:
        return None
    # Access times are not tracked: keeping them would cost every read a clock call.
    return 0


_OBJECT_HELP: Final = (
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
)


@subcommand("object", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def object_help(ctx: Session, argv: list[bytes]) -> Any:
    return help_reply(argv[0], _OBJECT_HELP)
