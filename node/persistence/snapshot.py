"""The snapshot format: a versioned, checksummed image of every database, read back without
replaying a single command.

Layout (all integers little-endian):

    magic "RILLSNAP" | u16 version | u16 reserved
    section*         : u8 kind | u64 payload length | payload | u32 CRC32(kind..payload)
    META   (kind 1)  : u32 count, then count (name, value) strings: replid, replid2,
                       second-offset, repl-offset (the effect-log offset of this state), ctime
    KEYS   (kind 2)  : u32 db, then records until the payload ends (sections hold whole keys
                       and are cut at about 4 MiB, so a damaged byte is found near where it is)
    IDMP   (kind 3)  : u32 db, then the idempotent-production state of that database's streams
                       that have any (Redis 8.6 XADD IDMP), after the KEYS sections that hold
                       those streams, cut like them. A snapshot without IDMP state has none,
                       so snapshots written before the section existed load unchanged (and a
                       node that predates it refuses one with: "unknown section kind 3")
    GROUPX (kind 4)  : u32 db, then, for that database's streams whose groups have NACKed
                       entries (Redis 8.8 XNACK) or a dead-letter policy (Rill), after the
                       KEYS sections that hold them, cut like them: key | u32 groups, each:
                       name | u32 NACKed, two arrays of that length (the NACK zone's IDs in
                       release order, high and low u64) | u8 policy (0/1), then with one:
                       i64 max deliveries | dead-letter key. Absent when no group has any
                       (older snapshots load unchanged)
    END    (kind 255): u64 keys, u64 sections before it; a file without it is incomplete

    string record: u8 0 | key | value                    (strings are u32 length + bytes)
    deadline     : u8 0xFC | i64 unix ms, before the record of a key with a time to live
                   (RDB's EXPIRETIME_MS opcode); files written before it existed load as
                   they always did
    stream record: u8 1 | key | u64 length | u128 last_id | u128 max_deleted_id
                   | u64 entries_added | the packed nodes (`stream_snapshot.dump_nodes`)
                   | u32 groups, each: name | u128 last_id | i64 entries_read | u32 consumers,
                     each: name | i64 seen_time | i64 active_time;
                     then u32 pending and five arrays of that length: ID high u64, ID low
                     u64, delivery time i64, delivery count i64, owner (u32 consumer index;
                     0xFFFFFFFF: NACKed, no owner)
    idmp record:   key | u32 duration | u32 maxsize | u64 iids-added | u64 iids-duplicates
                   | u32 producers, each (oldest-expiring first): pid | u32 iids, that many
                     iid strings (oldest first), then two arrays of that length: their entry
                     IDs' high and low u64

Streams are stored as their packed nodes byte for byte, and a PEL as flat arrays, which is
what makes loading fast: a few array copies per node of 100 entries and one sorted build per
PEL, instead of an XADD per entry as an AOF replay costs.
"""

from __future__ import annotations

import os
import struct
import time
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import BinaryIO, Final

from node.engine.dead_letters import DeadLetterPolicy
from node.engine.groups import UNOWNED, Consumer, ConsumerGroup
from node.engine.idmp import MAX_DURATION, MAX_MAXSIZE, MIN_DURATION, MIN_MAXSIZE, IdmpState
from node.engine.keyspace import Keyspace, Value
from node.engine.sorted_ids import PendingMap
from node.engine.stream_snapshot import array_from_le, dump_nodes, le_bytes, load_nodes
from node.engine.stream_value import StreamValue

MAGIC: Final = b"RILLSNAP"
VERSION: Final = 1

_SEC_META: Final = 1
_SEC_KEYS: Final = 2
_SEC_IDMP: Final = 3
_SEC_GROUPX: Final = 4
_NO_OWNER: Final = 0xFFFFFFFF
_SEC_END: Final = 255
_SECTION_NAMES: Final = {_SEC_META: "META", _SEC_KEYS: "KEYS", _SEC_IDMP: "IDMP", _SEC_GROUPX: "GROUPX", _SEC_END: "END"}

_STRING: Final = 0
_STREAM: Final = 1
_DEADLINE: Final = 0xFC

_FILE_HEAD: Final = struct.Struct("<8sHH")
_SEC_HEAD: Final = struct.Struct("<BQ")
_CRC: Final = struct.Struct("<I")
_U32: Final = struct.Struct("<I")
_I64: Final = struct.Struct("<q")
_STREAM_HEAD: Final = struct.Struct("<QQQQQQ")  # length, last_id hi/lo, max_deleted hi/lo, entries_added
_GROUP_HEAD: Final = struct.Struct("<QQqI")  # last_id hi/lo, entries_read, consumers
_CONSUMER: Final = struct.Struct("<qq")  # seen_time, active_time
_IDMP_HEAD: Final = struct.Struct("<IIQQI")  # duration, maxsize, added, duplicates, producers
_END: Final = struct.Struct("<QQ")

# A KEYS section is closed once it holds this many bytes (whole keys only).
_SECTION_TARGET: Final = 4 * 1024 * 1024
_M64: Final = (1 << 64) - 1


class SnapshotError(Exception):
    """The file is not a complete, intact snapshot: the text names the file and the offset."""


@dataclass(frozen=True, slots=True)
class SnapshotMeta:
    """What a snapshot records beside the data: the replication position of the state."""

    replid: str
    replid2: str = "0" * 40
    second_offset: int = -1
    offset: int = 0  # effect-log offset the state corresponds to
    created: int = 0  # unix time of the snapshot

    def encode(self) -> bytes:
        items = {
            "replid": self.replid,
            "replid2": self.replid2,
            "second-offset": str(self.second_offset),
            "repl-offset": str(self.offset),
            "ctime": str(self.created or int(time.time())),
        }
        parts = [_U32.pack(len(items))]
        for name, value in items.items():
            parts.append(_string(name.encode()))
            parts.append(_string(value.encode()))
        return b"".join(parts)

    @staticmethod
    def decode(payload: bytes) -> SnapshotMeta:
        (count,) = _U32.unpack_from(payload, 0)
        pos = 4
        items: dict[str, str] = {}
        for _ in range(count):
            name, pos = _read_string(payload, pos)
            value, pos = _read_string(payload, pos)
            items[name.decode()] = value.decode()
        return SnapshotMeta(
            replid=items["replid"],
            replid2=items.get("replid2", "0" * 40),
            second_offset=int(items.get("second-offset", "-1")),
            offset=int(items["repl-offset"]),
            created=int(items.get("ctime", "0")),
        )


@dataclass(frozen=True, slots=True)
class LoadedSnapshot:
    meta: SnapshotMeta
    keys: int
    size: int


# -- writing -------------------------------------------------------------------------------


def write_snapshot(path: str, keyspace: Keyspace, meta: SnapshotMeta) -> int:
    """Write the snapshot of `keyspace` to `path` (created or truncated) and fsync it;
    returns its size. The caller renames it into place (see files.replace_durably)."""
    with open(path, "wb", buffering=1024 * 1024) as f:
        size = dump(f, keyspace, meta)
        f.flush()
        os.fsync(f.fileno())
    return size


def dump(f: BinaryIO, keyspace: Keyspace, meta: SnapshotMeta) -> int:
    size = f.write(_FILE_HEAD.pack(MAGIC, VERSION, 0))
    size += _write_section(f, _SEC_META, meta.encode())
    sections = 1
    keys = 0
    for index, db in enumerate(keyspace.dbs):
        if not db:
            continue
        deadlines = keyspace.expires[index].deadlines
        with_idmp: list[Callable[[list[bytes]], None]] = []
        with_groupx: list[Callable[[list[bytes]], None]] = []
        parts: list[bytes] = [_U32.pack(index)]
        filled = 0
        for key, value in db.items():
            before = len(parts)
            if deadlines:
                when = deadlines.get(key)
                if when is not None:
                    parts += (b"\xfc", _I64.pack(when))
            _dump_key(parts, key, value)
            filled += sum(len(p) for p in parts[before:])
            keys += 1
            if type(value) is StreamValue and value.idmp is not None:
                idmp = value.idmp_state()
                if idmp is not None:
                    with_idmp.append(partial(_dump_idmp, key=key, idmp=idmp))
            if type(value) is StreamValue and value.groups and _has_groupx(value):
                with_groupx.append(partial(_dump_groupx, key=key, value=value))
            if filled >= _SECTION_TARGET:
                size += _write_section(f, _SEC_KEYS, b"".join(parts))
                sections += 1
                parts = [_U32.pack(index)]
                filled = 0
        if len(parts) > 1:
            size += _write_section(f, _SEC_KEYS, b"".join(parts))
            sections += 1
        for kind, records in ((_SEC_IDMP, with_idmp), (_SEC_GROUPX, with_groupx)):
            written, count = _write_records(f, kind, index, records)
            size += written
            sections += count
    size += _write_section(f, _SEC_END, _END.pack(keys, sections))
    return size


def _write_records(
    f: BinaryIO, kind: int, index: int, records: list[Callable[[list[bytes]], None]]
) -> tuple[int, int]:
    """Write one database's records of a per-key section (IDMP, GROUPX) after its KEYS
    sections, cut like them: (bytes written, sections written)."""
    size = sections = filled = 0
    parts = [_U32.pack(index)]
    for dump_record in records:
        before = len(parts)
        dump_record(parts)
        filled += sum(len(p) for p in parts[before:])
        if filled >= _SECTION_TARGET:
            size += _write_section(f, kind, b"".join(parts))
            sections += 1
            parts = [_U32.pack(index)]
            filled = 0
    if len(parts) > 1:
        size += _write_section(f, kind, b"".join(parts))
        sections += 1
    return size, sections


def _write_section(f: BinaryIO, kind: int, payload: bytes) -> int:
    head = _SEC_HEAD.pack(kind, len(payload))
    crc = zlib.crc32(payload, zlib.crc32(head))
    return f.write(head) + f.write(payload) + f.write(_CRC.pack(crc))


def _string(data: bytes) -> bytes:
    return _U32.pack(len(data)) + data


def _dump_key(parts: list[bytes], key: bytes, value: Value) -> None:
    if type(value) is bytes:
        parts += (b"\x00", _U32.pack(len(key)), key, _U32.pack(len(value)), value)
        return
    assert isinstance(value, StreamValue)
    parts += (b"\x01", _U32.pack(len(key)), key)
    parts.append(
        _STREAM_HEAD.pack(
            value.length, value.last_id >> 64, value.last_id & _M64,
            value.max_deleted_id >> 64, value.max_deleted_id & _M64, value.entries_added,
        )
    )
    dump_nodes(value, parts)
    groups = value.groups or {}
    parts.append(_U32.pack(len(groups)))
    for name, group in groups.items():
        _dump_group(parts, name, group)


def _dump_group(parts: list[bytes], name: bytes, group: ConsumerGroup) -> None:
    parts.append(_string(name))
    parts.append(_GROUP_HEAD.pack(group.last_id >> 64, group.last_id & _M64, group.entries_read, len(group.consumers)))
    index: dict[bytes, int] = {}
    for i, (cname, consumer) in enumerate(group.consumers.items()):
        index[cname] = i
        parts.append(_string(cname))
        parts.append(_CONSUMER.pack(consumer.seen_time, consumer.active_time))
    ids = list(group.pel.keys())
    nacks = list(group.pel.values())
    parts.append(_U32.pack(len(ids)))
    if ids:
        parts.append(le_bytes(array("Q", [i >> 64 for i in ids])))
        parts.append(le_bytes(array("Q", [i & _M64 for i in ids])))
        parts.append(le_bytes(array("q", [n[0] for n in nacks])))
        parts.append(le_bytes(array("q", [n[1] for n in nacks])))
        parts.append(le_bytes(array("I", [_NO_OWNER if n[2] is UNOWNED else index[n[2]] for n in nacks])))


def _has_groupx(value: StreamValue) -> bool:
    groups = value.groups or {}
    return any(g.nacked or g.dead_letter is not None for g in groups.values())


def _dump_groupx(parts: list[bytes], key: bytes, value: StreamValue) -> None:
    groups = value.groups or {}
    parts.append(_string(key))
    parts.append(_U32.pack(len(groups)))
    for name, group in groups.items():
        parts.append(_string(name))
        nacked = list(group.nacked)
        parts.append(_U32.pack(len(nacked)))
        if nacked:
            parts.append(le_bytes(array("Q", [i >> 64 for i in nacked])))
            parts.append(le_bytes(array("Q", [i & _M64 for i in nacked])))
        policy = group.dead_letter
        if policy is None:
            parts.append(b"\x00")
        else:
            parts.append(b"\x01" + _I64.pack(policy.max_deliveries) + _string(policy.stream))


def _dump_idmp(parts: list[bytes], key: bytes, idmp: IdmpState) -> None:
    parts.append(_string(key))
    parts.append(_IDMP_HEAD.pack(idmp.duration, idmp.maxsize, idmp.added, idmp.duplicates, len(idmp.producers)))
    for pid, iids in idmp.producers.items():
        parts.append(_string(pid))
        parts.append(_U32.pack(len(iids)))
        parts += [_string(iid) for iid in iids]
        ids = list(iids.values())
        parts.append(le_bytes(array("Q", [i >> 64 for i in ids])))
        parts.append(le_bytes(array("Q", [i & _M64 for i in ids])))


# -- reading -------------------------------------------------------------------------------


def load_snapshot(path: str, keyspace: Keyspace) -> LoadedSnapshot:
    """Load the snapshot at `path` into `keyspace` (which must be empty), deadlines as
    recorded, past or not (whoever loads decides what to expire). Raises SnapshotError
    naming the file and offset when it is damaged, incomplete or not a snapshot, and
    OSError when it cannot be read."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        meta: SnapshotMeta | None = None
        keys = 0
        for sections, (offset, kind, payload) in enumerate(_sections(f, name)):
            try:
                if kind == _SEC_META:
                    meta = SnapshotMeta.decode(payload)
                elif kind == _SEC_KEYS:
                    keys += _load_keys(payload, keyspace)
                elif kind == _SEC_IDMP:
                    _load_idmp_section(payload, keyspace.dbs)
                elif kind == _SEC_GROUPX:
                    _load_groupx_section(payload, keyspace.dbs)
                elif kind == _SEC_END:
                    total, counted = _END.unpack(payload)
                    if (total, counted) != (keys, sections):
                        raise ValueError(f"END records {total} keys in {counted} sections, read {keys} in {sections}")
                    if meta is None:
                        raise ValueError("no META section")
                    if f.read(1):
                        raise ValueError("data after the END section")
                    return LoadedSnapshot(meta, keys, size)
                else:
                    raise ValueError(f"unknown section kind {kind}")
            except SnapshotError:
                raise
            except (ValueError, KeyError, IndexError, struct.error, UnicodeDecodeError) as exc:
                raise SnapshotError(
                    f"Bad snapshot file {name} at offset {offset}: {_SECTION_NAMES.get(kind, kind)} section: {exc}"
                ) from None
    raise SnapshotError(f"Bad snapshot file {name} at offset {size}: unexpected end of file (no END section)")


def read_meta(path: str) -> SnapshotMeta:
    """The META section alone (checked), without loading the data."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        for offset, kind, payload in _sections(f, name):
            if kind != _SEC_META:
                break
            try:
                return SnapshotMeta.decode(payload)
            except (ValueError, KeyError, struct.error, UnicodeDecodeError) as exc:
                raise SnapshotError(f"Bad snapshot file {name} at offset {offset}: META section: {exc}") from None
    raise SnapshotError(f"Bad snapshot file {name} at offset {_FILE_HEAD.size}: no META section")


def verify_snapshot(path: str) -> tuple[int, str | None]:
    """Check every section's checksum and the END record without building the data:
    (bytes verified as good, error text or None)."""
    name = os.path.basename(path)
    good = 0
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            for offset, kind, payload in _sections(f, name):
                good = f.tell()
                if kind == _SEC_END:
                    return (good, None) if good == size else (good, f"Bad snapshot file {name} at offset {good}: data after the END section")
                del offset, payload
            return good, f"Bad snapshot file {name} at offset {size}: unexpected end of file (no END section)"
    except SnapshotError as exc:
        return good, str(exc)


def _sections(f: BinaryIO, name: str) -> Iterator[tuple[int, int, bytes]]:
    """(offset, kind, payload) of each section, checksum verified."""
    head = f.read(_FILE_HEAD.size)
    if len(head) < _FILE_HEAD.size or head[:8] != MAGIC:
        raise SnapshotError(f"Bad snapshot file {name} at offset 0: not a Rill snapshot (bad magic)")
    _, version, reserved = _FILE_HEAD.unpack(head)
    if version != VERSION:
        raise SnapshotError(f"Bad snapshot file {name} at offset 8: unsupported snapshot version {version} (this node reads {VERSION})")
    if reserved:
        raise SnapshotError(f"Bad snapshot file {name} at offset 10: unknown flags {reserved:#x}")
    size = os.fstat(f.fileno()).st_size
    offset = _FILE_HEAD.size
    while True:
        sec_head = f.read(_SEC_HEAD.size)
        if not sec_head:
            return
        if len(sec_head) < _SEC_HEAD.size:
            raise SnapshotError(f"Bad snapshot file {name} at offset {offset}: unexpected end of file in a section header")
        kind, length = _SEC_HEAD.unpack(sec_head)
        if offset + _SEC_HEAD.size + length + _CRC.size > size:
            raise SnapshotError(f"Bad snapshot file {name} at offset {offset}: a section runs past the end of the file")
        payload = f.read(length)
        crc = f.read(_CRC.size)
        if len(payload) < length or len(crc) < _CRC.size:
            raise SnapshotError(f"Bad snapshot file {name} at offset {offset}: unexpected end of file in a {_SECTION_NAMES.get(kind, kind)} section")
        if _CRC.unpack(crc)[0] != zlib.crc32(payload, zlib.crc32(sec_head)):
            raise SnapshotError(f"Bad snapshot file {name} at offset {offset}: checksum mismatch in a {_SECTION_NAMES.get(kind, kind)} section")
        yield offset, kind, payload
        offset += _SEC_HEAD.size + length + _CRC.size


def _read_string(buf: bytes | memoryview, pos: int) -> tuple[bytes, int]:
    (n,) = _U32.unpack_from(buf, pos)
    pos += 4
    end = pos + n
    if end > len(buf):
        raise ValueError("string out of bounds")
    return bytes(buf[pos:end]), end


def _load_keys(payload: bytes, keyspace: Keyspace) -> int:
    view = memoryview(payload)
    (index,) = _U32.unpack_from(view, 0)
    dbs = keyspace.dbs
    if index >= len(dbs):
        raise ValueError(f"database {index} does not exist (databases is {len(dbs)})")
    db = dbs[index]
    expires = keyspace.expires[index]
    pos = 4
    end = len(view)
    count = 0
    while pos < end:
        kind = view[pos]
        when: int | None = None
        if kind == _DEADLINE:
            (when,) = _I64.unpack_from(view, pos + 1)
            pos += 1 + _I64.size
            if pos >= end:
                raise ValueError("a deadline with no key after it")
            kind = view[pos]
        key, pos = _read_string(view, pos + 1)
        if kind == _STRING:
            value, pos = _read_string(view, pos)
            db[key] = value
        elif kind == _STREAM:
            db[key], pos = _load_stream(view, pos)
        else:
            raise ValueError(f"unknown value type {kind}")
        if when is not None:
            expires.set(key, when)
        count += 1
    return count


def _load_idmp_section(payload: bytes, dbs: list[dict[bytes, Value]]) -> None:
    view = memoryview(payload)
    (index,) = _U32.unpack_from(view, 0)
    if index >= len(dbs):
        raise ValueError(f"database {index} does not exist (databases is {len(dbs)})")
    db = dbs[index]
    pos = 4
    while pos < len(view):
        key, pos = _read_string(view, pos)
        value = db.get(key)
        if type(value) is not StreamValue:
            raise ValueError("IDMP state for a key that holds no stream")
        value.idmp, pos = _load_idmp(view, pos)


def _load_groupx_section(payload: bytes, dbs: list[dict[bytes, Value]]) -> None:
    view = memoryview(payload)
    (index,) = _U32.unpack_from(view, 0)
    if index >= len(dbs):
        raise ValueError(f"database {index} does not exist (databases is {len(dbs)})")
    db = dbs[index]
    pos = 4
    while pos < len(view):
        key, pos = _read_string(view, pos)
        value = db.get(key)
        if type(value) is not StreamValue:
            raise ValueError("group state for a key that holds no stream")
        (ngroups,) = _U32.unpack_from(view, pos)
        pos += 4
        for _ in range(ngroups):
            name, pos = _read_string(view, pos)
            group = value.group(name)
            if group is None:
                raise ValueError("group state for a group the stream does not have")
            (n,) = _U32.unpack_from(view, pos)
            pos += 4
            if n:
                his = array_from_le("Q", view[pos : pos + 8 * n])
                los = array_from_le("Q", view[pos + 8 * n : pos + 16 * n])
                pos += 16 * n
                if len(los) != n:
                    raise ValueError("NACKed IDs out of bounds")
                order = [(h << 64) | x for h, x in zip(his, los)]
                if sorted(order) != list(group.nacked):
                    raise ValueError("the NACK zone does not match the PEL's unowned entries")
                group.nacked = dict.fromkeys(order)
            has_policy = view[pos]
            pos += 1
            if has_policy:
                (limit,) = _I64.unpack_from(view, pos)
                stream_key, pos = _read_string(view, pos + 8)
                if limit < 1:
                    raise ValueError("a dead-letter limit below 1")
                group.dead_letter = DeadLetterPolicy(limit, stream_key)


def _load_idmp(view: memoryview, pos: int) -> tuple[IdmpState, int]:
    duration, maxsize, added, duplicates, count = _IDMP_HEAD.unpack_from(view, pos)
    pos += _IDMP_HEAD.size
    if not (MIN_DURATION <= duration <= MAX_DURATION and MIN_MAXSIZE <= maxsize <= MAX_MAXSIZE):
        raise ValueError(f"IDMP settings out of range ({duration} s, {maxsize} iids)")
    idmp = IdmpState(duration, maxsize)
    idmp.added = added
    idmp.duplicates = duplicates
    newest = -1
    for _ in range(count):
        pid, pos = _read_string(view, pos)
        (n,) = _U32.unpack_from(view, pos)
        pos += 4
        if not pid or not 0 < n <= maxsize or pid in idmp.producers:
            raise ValueError("a malformed IDMP producer")
        iids = []
        for _ in range(n):
            iid, pos = _read_string(view, pos)
            iids.append(iid)
        his = array_from_le("Q", view[pos : pos + 8 * n])
        los = array_from_le("Q", view[pos + 8 * n : pos + 16 * n])
        pos += 16 * n
        if len(los) != n:
            raise ValueError("IDMP entry IDs out of bounds")
        ids = [(h << 64) | x for h, x in zip(his, los)]
        # The order invariants the expiry relies on (node/engine/idmp.py).
        if not all(iids) or len(set(iids)) != n or ids != sorted(ids) or ids[-1] < newest:
            raise ValueError("a malformed IDMP producer")
        newest = ids[-1]
        idmp.producers[pid] = OrderedDict(zip(iids, ids))
    return idmp, pos


def _load_stream(view: memoryview, pos: int) -> tuple[StreamValue, int]:
    stream = StreamValue()
    length, last_hi, last_lo, del_hi, del_lo, added = _STREAM_HEAD.unpack_from(view, pos)
    pos = load_nodes(stream, view, pos + _STREAM_HEAD.size)
    stream.length = length
    stream.last_id = (last_hi << 64) | last_lo
    stream.max_deleted_id = (del_hi << 64) | del_lo
    stream.entries_added = added
    (ngroups,) = _U32.unpack_from(view, pos)
    pos += 4
    for _ in range(ngroups):
        name, pos = _read_string(view, pos)
        group, pos = _load_group(view, pos)
        stream.add_group(name, group)
    return stream, pos


def _load_group(view: memoryview, pos: int) -> tuple[ConsumerGroup, int]:
    last_hi, last_lo, entries_read, nconsumers = _GROUP_HEAD.unpack_from(view, pos)
    pos += _GROUP_HEAD.size
    group = ConsumerGroup((last_hi << 64) | last_lo, entries_read)
    consumers: list[Consumer] = []
    for _ in range(nconsumers):
        cname, pos = _read_string(view, pos)
        seen, active = _CONSUMER.unpack_from(view, pos)
        pos += _CONSUMER.size
        consumer = Consumer(cname, seen)
        consumer.active_time = active
        consumers.append(consumer)
        group.consumers[cname] = consumer
    (n, ) = _U32.unpack_from(view, pos)
    pos += 4
    if n:
        his = array_from_le("Q", view[pos : pos + 8 * n])
        los = array_from_le("Q", view[pos + 8 * n : pos + 16 * n])
        times = array_from_le("q", view[pos + 16 * n : pos + 24 * n])
        counts = array_from_le("q", view[pos + 24 * n : pos + 32 * n])
        owners = array_from_le("I", view[pos + 32 * n : pos + 36 * n])
        pos += 36 * n
        if len(owners) != n:
            raise ValueError("pending entries out of bounds")
        ids = [(h << 64) | x for h, x in zip(his, los)]
        names = [c.name for c in consumers]
        if any(o != _NO_OWNER and o >= len(consumers) for o in owners):
            raise ValueError("a pending entry owned by no listed consumer")
        group.pel = PendingMap(
            zip(ids, [(t, c, names[o] if o != _NO_OWNER else UNOWNED) for t, c, o in zip(times, counts, owners)])
        )
        if len(group.pel) != n:
            raise ValueError("duplicate pending entry IDs")
        owned: list[list[int]] = [[] for _ in consumers]
        for entry_id, owner in zip(ids, owners):
            if owner == _NO_OWNER:
                # The NACK zone in ID order until a GROUPX section gives its real order.
                group.nacked[entry_id] = None
            else:
                owned[owner].append(entry_id)
        for consumer, entry_ids in zip(consumers, owned):
            consumer.load(entry_ids)
    return group, pos

