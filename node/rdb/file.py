"""Whole RDB files (rdb.c rdbSaveRio and rdbLoadRioWithLoadingCtx): the magic `REDIS` and a
four-digit version, AUX fields, then per database a SELECTDB and a RESIZEDB opcode followed
by its keys (each optionally preceded by EXPIRETIME_MS, IDLE, FREQ), and EOF followed by the
CRC-64 of everything before it (0 when written with rdbchecksum off, which readers accept
unchecked, as Redis does).

`read_records` walks a file held in memory and yields what it holds; values of types Rill
does not have are skipped over (their encodings are known) and reported, so the loader can
refuse the file naming the key and type, or skip them. `write_rdb` yields a file's bytes in
chunks, so that a caller can write or send it as it is produced.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Union

from node.engine.keyspace import Keyspace, Value
from node.rdb.crc64 import crc64
from node.rdb.encoding import RdbError, Reader, put_len, put_ms_time, put_string
from node.rdb.values import OTHER_TYPES, UnsupportedType, is_object_type, read_value, write_value

MAGIC: Final = b"REDIS"
MAX_READ_VERSION: Final = 11

OPCODE_FUNCTION2: Final = 245
OPCODE_FUNCTION_PRE_GA: Final = 246
OPCODE_MODULE_AUX: Final = 247
OPCODE_IDLE: Final = 248
OPCODE_FREQ: Final = 249
OPCODE_AUX: Final = 250
OPCODE_RESIZEDB: Final = 251
OPCODE_EXPIRETIME_MS: Final = 252
OPCODE_EXPIRETIME: Final = 253
OPCODE_SELECTDB: Final = 254
OPCODE_EOF: Final = 255

# Module value opcodes (RDB_MODULE_OPCODE_*), for skipping a module's data.
_MODULE_EOF: Final = 0
_MODULE_SINT: Final = 1
_MODULE_UINT: Final = 2
_MODULE_FLOAT: Final = 3
_MODULE_DOUBLE: Final = 4
_MODULE_STRING: Final = 5

# Write a chunk once this much is buffered.
_CHUNK: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class Aux:
    """An AUX field (redis-ver, ctime, repl-id, ...)."""

    name: bytes
    value: bytes


@dataclass(frozen=True, slots=True)
class Key:
    """A key Rill can hold: its database, value and absolute deadline (unix ms) or None."""

    db: int
    key: bytes
    value: Value
    expire_ms: int | None
    offset: int  # where its record starts


@dataclass(frozen=True, slots=True)
class Unsupported:
    """Something Rill cannot hold, already skipped over: a key of another type (`key` set),
    a function library or module data (`key` None); `what` names it for messages."""

    db: int
    key: bytes | None
    what: str
    offset: int


@dataclass(frozen=True, slots=True)
class End:
    """The EOF opcode: `checksum_checked` is False when the file carries checksum 0."""

    checksum_checked: bool
    size: int


Record = Union[Aux, Key, Unsupported, End]


def read_version(buf: bytes | memoryview) -> int:
    """The RDB version of a file (RdbError when it is not an RDB file this reader takes)."""
    if len(buf) < 9 or bytes(buf[:5]) != MAGIC:
        raise RdbError(0, "not an RDB file (wrong signature)")
    digits = bytes(buf[5:9])
    if not digits.isdigit():
        raise RdbError(5, "not an RDB file (bad version digits)")
    version = int(digits)
    if not 1 <= version <= MAX_READ_VERSION:
        raise RdbError(5, f"can't handle RDB format version {version}")
    return version


def read_records(buf: bytes | memoryview, databases: int) -> Iterator[Record]:
    """Every record of the RDB file `buf`, in order, ending with End; RdbError (naming the
    offset) at the first byte that is damaged, or where the file ends too early."""
    version = read_version(buf)
    r = Reader(buf, 9)
    db = 0
    expire_ms: int | None = None
    while True:
        start = r.pos
        op = r.byte()
        if op == OPCODE_EXPIRETIME_MS:
            expire_ms = r.ms_time()
            continue
        if op == OPCODE_EXPIRETIME:
            expire_ms = int.from_bytes(r.take(4), "little", signed=True) * 1000
            continue
        if op == OPCODE_IDLE:
            r.length()  # Rill keeps no access times
            continue
        if op == OPCODE_FREQ:
            r.byte()
            continue
        if op == OPCODE_AUX:
            name = r.string()
            yield Aux(name, r.string())
            continue
        if op == OPCODE_SELECTDB:
            db = r.length()
            if db >= databases:
                raise r.error(f"database {db} is out of range (databases is {databases})", start)
            continue
        if op == OPCODE_RESIZEDB:
            r.length()
            r.length()
            continue
        if op == OPCODE_MODULE_AUX:
            r.length()  # module id
            if r.length() != _MODULE_UINT:
                raise r.error("bad when_opcode in module AUX data", start)
            r.length()
            _skip_module_value(r)
            yield Unsupported(db, None, "module AUX data", start)
            continue
        if op == OPCODE_FUNCTION_PRE_GA:
            raise r.error("pre-release function format not supported", start)
        if op == OPCODE_FUNCTION2:
            r.string()
            yield Unsupported(db, None, "a function library", start)
            continue
        if op == OPCODE_EOF:
            checked = True
            if version >= 5:
                at = r.pos
                stored = int.from_bytes(r.take(8), "little")
                if stored == 0:
                    checked = False
                elif stored != crc64(0, memoryview(buf)[:at]):
                    raise r.error("RDB CRC error (the checksum does not match the file)", at)
            if r.remaining():
                raise r.error(f"{r.remaining()} bytes after the end of the RDB file")
            yield End(checked, len(buf))
            return
        if not is_object_type(op):
            raise r.error(f"unknown RDB opcode or object type {op}", start)
        key = r.string()
        try:
            value = read_value(r, op)
        except UnsupportedType as exc:
            _skip_value(r, op)
            yield Unsupported(db, key, exc.type_name, start)
        else:
            yield Key(db, key, value, expire_ms, start)
        expire_ms = None


def _skip_value(r: Reader, rdb_type: int) -> None:
    """Reads past a value of a type Rill does not hold (its layout in rdbLoadObject)."""
    if rdb_type in (1, 2):  # list, set: strings
        for _ in range(r.count("element")):
            r.string()
    elif rdb_type == 3:  # zset: member, double as a string
        for _ in range(r.count("element", 2)):
            r.string()
            r.double_value()
    elif rdb_type == 5:  # zset 2: member, binary double
        for _ in range(r.count("element", 9)):
            r.string()
            r.take(8)
    elif rdb_type == 4:  # hash: field, value
        for _ in range(r.count("element", 2)):
            r.string()
            r.string()
    elif rdb_type == 14:  # quicklist of ziplists
        for _ in range(r.count("element")):
            r.string()
    elif rdb_type == 18:  # quicklist 2: container kind, listpack
        for _ in range(r.count("element", 2)):
            r.length()
            r.string()
    elif rdb_type in (9, 10, 11, 12, 13, 16, 17, 20):  # one encoded blob
        r.string()
    elif rdb_type == 7:  # module 2
        r.length()
        _skip_module_value(r)
    else:  # 6: the pre-release module format
        raise r.error(f"RDB type {rdb_type} ({OTHER_TYPES.get(rdb_type, 'unknown')}) cannot be read")


def _skip_module_value(r: Reader) -> None:
    while True:
        opcode = r.length()
        if opcode == _MODULE_EOF:
            return
        if opcode in (_MODULE_SINT, _MODULE_UINT):
            r.length()
        elif opcode == _MODULE_FLOAT:
            r.take(4)
        elif opcode == _MODULE_DOUBLE:
            r.take(8)
        elif opcode == _MODULE_STRING:
            r.string()
        else:
            raise r.error(f"unknown module value opcode {opcode}")


def aux_field(out: bytearray, name: bytes, value: bytes) -> None:
    """rdbSaveAuxField."""
    out.append(OPCODE_AUX)
    put_string(out, name, False)
    put_string(out, value, False)


def write_rdb(
    keyspace: Keyspace, rdb_version: int, aux: Sequence[tuple[bytes, bytes]], compress: bool = True, checksum: bool = True,
) -> Iterator[bytes]:
    """The RDB file of `keyspace`, in chunks of about a megabyte: version `rdb_version` (10
    as Redis 7.0 writes it, 11 as Redis 7.2), the AUX fields given, then every database
    that has keys, with each key's deadline."""
    out = bytearray(MAGIC + b"%04d" % rdb_version)
    crc = 0
    for name, text in aux:
        aux_field(out, name, text)
    for index, db in enumerate(keyspace.dbs):
        if not db:
            continue
        deadlines = keyspace.expires[index].deadlines
        out.append(OPCODE_SELECTDB)
        put_len(out, index)
        out.append(OPCODE_RESIZEDB)
        put_len(out, len(db))
        put_len(out, len(deadlines))
        for key, value in db.items():
            when = deadlines.get(key) if deadlines else None
            if when is not None:
                out.append(OPCODE_EXPIRETIME_MS)
                put_ms_time(out, when)
            write_value(out, value, rdb_version, compress, key)
            if len(out) >= _CHUNK:
                chunk = bytes(out)
                out.clear()
                if checksum:
                    crc = crc64(crc, chunk)
                yield chunk
    out.append(OPCODE_EOF)
    if checksum:
        crc = crc64(crc, out)
    out += crc.to_bytes(8, "little") if checksum else bytes(8)
    yield bytes(out)

