"""A stream key's value in RDB (rdb.c, OBJ_STREAM): its nodes as Redis listpacks, its
counters, and its consumer groups with their PELs and consumers.

Rill's nodes split exactly where Redis's listpacks do (node/engine/stream.py), and hold the
same facts per entry (ID, fields or "same fields as the master entry", deleted or not), so
each node is written as the listpack Redis would hold for it, byte for byte, and a listpack
read back becomes that node again. The layout (t_stream.c, streamAppendItem):

    master entry: count | deleted | num-fields | field ... | 0
    each entry:   flags | ms-diff | seq-diff | [num-fields | field value ...] or value ... | lp-count

with flags DELETED (1) and SAMEFIELDS (2), and the ID as its difference from the node's
master ID (the ID of its first entry, the rax key).

The types: STREAM_LISTPACKS (15, RDB 9: no first ID, deleted maximum, entries-added or
read counters, which loading estimates as Redis 7 does), STREAM_LISTPACKS_2 (19, Redis 7.0:
RDB 10) and STREAM_LISTPACKS_3 (21, Redis 7.2: RDB 11, adds each consumer's active time).
Writing RDB 10 leaves the active times out; Redis 7.2 then takes the seen time for them.
What Redis 7 has no form for is written as it can be (NACKed entries, below) or left out
(Rill's dead-letter policies, XREADGROUP CLAIM's time index, which is rebuilt when needed).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Final

from node.engine.groups import INVALID_ENTRIES_READ, UNOWNED, Consumer, ConsumerGroup
from node.engine.listpack_size import lp_int_size
from node.engine.node_values import put_len as put_varint
from node.engine.sorted_ids import PendingMap
from node.engine.stream_node import StreamNode
from node.engine.stream_ops import estimate_distance
from node.engine.stream_value import StreamValue
from node.rdb import listpack
from node.rdb.encoding import Reader, put_len, put_ms_time, put_string, stream_id_bytes
from node.rdb.listpack import ListpackError

RDB_TYPE_STREAM_LISTPACKS: Final = 15
RDB_TYPE_STREAM_LISTPACKS_2: Final = 19
RDB_TYPE_STREAM_LISTPACKS_3: Final = 21

_DELETED: Final = 1
_SAMEFIELDS: Final = 2
_M32: Final = 0xFFFFFFFF
_M64: Final = (1 << 64) - 1


def stream_type(rdb_version: int) -> int:
    """The type byte a stream is written with in an RDB of that version."""
    return RDB_TYPE_STREAM_LISTPACKS_3 if rdb_version >= 11 else RDB_TYPE_STREAM_LISTPACKS_2


# -- writing -------------------------------------------------------------------------------


def _native_listpack() -> Callable[..., bytes] | None:
    try:
        from node.rdb._rdb_native import listpack_from_node
    except ImportError:
        return None
    return listpack_from_node


_NATIVE_LISTPACK: Final = _native_listpack()


def node_listpack(node: StreamNode) -> bytes:
    """The Redis listpack of one node (in C when built: node/rdb/_rdb_native.c)."""
    if _NATIVE_LISTPACK is None:
        return node_listpack_python(node)
    if node.wide:
        keys = array("Q", [k >> 64 for k in node.keys]).tobytes()
        seqs: bytes | None = array("Q", [k & _M64 for k in node.keys]).tobytes()
    else:
        packed = node.keys
        assert isinstance(packed, array)
        keys = packed.tobytes()
        seqs = None
    dead = node.dead.to_bytes((node.dead.bit_length() + 7) // 8, "little")
    own = node.own.to_bytes((node.own.bit_length() + 7) // 8, "little")
    return _NATIVE_LISTPACK(node.fields, node.base_ms, node.master_seq, keys, seqs, node.offsets.tobytes(), node.data,
                            dead, own, node.live, node.tombs)


def node_listpack_python(node: StreamNode) -> bytes:
    """node_listpack in Python (without the native build, and as its specification)."""
    body = bytearray()
    append_int = listpack.append_int
    append_string = listpack.append_string
    fields = node.fields
    nfields = len(fields)
    append_int(body, node.live)
    append_int(body, node.tombs)
    append_int(body, nfields)
    for f in fields:
        append_string(body, f)
    append_int(body, 0)
    count = 4 + nfields
    master_ms = node.master >> 64
    master_seq = node.master & _M64
    dead = node.dead
    own = node.own
    for i in range(len(node.keys)):
        entry_id = node.id_at(i)
        flat = node.fields_at(i)
        same = not (own >> i) & 1
        append_int(body, (_DELETED if (dead >> i) & 1 else 0) | (_SAMEFIELDS if same else 0))
        append_int(body, _int64(((entry_id >> 64) - master_ms) & _M64))
        append_int(body, _int64(((entry_id & _M64) - master_seq) & _M64))
        n = len(flat) >> 1
        if same:
            for j in range(1, len(flat), 2):
                append_string(body, flat[j])
            append_int(body, n + 3)
            count += n + 4
        else:
            append_int(body, n)
            for x in flat:
                append_string(body, x)
            append_int(body, 2 * n + 4)
            count += 2 * n + 5
    return listpack.finish(body, count)


def _int64(u: int) -> int:
    return u - (1 << 64) if u >> 63 else u


def write_stream(out: bytearray, value: StreamValue, rdb_version: int, compress: bool) -> None:
    """rdbSaveObject of a stream (its type byte is the caller's)."""
    put_len(out, len(value.nodes))
    for node in value.nodes:
        put_string(out, stream_id_bytes(node.master), compress)
        put_string(out, node_listpack(node), compress)
    put_len(out, value.length)
    last = value.last_id
    put_len(out, last >> 64)
    put_len(out, last & _M64)
    first = value.first_id()
    put_len(out, first >> 64)
    put_len(out, first & _M64)
    deleted = value.max_deleted_id
    put_len(out, deleted >> 64)
    put_len(out, deleted & _M64)
    put_len(out, value.entries_added)
    groups = value.sorted_groups()
    put_len(out, len(groups))
    for name, group in groups:
        put_string(out, name, compress)
        put_len(out, group.last_id >> 64)
        put_len(out, group.last_id & _M64)
        put_len(out, group.entries_read)  # -1 (unknown) is written as 2**64 - 1, as Redis does
        pel = group.pel
        put_len(out, len(pel))
        for entry_id, nack in pel.items():
            out += stream_id_bytes(entry_id)
            put_ms_time(out, nack[0])
            put_len(out, nack[1])
        consumers = [(c.name, c.seen_time, c.active_time, list(group.owned(c))) for c in group.sorted_consumers()]
        if group.nacked:
            consumers = _with_nacked(consumers, sorted(group.nacked))
        put_len(out, len(consumers))
        for name, seen_time, active_time, owned in consumers:
            put_string(out, name, compress)
            put_ms_time(out, seen_time)
            if rdb_version >= 11:
                put_ms_time(out, active_time)
            put_len(out, len(owned))
            for entry_id in owned:
                out += stream_id_bytes(entry_id)


# Entries released by XNACK (Redis 8.8: pending, owned by no consumer) have no form in RDB 10
# or 11, whose loaders need an owner for every pending entry (Redis 7 would crash on XACK or
# XPENDING of one without). They are written as the pending entries of this consumer, with
# their delivery time 0: kept pending, delivered again as soon as one claims them (XAUTOCLAIM
# finds them idle since 1970). Their order in the NACK zone is not kept.
NACKED_CONSUMER: Final = b"rill:nacked"


def _with_nacked(consumers: list[tuple[bytes, int, int, list[int]]], nacked: list[int]) -> list[tuple[bytes, int, int, list[int]]]:
    for i, (name, seen_time, active_time, owned) in enumerate(consumers):
        if name == NACKED_CONSUMER:
            consumers[i] = (name, seen_time, active_time, sorted(owned + nacked))
            return consumers
    consumers.append((NACKED_CONSUMER, 0, -1, nacked))
    consumers.sort(key=lambda consumer: consumer[0])
    return consumers


# -- reading -------------------------------------------------------------------------------


def read_stream(r: Reader, rdb_type: int) -> StreamValue:
    """rdbLoadObject of a stream of type `rdb_type` (15, 19 or 21). Everything Redis's deep
    sanitization checks is checked (Rill rebuilds its own nodes from the listpacks, so it
    reads every byte anyway), and what Rill cannot hold is refused with the reason."""
    value = StreamValue()
    nodes: list[StreamNode] = []
    masters: list[int] = []
    previous: StreamNode | None = None
    for _ in range(r.count("stream listpack", 2)):
        at = r.pos
        key = r.string()
        if len(key) != 16:
            raise r.error("stream node key entry is not the size of a stream ID", at)
        master = int.from_bytes(key, "big")
        at = r.pos
        lp = r.string()
        try:
            node = node_from_listpack(master, lp, previous)
        except ListpackError as exc:
            raise r.error(f"stream listpack integrity check failed: {exc}", at) from None
        if masters and master <= masters[-1]:
            raise r.error("stream listpacks out of ID order", at)
        if nodes and node.master <= nodes[-1].id_at(len(nodes[-1].keys) - 1):
            raise r.error("stream entries out of ID order (a listpack starts before the previous one ends)", at)
        nodes.append(node)
        masters.append(master)
        previous = node
    for node in nodes[:-1]:
        node.seal()
    value.nodes = nodes
    value.masters = masters
    value.forget_memory_estimate()
    at = r.pos
    value.length = r.length()
    value.last_id = (r.length() << 64) | r.length()
    if rdb_type >= RDB_TYPE_STREAM_LISTPACKS_2:
        r.length()  # first ID: Rill finds its first live entry when asked
        r.length()
        value.max_deleted_id = (r.length() << 64) | r.length()
        value.entries_added = r.length()
    else:
        value.entries_added = value.length
    live = sum(node.live for node in nodes)
    if live != value.length:
        raise r.error(f"stream length {value.length} is not its {live} live entries", at)
    if value.last_id < value.last_live_id():
        raise r.error("stream last ID is below its last entry", at)
    if value.entries_added < value.length:
        raise r.error("stream entries-added is below its length", at)
    first = value.first_id()
    for _ in range(r.count("consumer group", 3)):
        at = r.pos
        name = r.string()
        last_id = (r.length() << 64) | r.length()
        if rdb_type >= RDB_TYPE_STREAM_LISTPACKS_2:
            read = r.length()
            entries_read = INVALID_ENTRIES_READ if read == _M64 else read
            if entries_read > value.entries_added:
                raise r.error("consumer group entries-read above the stream's entries-added", at)
        else:
            entries_read = estimate_distance(value, last_id, first)
        group = ConsumerGroup(last_id, entries_read)
        if value.group(name) is not None:
            raise r.error(f"duplicated consumer group name {name.decode('utf-8', 'replace')}", at)
        _read_group(r, group, rdb_type)
        value.add_group(name, group)
    return value


def _read_group(r: Reader, group: ConsumerGroup, rdb_type: int) -> None:
    pending: dict[int, tuple[int, int]] = {}
    last = -1
    for _ in range(r.count("PEL entry", 17)):
        at = r.pos
        entry_id = r.stream_id()
        delivery_time = r.ms_time()
        delivery_count = r.length()
        if entry_id <= last:
            raise r.error("duplicated or unsorted global PEL entry", at)
        last = entry_id
        pending[entry_id] = (delivery_time, delivery_count)
    owners: dict[int, bytes] = {}
    for _ in range(r.count("consumer", 9)):
        at = r.pos
        name = r.string()
        if name in group.consumers:
            raise r.error("duplicate stream consumer", at)
        consumer = Consumer(name, r.ms_time())
        consumer.active_time = r.ms_time() if rdb_type >= RDB_TYPE_STREAM_LISTPACKS_3 else consumer.seen_time
        ids: list[int] = []
        for _ in range(r.count("consumer PEL entry", 16)):
            at = r.pos
            entry_id = r.stream_id()
            if entry_id not in pending:
                raise r.error("consumer entry not found in group global PEL", at)
            if entry_id in owners or (ids and entry_id <= ids[-1]):
                raise r.error("duplicated consumer PEL entry", at)
            owners[entry_id] = name
            ids.append(entry_id)
        consumer.load(ids)
        group.consumers[name] = consumer
    # A pending entry no consumer owns is a NACKed one (Redis 8.8's XNACK), kept unowned.
    group.pel = PendingMap((entry_id, (t if entry_id in owners else 0, n, owners.get(entry_id, UNOWNED)))
                           for entry_id, (t, n) in pending.items())
    group.nacked = {entry_id: None for entry_id in pending if entry_id not in owners}


def _native_node() -> Callable[..., tuple[int, int, list[bytes], bool, bytes, bytes | None, bytes, bytes, bytes, bytes,
                                          bool]] | None:
    try:
        from node.rdb._rdb_native import node_from_listpack as native
    except ImportError:
        return None
    return native


_NATIVE_NODE: Final = _native_node()


def node_from_listpack(master: int, lp: bytes, previous: StreamNode | None) -> StreamNode:
    """The Rill node a stream listpack with master ID `master` holds (ListpackError when it
    is not a well-formed stream listpack or holds what Rill cannot). Consecutive nodes with
    the same master fields share their field lists, as nodes built by XADD do. The C module
    does it in one pass when built (node/rdb/_rdb_native.c); this is its specification."""
    if _NATIVE_NODE is None:
        return node_from_listpack_python(master, lp, previous)
    try:
        live, tombs, names, compact, keys, seqs, offsets, data, dead, own, long = _NATIVE_NODE(lp, master >> 64, master & _M64)
    except ValueError as exc:
        raise ListpackError(str(exc)) from None
    node = StreamNode.__new__(StreamNode)
    node.master = master
    node.base_ms = master >> 64
    node.master_seq = master & _M64
    _share_fields(node, names, previous)
    if compact:
        node.wide = False
        packed = array("Q")
        packed.frombytes(keys)
        node.keys = packed
    else:
        node.wide = True
        ms = array("Q")
        ms.frombytes(keys)
        sq = array("Q")
        sq.frombytes(seqs or b"")
        node.keys = [(m << 64) | q for m, q in zip(ms, sq)]
    node.offsets = array("I")
    node.offsets.frombytes(offsets)
    node.data = bytearray(data)
    node.long = long
    node.dead = int.from_bytes(dead, "little")
    node.own = int.from_bytes(own, "little")
    node.live = live
    node.tombs = tombs
    node.lp_base = len(lp) - lp_int_size(live) - lp_int_size(tombs)
    return node


def _share_fields(node: StreamNode, names: list[bytes], previous: StreamNode | None) -> None:
    if previous is not None and previous.fields == names:
        node.fields = previous.fields
        node.tmpl = previous.tmpl
    else:
        node.fields = names
        node.tmpl = [x for f in names for x in (f, b"")]


def node_from_listpack_python(master: int, lp: bytes, previous: StreamNode | None) -> StreamNode:
    """node_from_listpack in Python (without the native build, and as its specification)."""
    elements = listpack.parse(lp)
    n_el = len(elements)
    if n_el < 4:
        raise ListpackError("empty listpack inside stream")
    live, tombs, nfields = elements[0], elements[1], elements[2]
    if type(live) is not int or type(tombs) is not int or type(nfields) is not int or live < 0 or tombs < 0 or nfields < 1:
        raise ListpackError("bad stream master entry")
    if 3 + nfields + 1 > n_el or elements[3 + nfields] != 0:
        raise ListpackError("bad stream master entry fields")
    names = [_as_bytes(x) for x in elements[3 : 3 + nfields]]
    node = StreamNode.__new__(StreamNode)
    node.master = master
    node.base_ms = master >> 64
    node.master_seq = master & _M64
    _share_fields(node, names, previous)
    data = bytearray()
    offsets = array("I")
    ids: list[int] = []
    dead = 0
    own = 0
    long = False
    count = 0
    p = 4 + nfields
    while p < n_el:
        if p + 4 > n_el:
            raise ListpackError("truncated stream entry")
        flags, ms_diff, seq_diff = elements[p], elements[p + 1], elements[p + 2]
        if type(flags) is not int or type(ms_diff) is not int or type(seq_diff) is not int or flags & ~3:
            raise ListpackError("bad stream entry header")
        entry_id = (((node.base_ms + ms_diff) & _M64) << 64) | ((node.master_seq + seq_diff) & _M64)
        if ids and entry_id <= ids[-1]:
            raise ListpackError("stream entries out of ID order")
        offsets.append(len(data))
        if flags & _SAMEFIELDS:
            values = elements[p + 3 : p + 3 + nfields]
            q = p + 3 + nfields
            if q >= n_el or elements[q] != nfields + 3:
                raise ListpackError("bad stream entry lp-count")
            for v in values:
                b = _as_bytes(v)
                if len(b) >= 0x80:
                    long = True
                put_varint(data, len(b))
                data += b
        else:
            npairs = elements[p + 3]
            if type(npairs) is not int or npairs < 1:
                raise ListpackError("bad stream entry field count")
            q = p + 4 + 2 * npairs
            if q >= n_el or elements[q] != 2 * npairs + 4:
                raise ListpackError("bad stream entry lp-count")
            own |= 1 << count
            if npairs >= 0x80:
                long = True
            put_varint(data, npairs)
            for x in elements[p + 4 : q]:
                b = _as_bytes(x)
                if len(b) >= 0x80:
                    long = True
                put_varint(data, len(b))
                data += b
        if flags & _DELETED:
            dead |= 1 << count
        ids.append(entry_id)
        count += 1
        p = q + 1
    if count != live + tombs or dead.bit_count() != tombs:
        raise ListpackError(f"stream master entry counts {live}+{tombs} entries, the listpack holds {count}")
    if not count or ids[0] != master:
        raise ListpackError("stream listpack whose first entry is not its master ID")
    if all((i >> 64) - node.base_ms <= _M32 and i & _M64 <= _M32 for i in ids):
        node.wide = False
        node.keys = array("Q", [(((i >> 64) - node.base_ms) << 32) | (i & _M32) for i in ids])
    else:
        node.wide = True
        node.keys = ids
    node.offsets = offsets
    node.data = data
    node.long = long
    node.dead = dead
    node.own = own
    node.live = live
    node.tombs = tombs
    # The listpack's size without its count and deleted elements: what Stream.append tracks.
    node.lp_base = len(lp) - lp_int_size(live) - lp_int_size(tombs)
    return node


def _as_bytes(x: listpack.Element) -> bytes:
    return x if type(x) is bytes else str(x).encode()
