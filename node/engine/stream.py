"""The stream data type: entries packed into append-only macro nodes, no object per entry.

This module owns the storage of one stream's entries and the Redis rules that act on that
storage (node split on XADD, tombstones on XDEL, exact and ``~`` trimming).  It knows nothing
about consumer groups, commands or replies.

Layout (mirrors Redis's radix tree of listpacks, t_stream.c):

* Entries live in *nodes*.  ``Stream._masters`` is a sorted list of each node's master ID
  (the ID of its first entry, tombstone or not, like the rax key) and ``Stream._nodes`` the
  nodes in the same order; a node is found by bisecting ``_masters``.  Nodes are appended at
  the tail only and removed anywhere.
* Inside a node, ``keys`` holds one packed ID per entry (see ``_Node``), ``offsets`` where
  the entry starts in ``data``, and ``data`` the values, each as ``varint(len) + bytes``.
  The field names of the node's first entry are the node's *master fields*; an entry with
  exactly those fields stores only its values (Redis's SAMEFIELDS flag), any other entry sets
  its bit in ``own`` and stores ``varint(n_pairs)`` followed by every field and value.
* XDEL and trimming inside a node set a bit in the ``dead`` bitmask (Redis's DELETED flag);
  the bytes stay until the whole node goes.  A node whose last live entry is XDEL'd is removed.

Node boundaries are Redis's, byte for byte: the split rule of ``streamAppendItem`` compares
the size the node *would have as a Redis listpack* (tracked incrementally in ``lp_base``)
with ``stream-node-max-bytes``, and counts live plus deleted entries against
``stream-node-max-entries``.  Keeping the same boundaries is what makes ``XTRIM ~``,
``XADD ... MAXLEN ~`` and XINFO's radix-tree-keys reply exactly what redis-server replies.
"""

from __future__ import annotations

import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, cast

from node.engine.ids import MAX_ID, decimal

_M32: Final = 0xFFFFFFFF
_M64: Final = 0xFFFFFFFFFFFFFFFF

# Redis STREAM_LISTPACK_MAX_SIZE: the byte cap used when stream-node-max-bytes is 0 or larger.
LP_MAX_SIZE: Final = 1 << 30
# Listpack header (total bytes + element count) plus the end-of-listpack byte.
_LP_EMPTY: Final = 7
# A flags element (values 0..3) is one encoding byte plus one backlen byte.
_LP_FLAGS: Final = 2
# The master entry's terminating "0" element.
_LP_MASTER_END: Final = 2


# ---------------------------------------------------------------------------------------
# Listpack size accounting (listpack.c: lpEncodeGetType, lpEncodeBacklen, lpStringToInt64)
# ---------------------------------------------------------------------------------------


def _lp_int_size(v: int) -> int:
    """Bytes of a listpack element holding the int64 ``v``, backlen included."""
    if 0 <= v <= 127:
        return 2
    if -4096 <= v <= 4095:
        return 3
    if -32768 <= v <= 32767:
        return 4
    if -8388608 <= v <= 8388607:
        return 5
    if -2147483648 <= v <= 2147483647:
        return 6
    return 10


def _lp_str_size(s: bytes) -> int:
    """Bytes of a listpack element holding ``s``, backlen included.

    listpack stores a string that is the canonical form of an int64 ("0", "-12", not "012",
    "+1" or "-0") as an integer, so it must be measured as one.
    """
    n = len(s)
    if 0 < n < 21:
        c = s[0]
        if 0x31 <= c <= 0x39:
            if n == 1 or s.isdigit():
                v = int(s)
                if v <= 0x7FFFFFFFFFFFFFFF:
                    return _lp_int_size(v)
        elif c == 0x30:
            if n == 1:
                return 2
        elif c == 0x2D and n > 1 and 0x31 <= s[1] <= 0x39 and s[1:].isdigit():
            v = int(s)
            if v >= -0x8000000000000000:
                return _lp_int_size(v)
    if n < 64:
        enc = 1 + n
    elif n < 4096:
        enc = 2 + n
    else:
        enc = 5 + n
    if enc <= 127:
        return enc + 1
    if enc < 16383:
        return enc + 2
    if enc < 2097151:
        return enc + 3
    if enc < 268435455:
        return enc + 4
    return enc + 5


def _as_int64(v: int) -> int:
    """``v`` (mod 2**64) seen as int64, as lpAppendInteger receives uint64 ID deltas."""
    v &= _M64
    return v - (1 << 64) if v >> 63 else v


def _lp_entry_size(
    entry_id: int,
    master_id: int,
    names: Sequence[bytes],
    values: Sequence[bytes],
    same: bool,
) -> int:
    """Listpack bytes of one entry: flags, ms-diff, seq-diff, [n, fields], values, lp-count."""
    size = (
        _LP_FLAGS
        + _lp_int_size(_as_int64((entry_id >> 64) - (master_id >> 64)))
        + _lp_int_size(_as_int64((entry_id & _M64) - (master_id & _M64)))
    )
    for v in values:
        size += _lp_str_size(v)
    n = len(values)
    if same:
        size += _lp_int_size(n + 3)
    else:
        size += _lp_int_size(n) + _lp_int_size(2 * n + 4)
        for f in names:
            size += _lp_str_size(f)
    return size


def _lp_master_size(names: Sequence[bytes]) -> int:
    """Listpack bytes of an empty node plus its master entry, count and deleted excluded."""
    size = _LP_EMPTY + _lp_int_size(len(names)) + _LP_MASTER_END
    for f in names:
        size += _lp_str_size(f)
    return size


# ---------------------------------------------------------------------------------------
# Varints for value lengths in node data
# ---------------------------------------------------------------------------------------


def _put_len(data: bytearray, n: int) -> None:
    while n >= 0x80:
        data.append((n & 0x7F) | 0x80)
        n >>= 7
    data.append(n)


def _get_len_slow(data: bytes | bytearray, p: int) -> tuple[int, int]:
    """Decode a multi-byte varint at ``p``; returns (value, position after it)."""
    n = 0
    shift = 0
    while True:
        b = data[p]
        p += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, p
        shift += 7


def total_len(items: list[bytes], start: int = 0) -> int:
    """Sum of the lengths of ``items[start:]`` (a loop: compiled, it beats sum(map(len, ...)))."""
    total = 0
    for j in range(start, len(items)):
        total += len(items[j])
    return total


def _pack(data: bytearray, items: list[bytes], start: int, step: int) -> tuple[int, bool]:
    """Append ``varint(len) + bytes`` for ``items[start::step]``; return their listpack size
    and whether any length needed a multi-byte varint.

    Sizing is fused with packing because XADD pays for it on every entry: a string that
    cannot be a number (first byte not a digit or '-') and is shorter than 64 bytes costs
    its length plus two bytes; the rest goes through ``_lp_str_size``.
    """
    lp = 0
    long = False
    j = start
    end = len(items)
    while j < end:  # a while loop: compiled, range() with a variable step is not native
        v = items[j]
        j += step
        n = len(v)
        if n < 0x80:
            data.append(n)
        else:
            _put_len(data, n)
            long = True
        data += v
        if 0 < n < 64 and (v[0] > 0x39 or v[0] < 0x2D):
            lp += n + 2
        else:
            lp += _lp_str_size(v)
    return lp, long


def _has_names(argv: list[bytes], first: int, names: list[bytes]) -> bool:
    """Whether ``argv[first::2]`` equals ``names``, without building the slice."""
    if len(argv) - first != 2 * len(names):
        return False
    j = first
    for name in names:
        if argv[j] != name:
            return False
        j += 2
    return True


# ---------------------------------------------------------------------------------------
# Nodes
# ---------------------------------------------------------------------------------------


class _Node:
    """One macro node: up to max_entries entries packed in a handful of objects.

    IDs: a *compact* node packs each ID as ``(ms - master_ms) << 32 | seq`` in an
    ``array('Q')``, so IDs in a node bisect as plain unsigned ints and cost 8 bytes.  That
    needs ``ms - master_ms < 2**32`` (about 49 days) and ``seq < 2**32``; the first ID that
    does not fit turns the node *wide*: ``keys`` becomes a list of absolute IDs.  Switching
    encoding instead of opening a new node keeps node boundaries identical to Redis's.
    """

    __slots__ = (
        "base_ms",
        "data",
        "dead",
        "fields",
        "long",
        "tmpl",
        "keys",
        "live",
        "lp_base",
        "master",
        "master_seq",
        "offsets",
        "own",
        "tombs",
        "wide",
    )

    master: int  # ID of the first entry (live or not): the node's key, like the rax key
    base_ms: int  # master >> 64: what a compact key is relative to
    master_seq: int  # master & (2**64 - 1)
    wide: bool  # keys are absolute IDs (list) instead of packed deltas (array('Q'))
    keys: array[int] | list[int]
    offsets: array[int]  # start of each entry in data
    data: bytes | bytearray  # bytearray while the node is the tail; bytes once sealed
    fields: list[bytes]  # master field names, shared between nodes when equal
    tmpl: list[bytes]  # [f1, b"", f2, b"", ...]: copied and filled in when decoding
    long: bool  # some varint in data takes more than one byte (a length >= 128)
    dead: int  # bit i set: entry i is deleted (Redis STREAM_ITEM_FLAG_DELETED)
    own: int  # bit i set: entry i stores its own field names (no SAMEFIELDS)
    live: int  # Redis master entry "count": entries not deleted
    tombs: int  # Redis master entry "deleted": entries marked deleted
    lp_base: int  # Redis listpack bytes of the node minus its count and deleted elements

    def id_at(self, i: int) -> int:
        k = self.keys[i]
        if self.wide:
            return k
        return ((self.base_ms + (k >> 32)) << 64) | (k & _M32)

    def reaches(self, ms: int, seq: int, entry_id: int) -> bool:
        """Whether the node's last stored ID is >= ``entry_id`` (also given as ms, seq),
        computed on packed keys so the XADD path does no 128-bit arithmetic."""
        keys = self.keys
        if self.wide:
            return keys[-1] >= entry_id
        msd = ms - self.base_ms
        if msd < 0:
            return True
        if msd >> 32:
            return False
        # A seq beyond 32 bits sorts after every packed key of that ms delta (as in lower).
        return keys[-1] >= ((msd + 1) << 32 if seq >> 32 else (msd << 32) | seq)

    def lower(self, x: int) -> int:
        """Index of the first entry whose ID is >= x (len(keys) if none)."""
        if x <= self.master:
            return 0
        keys = self.keys
        if self.wide:
            return bisect_left(keys, x)
        msd = (x >> 64) - self.base_ms
        if msd >> 32:
            return len(keys)
        seq = x & _M64
        # A seq beyond 32 bits sorts after every packed key of that ms delta.
        k = (msd + 1) << 32 if seq >> 32 else (msd << 32) | seq
        return bisect_left(keys, k)

    def upper(self, x: int) -> int:
        """Index of the first entry whose ID is > x."""
        return len(self.keys) if x >= MAX_ID else self.lower(x + 1)

    def lp_bytes(self) -> int:
        return self.lp_base + _lp_int_size(self.live) + _lp_int_size(self.tombs)

    def fields_at(self, i: int) -> list[bytes]:
        """The flat [f1, v1, ...] list of entry i."""
        # bytes, or the tail node's bytearray (its slices are converted at the end). Any, not
        # a cast: compiled code checks casts at run time.
        data: Any = self.data
        tail = type(self.data) is bytearray
        p = self.offsets[i]
        out: list[Any] = []  # bytearray slices for the tail until the end
        if (self.own >> i) & 1:
            npairs = data[p]
            p += 1
            if npairs >= 0x80:
                npairs, p = _get_len_slow(data, p - 1)
            for _ in range(2 * npairs):
                n = data[p]
                p += 1
                if n >= 0x80:
                    n, p = _get_len_slow(data, p - 1)
                out.append(data[p : p + n])
                p += n
            if tail:
                return [bytes(x) for x in out]
            return out
        for f in self.fields:
            n = data[p]
            p += 1
            if n >= 0x80:
                n, p = _get_len_slow(data, p - 1)
            out.append(f)
            out.append(data[p : p + n])
            p += n
        if tail:
            # Slices of the tail's bytearray are bytearrays; callers get bytes.
            return [bytes(x) for x in out]
        return out

    def to_wide(self) -> None:
        self.keys = [self.id_at(i) for i in range(len(self.keys))]
        self.wide = True

    def seal(self) -> None:
        """Drop growth slack once the node stops being the tail (Redis lpShrinkToFit)."""
        if type(self.data) is bytearray:
            self.data = bytes(self.data)
        self.keys = self.keys[:]
        self.offsets = self.offsets[:]

    def clone(self) -> _Node:
        n = _Node.__new__(_Node)
        n.master = self.master
        n.base_ms = self.base_ms
        n.master_seq = self.master_seq
        n.wide = self.wide
        n.keys = self.keys[:]
        n.offsets = self.offsets[:]
        n.data = bytearray(self.data) if type(self.data) is bytearray else self.data
        n.fields = self.fields  # never mutated after creation
        n.tmpl = self.tmpl
        n.long = self.long
        n.dead = self.dead
        n.own = self.own
        n.live = self.live
        n.tombs = self.tombs
        n.lp_base = self.lp_base
        return n

    def last_live_index(self) -> int:
        """Highest index of a live entry; -1 if none."""
        i = len(self.keys) - 1
        dead = self.dead
        while i >= 0 and (dead >> i) & 1:
            i -= 1
        return i

    def first_live_index(self) -> int:
        """Lowest index of a live entry; len(keys) if none."""
        dead = self.dead
        # Lowest zero bit of dead = lowest set bit of ~dead.
        return ((dead + 1) & ~dead).bit_length() - 1


def _collect(node: _Node, lo: int, hi: int, rev: bool, limit: int, out: list[tuple[int, list[bytes]]]) -> None:
    """Append the live entries of ``node`` with index in [lo, hi) to ``out`` (descending if
    rev) until ``len(out) == limit`` (0 = no limit).  This is the XRANGE/XREAD hot loop."""
    keys = node.keys
    offsets = node.offsets
    dead = node.dead
    own = node.own
    mf = node.fields
    wide = node.wide
    base_ms = node.base_ms
    raw = node.data
    # Slicing bytes yields bytes.  The tail's bytearray is snapshot once per call while it is
    # small (a memcpy of at most 64 KiB); past that, entries go through fields_at().
    slow = False
    if type(raw) is bytearray:
        slow = len(raw) > 0x10000
        raw = bytes(raw) if not slow else raw
    data: Any = raw  # slices of it are bytes unless `slow`
    order = range(hi - 1, lo - 1, -1) if rev else range(lo, hi)
    if not node.long and not slow:
        # Every length in this node is a one-byte varint: the common, fast case.
        tmpl = node.tmpl
        odd = range(1, len(tmpl), 2)
        for i in order:
            if dead and (dead >> i) & 1:
                continue
            k = keys[i]
            eid = k if wide else ((base_ms + (k >> 32)) << 64) | (k & _M32)
            if own and (own >> i) & 1:
                out.append((eid, node.fields_at(i)))
            else:
                p = offsets[i]
                flat = tmpl[:]
                for j in odd:
                    q = p + 1 + data[p]
                    flat[j] = data[p + 1 : q]
                    p = q
                out.append((eid, flat))
            if len(out) == limit:
                return
        return
    for i in order:
        if dead and (dead >> i) & 1:
            continue
        k = keys[i]
        eid = k if wide else ((base_ms + (k >> 32)) << 64) | (k & _M32)
        if slow or (own and (own >> i) & 1):
            out.append((eid, node.fields_at(i)))
        else:
            p = offsets[i]
            flat = []
            for f in mf:
                n = data[p]
                if n < 0x80:
                    p += 1
                else:
                    n, p = _get_len_slow(data, p)
                flat.append(f)
                flat.append(data[p : p + n])
                p += n
            out.append((eid, flat))
        if len(out) == limit:
            return


def _new_node(entry_id: int, names: list[bytes], tmpl: list[bytes] | None) -> _Node:
    node = _Node.__new__(_Node)
    node.master = entry_id
    node.base_ms = entry_id >> 64
    node.master_seq = entry_id & _M64
    node.wide = False
    node.keys = array("Q")
    node.offsets = array("I")
    node.data = bytearray()
    node.fields = names
    node.tmpl = tmpl if tmpl is not None else [x for f in names for x in (f, b"")]
    node.long = False
    node.dead = 0
    node.own = 0
    node.live = 0
    node.tombs = 0
    node.lp_base = _lp_master_size(names)
    return node


_CRLF: Final = b"\r\n"
# b"*2\r\n$<n>\r\n": the head of an entry whose ID is n bytes long (3 to 41).
_ENTRY_HEADS: Final = tuple(b"*2\r\n$%d\r\n" % n for n in range(42))
_BULK_HEADS: Final = tuple(b"$%d\r\n" % n for n in range(256))


def _bulk_head(n: int) -> bytes:
    return _BULK_HEADS[n] if n < 256 else b"$%d\r\n" % n


def _encode_span(
    node: _Node,
    lo: int,
    hi: int,
    rev: bool,
    limit: int,
    n: int,
    out: list[Any],
    ids: list[int] | None,
    raw_ids: list[bytes],
) -> int:
    """Append the RESP of the live entries of ``node`` with index in [lo, hi) (descending if
    rev) to ``out`` until ``n`` (the entries written so far) reaches ``limit`` (0 = no
    limit); returns the new ``n``.  The XRANGE/XREAD hot loop (see Stream.range_resp)."""
    keys = node.keys
    offsets = node.offsets
    dead = node.dead
    own = node.own
    wide = node.wide
    base_ms = node.base_ms
    # Slices of the tail's bytearray are bytearrays, which b"".join takes as they are.
    data: Any = node.data
    heads = [b"$%d\r\n%s\r\n" % (len(f), f) for f in node.fields]
    # Ends the ID's bulk string and opens the fields array of a master-fields entry.
    fields_head = b"\r\n*%d\r\n" % (2 * len(heads))
    fast = not node.long
    cur_ms = -1
    prefix = b""
    step = -1 if rev else 1
    i = hi - 1 if rev else lo
    stop = lo - 1 if rev else hi
    while i != stop:
        if dead and (dead >> i) & 1:
            i += step
            continue
        k = keys[i]
        if wide:
            ms = k >> 64
            seq = k & _M64
        else:
            ms = base_ms + (k >> 32)
            seq = k & _M32
        if ms != cur_ms:
            cur_ms = ms
            prefix = b"%d-" % ms
        raw_id = prefix + decimal(seq)
        out.append(_ENTRY_HEADS[len(raw_id)])
        out.append(raw_id)
        if ids is not None:
            ids.append(k if wide else (ms << 64) | seq)
            raw_ids.append(raw_id)
        if own and (own >> i) & 1 or not fast:
            flat = node.fields_at(i)
            out.append(b"\r\n*%d\r\n" % len(flat))
            for item in flat:
                out.append(_bulk_head(len(item)))
                out.append(item)
                out.append(_CRLF)
        else:
            out.append(fields_head)
            p = offsets[i]
            for head in heads:
                size = data[p]
                q = p + 1 + size
                out.append(head)
                out.append(_bulk_head(size))
                out.append(data[p + 1 : q])
                out.append(_CRLF)
                p = q
        n += 1
        if n == limit:
            return n
        i += step
    return n


# The C appender of logged XADDs (node/engine/_logged_xadd.c), if built: its `xadd_block`
# and `append_run` (see Stream.append_logged_run).
def _native_block() -> Callable[[bytes, int], tuple[int, list[tuple[bytes, bytes]]]] | None:
    try:
        from node.engine._logged_xadd import xadd_block
    except ImportError:
        return None
    return xadd_block


def _native_append_run() -> Callable[..., tuple[int, int, bytes, bytes, int, int, int]] | None:
    try:
        from node.engine._logged_xadd import append_run
    except ImportError:
        return None
    return append_run


_NATIVE_BLOCK: Final = _native_block()
_NATIVE_APPEND_RUN: Final = _native_append_run()


def logged_xadd_block(data: bytes, pos: int) -> tuple[int, list[tuple[bytes, bytes]]]:
    """The XADD effects in the form the effect log gives every XADD (``XADD key ms-seq field
    value ...``) that follow each other from ``data[pos:]``: where they end, and their start
    positions grouped by stream (``(key, array('q') bytes)``, streams in the order they first
    appear, positions in log order). XADDs to different streams commute, so the block may be
    applied stream by stream. ``(pos, [])`` when the command there is anything else, and
    always without the native build."""
    if _NATIVE_BLOCK is None:
        return pos, []
    return _NATIVE_BLOCK(data, pos)


# ---------------------------------------------------------------------------------------
# The stream
# ---------------------------------------------------------------------------------------


class Stream:
    """Entries of one stream key plus the counters XINFO and consumer groups rely on."""

    __slots__ = (
        "_last_id",
        "_masters",
        "_nodes",
        "entries_added",
        "last_ms",
        "last_seq",
        "length",
        "max_deleted_id",
    )

    length: int  # live entries
    _last_id: int  # see last_id
    last_ms: int  # last_id >> 64, kept beside it: XADD * reads it on every call
    last_seq: int  # last_id & (2**64 - 1)
    max_deleted_id: int  # greatest ID removed by XDEL (Redis max_deleted_entry_id)
    entries_added: int  # entries ever added (Redis entries_added); XSETID may set it

    def __init__(self) -> None:
        self._masters: list[int] = []
        self._nodes: list[_Node] = []
        self.length = 0
        self.last_id = 0
        self.max_deleted_id = 0
        self.entries_added = 0

    @property
    def last_id(self) -> int:
        """Last ID ever added or set by XSETID (Redis last_id)."""
        return self._last_id

    @last_id.setter
    def last_id(self, value: int) -> None:
        self._last_id = value
        self.last_ms = value >> 64
        self.last_seq = value & _M64

    # -- writing -------------------------------------------------------------------------

    def add(
        self,
        entry_id: int,
        fields: Sequence[bytes],
        max_entries: int = 100,
        max_bytes: int = 4096,
    ) -> None:
        """Append one entry (XADD).  The caller guarantees ``entry_id > last_id`` and an even
        ``len(fields) >= 2``; ``max_entries`` / ``max_bytes`` are stream-node-max-entries /
        stream-node-max-bytes (0 = unlimited) read at the time of the add, as Redis does."""
        items = fields if isinstance(fields, list) else list(fields)
        self.append(entry_id >> 64, entry_id & _M64, entry_id, items, 0, total_len(items), max_entries, max_bytes)

    def append(
        self,
        ms: int,
        seq: int,
        entry_id: int,
        argv: list[bytes],
        first: int,
        size: int,
        max_entries: int,
        max_bytes: int,
    ) -> None:
        """``add`` for the XADD hot path, which has the pieces at hand: the ID both whole and
        as (ms, seq), the fields as ``argv[first:]`` (not sliced out) and their total length
        ``size``.  Everything here stays in small ints: a 128-bit ID is a heap object."""
        nodes = self._nodes
        node = nodes[-1] if nodes else None
        if node is not None and node.reaches(ms, seq, entry_id):
            self._drop_stale_tombstones(entry_id)
            node = nodes[-1] if nodes else None
        if node is not None:
            # streamAppendItem's split rule, checked before the count is incremented.
            cap = max_bytes if 0 < max_bytes <= LP_MAX_SIZE else LP_MAX_SIZE
            if node.lp_bytes() + size >= cap or (max_entries and node.live + node.tombs >= max_entries):
                node.seal()
                node = None
        if node is None:
            names = argv[first::2]
            tmpl = None
            if nodes and nodes[-1].fields == names:
                # Share the lists between consecutive nodes of the same shape.
                names = nodes[-1].fields
                tmpl = nodes[-1].tmpl
            node = _new_node(entry_id, names, tmpl)
            nodes.append(node)
            self._masters.append(entry_id)
            same = True
        else:
            same = _has_names(argv, first, node.fields)
            if type(node.data) is bytes:
                # The tail was sealed and the node after it removed by XDEL.
                node.data = bytearray(node.data)

        keys = node.keys
        i = len(keys)
        msd = ms - node.base_ms
        if node.wide:
            keys.append(entry_id)
        elif msd >> 32 or seq >> 32:
            node.to_wide()
            node.keys.append(entry_id)
        else:
            keys.append((msd << 32) | seq)

        data = node.data
        assert type(data) is bytearray
        node.offsets.append(len(data))
        nv = (len(argv) - first) >> 1
        if node.wide:
            lp = _LP_FLAGS + _lp_int_size(_as_int64(msd)) + _lp_int_size(_as_int64(seq - node.master_seq))
        else:
            # Both deltas fit in 32 bits here, so they need no int64 wrap-around.
            lp = _LP_FLAGS + _lp_int_size(msd) + _lp_int_size(seq - node.master_seq)
        if same:
            packed, long = _pack(data, argv, first + 1, 2)
            lp += packed + _lp_int_size(nv + 3)
        else:
            node.own |= 1 << i
            _put_len(data, nv)
            packed, long = _pack(data, argv, first, 1)
            lp += packed + _lp_int_size(nv) + _lp_int_size(2 * nv + 4)
            long = long or nv >= 0x80
        if long:
            node.long = True
        node.lp_base += lp
        node.live += 1
        self.length += 1
        self.entries_added += 1
        self._last_id = entry_id
        self.last_ms = ms
        self.last_seq = seq

    def append_logged_run(
        self, data: bytes, positions: bytes, index: int, key: bytes, max_entries: int, max_bytes: int
    ) -> tuple[int, int]:
        """Appends, in C and straight from the log's bytes, the XADD effects to ``key`` (this
        stream) that start at ``positions[index:]`` (a group from `logged_xadd_block`), while
        each is an entry ``append`` would add to the current tail node with its master
        fields; returns the index it stopped at and how many it appended (``(index, 0)``
        when the first is anything else: a new node, other fields, an error, or no native
        build). The caller runs that one the ordinary way and may call again after it."""
        nodes = self._nodes
        append_run = _NATIVE_APPEND_RUN
        if append_run is None or not nodes:
            return index, 0
        node = nodes[-1]
        out = node.data
        keys = node.keys
        if node.wide or type(out) is not bytearray or type(keys) is not array:
            return index, 0
        cap = max_bytes if 0 < max_bytes <= LP_MAX_SIZE else LP_MAX_SIZE
        stop, count, packed_keys, offsets, lp, last_ms, last_seq = append_run(
            data, positions, index, key, node.fields, out, node.base_ms, node.master_seq, keys[-1], self.last_ms,
            self.last_seq, node.lp_base, node.live, node.tombs, cap, max_entries,
        )
        if count:
            keys.frombytes(packed_keys)
            node.offsets.frombytes(offsets)
            node.lp_base += lp
            node.live += count
            self.length += count
            self.entries_added += count
            self.last_id = (last_ms << 64) | last_seq
        return stop, count

    def _drop_stale_tombstones(self, entry_id: int) -> None:
        """Physically remove stored entries with IDs >= ``entry_id`` before adding it.

        They can only be tombstones left above ``last_id`` by XSETID (which Redis checks
        against the last *live* ID) or by an exact MINID trim that emptied the head node.
        Redis appends after them, leaving its listpack out of ID order; no read can see the
        difference, but bisecting needs sorted IDs, so Rill drops them instead.  Only node
        byte/count accounting (hence later split points) can differ from Redis here.
        """
        nodes = self._nodes
        while nodes:
            node = nodes[-1]
            n = len(node.keys)
            cut = node.lower(entry_id)
            if cut == n:
                return
            for i in range(cut, n):
                assert (node.dead >> i) & 1, "a live entry above last_id"
                flat = node.fields_at(i)
                same = not (node.own >> i) & 1
                node.lp_base -= _lp_entry_size(node.id_at(i), node.master, flat[0::2], flat[1::2], same)
            if cut == 0:
                del nodes[-1]
                del self._masters[-1]
                continue
            data = node.data if type(node.data) is bytearray else bytearray(node.data)
            del data[node.offsets[cut] :]
            node.data = data
            del node.keys[cut:]
            del node.offsets[cut:]
            node.dead &= (1 << cut) - 1
            node.own &= (1 << cut) - 1
            node.tombs -= n - cut
            return

    def delete(self, entry_id: int) -> bool:
        """XDEL of one ID: True if a live entry was removed."""
        j = bisect_right(self._masters, entry_id) - 1
        if j < 0:
            return False
        node = self._nodes[j]
        i = node.lower(entry_id)
        if i >= len(node.keys) or node.id_at(i) != entry_id or (node.dead >> i) & 1:
            return False
        node.dead |= 1 << i
        node.live -= 1
        node.tombs += 1
        self.length -= 1
        self.max_deleted_id = max(self.max_deleted_id, entry_id)
        if node.live == 0:
            # streamIteratorRemoveEntry frees the listpack when its last live entry goes.
            del self._nodes[j]
            del self._masters[j]
        return True

    def trim_maxlen(self, maxlen: int, approx: bool, limit: int) -> int:
        """XTRIM MAXLEN (Redis streamTrim); returns the number of entries removed."""
        return self._trim(maxlen, -1, approx, limit)

    def trim_minid(self, minid: int, approx: bool, limit: int) -> int:
        """XTRIM MINID (Redis streamTrim); returns the number of entries removed."""
        return self._trim(-1, minid, approx, limit)

    def _trim(self, maxlen: int, minid: int, approx: bool, limit: int) -> int:
        """streamTrim, step for step.  Exactly one of maxlen / minid is >= 0.

        Walk nodes from the head.  A node goes whole when that keeps length >= maxlen (or
        its last entry, tombstones included, is < minid).  ``limit`` (0 = none) stops before a
        node whose live entries would take the removed total past it.  With ``approx`` the
        walk stops at the first node that cannot go whole; otherwise that node's entries are
        tombstoned from its start until the condition holds.  Like Redis, this leaves
        max_deleted_id alone, and a MINID trim can leave a node with no live entry (when its
        last entry is a tombstone >= minid): Redis keeps that node, so do we.
        """
        by_len = maxlen >= 0
        nodes = self._nodes
        removed = 0
        gone = 0  # whole nodes removed from the head
        for node in nodes:
            if by_len and self.length <= maxlen:
                break
            entries = node.live
            if limit and removed + entries > limit:
                break
            if by_len:
                whole = self.length - entries >= maxlen
            else:
                whole = node.id_at(len(node.keys) - 1) < minid
            if whole:
                gone += 1
                self.length -= entries
                removed += entries
                continue
            if approx:
                break
            dead = node.dead
            marked = 0
            for i in range(len(node.keys)):
                if by_len:
                    if self.length <= maxlen:
                        break
                elif node.id_at(i) >= minid:
                    break
                if not (dead >> i) & 1:
                    dead |= 1 << i
                    marked += 1
                    self.length -= 1
            node.dead = dead
            node.live -= marked
            node.tombs += marked
            removed += marked
            break
        if gone:
            del nodes[:gone]
            del self._masters[:gone]
        return removed

    # -- reading -------------------------------------------------------------------------

    def first_id(self) -> int:
        """ID of the first live entry, 0 when the stream is empty."""
        for node in self._nodes:
            if node.live:
                return node.id_at(node.first_live_index())
        return 0

    def last_live_id(self) -> int:
        """ID of the last live entry, 0 when empty (may be < last_id after XDEL)."""
        for node in reversed(self._nodes):
            if node.live:
                return node.id_at(node.last_live_index())
        return 0

    def get(self, entry_id: int) -> list[bytes] | None:
        """Fields of the live entry ``entry_id``, None if absent or deleted."""
        j = bisect_right(self._masters, entry_id) - 1
        if j < 0:
            return None
        node = self._nodes[j]
        i = node.lower(entry_id)
        if i >= len(node.keys) or node.id_at(i) != entry_id or (node.dead >> i) & 1:
            return None
        return node.fields_at(i)

    def contains(self, entry_id: int) -> bool:
        j = bisect_right(self._masters, entry_id) - 1
        if j < 0:
            return False
        node = self._nodes[j]
        i = node.lower(entry_id)
        return i < len(node.keys) and node.id_at(i) == entry_id and not (node.dead >> i) & 1

    def range(self, start: int, end: int, count: int = 0, rev: bool = False) -> list[tuple[int, list[bytes]]]:
        """Live entries with start <= ID <= end, ascending (descending with rev), at most
        ``count`` of them (0 = all).  O(log N + M)."""
        out: list[tuple[int, list[bytes]]] = []
        for node, lo, hi in self._spans(start, end, rev):
            _collect(node, lo, hi, rev, count, out)
            if count and len(out) >= count:
                break
        return out

    def range_resp(
        self,
        start: int,
        end: int,
        count: int,
        rev: bool,
        out: list[Any],
        ids: list[int] | None = None,
        raw_ids: list[bytes] | None = None,
    ) -> int:
        """``range`` written as RESP: appends each entry's ``*2 <id> *2n <field> <value> ...``
        to ``out`` (the caller adds the array header) straight from the packed nodes, with
        no tuple, list or int per entry; returns the number of entries.  With ``ids`` the
        entries' IDs are appended to it too (XREADGROUP records them as pending), and their
        wire forms to ``raw_ids`` (its effects name them: no second formatting).

        This is the reply of XRANGE, XREVRANGE, XREAD and XREADGROUP, so it lives beside
        the storage it reads, like Redis's streamReplyWithRange in t_stream.c."""
        n = 0
        raw = raw_ids if raw_ids is not None else []
        for node, lo, hi in self._spans(start, end, rev):
            n = _encode_span(node, lo, hi, rev, count, n, out, ids, raw)
            if count and n >= count:
                break
        return n

    def iter_range(self, start: int, end: int, rev: bool = False) -> Iterator[tuple[int, list[bytes]]]:
        """Lazy ``range``, decoding one node at a time.  Do not modify the stream while
        iterating."""
        for node, lo, hi in self._spans(start, end, rev):
            batch: list[tuple[int, list[bytes]]] = []
            _collect(node, lo, hi, rev, 0, batch)
            yield from batch

    def _spans(self, start: int, end: int, rev: bool) -> Iterator[tuple[_Node, int, int]]:
        """(node, lo, hi): the index runs [lo, hi) of each node that holds IDs in
        [start, end], in iteration order."""
        if start > end:
            return
        masters = self._masters
        nodes = self._nodes
        if not rev:
            j = max(bisect_right(masters, start) - 1, 0)
            lo = nodes[j].lower(start) if nodes else 0
            while j < len(nodes):
                node = nodes[j]
                if node.master > end:
                    return
                hi = node.upper(end)
                yield node, lo, hi
                if hi < len(node.keys):
                    return
                lo = 0
                j += 1
        else:
            j = bisect_right(masters, end) - 1
            while j >= 0:
                node = nodes[j]
                yield node, node.lower(start), node.upper(end)
                if node.master <= start:
                    return
                j -= 1

    def iter_all(self) -> Iterator[tuple[int, list[bytes]]]:
        """Every live entry in ID order (snapshots, digests)."""
        for node in self._nodes:
            dead = node.dead
            for i in range(len(node.keys)):
                if not (dead >> i) & 1:
                    yield node.id_at(i), node.fields_at(i)

    # -- introspection -------------------------------------------------------------------

    def node_count(self) -> int:
        """Number of macro nodes (XINFO STREAM radix-tree-keys)."""
        return len(self._nodes)

    def memory_bytes(self) -> int:
        """Approximate bytes held by this stream's Python objects (MEMORY USAGE)."""
        getsizeof = sys.getsizeof
        total = getsizeof(self) + getsizeof(self._masters) + getsizeof(self._nodes)
        seen_fields: set[int] = set()
        for node in self._nodes:
            total += (
                getsizeof(node)
                + getsizeof(node.master)
                + getsizeof(node.keys)
                + getsizeof(node.offsets)
                + getsizeof(node.data)
            )
            if node.dead:
                total += getsizeof(node.dead)
            if node.own:
                total += getsizeof(node.own)
            if id(node.fields) not in seen_fields:
                seen_fields.add(id(node.fields))
                total += getsizeof(node.fields) + sum(getsizeof(f) for f in node.fields)
        return total

    def copy(self) -> Stream:
        """Independent deep copy (byte strings, being immutable, are shared)."""
        s = Stream()
        self.copy_into(s)
        return s

    def copy_into(self, s: Stream) -> None:
        """Make ``s`` (a fresh Stream, or a subclass's instance) an independent copy."""
        s._masters = self._masters[:]
        s._nodes = [n.clone() for n in self._nodes]
        s.length = self.length
        s.last_id = self.last_id
        s.max_deleted_id = self.max_deleted_id
        s.entries_added = self.entries_added

    # -- snapshots -----------------------------------------------------------------------

    def dump_nodes(self, out: list[bytes]) -> None:
        """Append the nodes to ``out`` as raw bytes, in the layout ``load_nodes`` reads.

        Snapshots copy the packed storage as it is (keys, offsets, data, bitmasks and the
        listpack size accounting), so loading costs a few array copies per node instead of
        one XADD per entry.  Arrays are written little-endian.  Layout per node: a
        ``_NODE_HEAD``, the keys (compact: one u64 each; wide: all high then all low u64
        halves), the u32 offsets, the data, the ``dead`` and ``own`` bitmasks, then the
        master field names unless the node shares the previous node's.
        """
        out.append(_U32.pack(len(self._nodes)))
        previous: list[bytes] | None = None
        for node in self._nodes:
            n = len(node.keys)
            same = node.fields is previous or node.fields == previous
            flags = (_WIDE if node.wide else 0) | (_LONG if node.long else 0) | (_SAME_FIELDS if same else 0)
            dead = node.dead.to_bytes((node.dead.bit_length() + 7) // 8, "little")
            own = node.own.to_bytes((node.own.bit_length() + 7) // 8, "little")
            out.append(
                _NODE_HEAD.pack(
                    node.master >> 64, node.master & _M64, flags, n, len(node.data), node.live,
                    node.tombs, node.lp_base, len(dead), len(own), len(node.fields),
                )
            )
            if node.wide:
                out.append(le_bytes(array("Q", [k >> 64 for k in node.keys])))
                out.append(le_bytes(array("Q", [k & _M64 for k in node.keys])))
            else:
                out.append(le_bytes(cast("array[int]", node.keys)))
            out.append(le_bytes(node.offsets))
            out.append(bytes(node.data) if type(node.data) is bytearray else cast(bytes, node.data))
            out.append(dead)
            out.append(own)
            if not same:
                for f in node.fields:
                    out.append(_U32.pack(len(f)))
                    out.append(f)
            previous = node.fields

    def load_nodes(self, buf: bytes | memoryview, pos: int) -> int:
        """Replace the nodes with those ``dump_nodes`` wrote at ``buf[pos:]``; returns the
        position after them.  The counters (length, last_id, ...) are the caller's to set.
        Raises ValueError when the bytes do not hold well-formed nodes."""
        view = memoryview(buf)
        end = len(view)
        (count,) = _U32.unpack_from(view, pos)
        pos += 4
        nodes: list[_Node] = []
        masters: list[int] = []
        fields: list[bytes] = []
        tmpl: list[bytes] = []
        head = _NODE_HEAD
        for _ in range(count):
            (hi, lo, flags, n, dlen, live, tombs, lp_base, dead_len, own_len, nfields) = head.unpack_from(view, pos)
            pos += head.size
            if n == 0 or pos + 12 * n + dlen + dead_len + own_len > end:
                raise ValueError("stream node out of bounds")
            node = _Node.__new__(_Node)
            master = (hi << 64) | lo
            node.master = master
            node.base_ms = hi
            node.master_seq = lo
            node.wide = bool(flags & _WIDE)
            node.long = bool(flags & _LONG)
            if node.wide:
                his = array_from_le("Q", view[pos : pos + 8 * n])
                los = array_from_le("Q", view[pos + 8 * n : pos + 16 * n])
                pos += 16 * n
                node.keys = [(h << 64) | x for h, x in zip(his, los)]
            else:
                node.keys = array_from_le("Q", view[pos : pos + 8 * n])
                pos += 8 * n
            node.offsets = array_from_le("I", view[pos : pos + 4 * n])
            pos += 4 * n
            if len(node.keys) != n or len(node.offsets) != n:
                raise ValueError("stream node keys out of bounds")
            node.data = bytes(view[pos : pos + dlen])
            pos += dlen
            node.dead = int.from_bytes(view[pos : pos + dead_len], "little")
            pos += dead_len
            node.own = int.from_bytes(view[pos : pos + own_len], "little")
            pos += own_len
            if not flags & _SAME_FIELDS or not nodes:
                fields = []
                for _ in range(nfields):
                    (flen,) = _U32.unpack_from(view, pos)
                    pos += 4
                    fields.append(bytes(view[pos : pos + flen]))
                    pos += flen
                tmpl = [x for f in fields for x in (f, b"")]
            if len(fields) != nfields or pos > end:
                raise ValueError("stream node fields out of bounds")
            node.fields = fields
            node.tmpl = tmpl
            node.live = live
            node.tombs = tombs
            node.lp_base = lp_base
            nodes.append(node)
            masters.append(master)
        self._nodes = nodes
        self._masters = masters
        return pos

    def _check(self) -> None:
        """Assert every invariant of the structure (tests and debugging only)."""
        masters = self._masters
        nodes = self._nodes
        assert len(masters) == len(nodes)
        assert self.length >= 0
        total_live = 0
        prev = -1
        for j, node in enumerate(nodes):
            n = len(node.keys)
            assert n >= 1, "node without entries"
            assert len(node.offsets) == n
            assert masters[j] == node.master
            assert node.base_ms == node.master >> 64 and node.master_seq == node.master & _M64
            assert node.tmpl == [x for f in node.fields for x in (f, b"")]
            assert node.dead >> n == 0 and node.own >> n == 0
            tombs = node.dead.bit_count()
            assert node.tombs == tombs and node.live == n - tombs
            # Only the trim quirk leaves a node without live entries, and only at the head.
            assert node.live > 0 or j == 0, "empty node after the head"
            if node.wide:
                assert type(node.keys) is list
            else:
                assert isinstance(node.keys, array) and node.keys.typecode == "Q"
                for k in node.keys:
                    assert (k >> 32) < (1 << 32)
            if j < len(nodes) - 1:
                assert type(node.data) is bytes, "non-tail node not sealed"
            ids = [node.id_at(i) for i in range(n)]
            assert ids[0] == node.master
            for x in ids:
                assert x > prev, "IDs not strictly increasing"
                prev = x
            # Decode everything, check offsets are exact, recompute the listpack size.
            data = node.data
            lp = _lp_master_size(node.fields)
            for i in range(n):
                p = node.offsets[i]
                end = node.offsets[i + 1] if i + 1 < n else len(data)
                assert p < end <= len(data)
                flat = node.fields_at(i)
                assert len(flat) >= 2 and len(flat) % 2 == 0
                assert all(type(x) is bytes for x in flat)
                names = flat[0::2]
                values = flat[1::2]
                same = not (node.own >> i) & 1
                if same:
                    assert names == node.fields
                    size = sum(_varint_size(len(v)) + len(v) for v in values)
                else:
                    size = _varint_size(len(values)) + sum(_varint_size(len(x)) + len(x) for x in flat)
                assert p + size == end, "entry does not fill its slot"
                if not node.long:
                    stored = values if same else [*flat, b"x" * len(values)]
                    assert max(map(len, stored)) < 0x80, "long flag unset"
                lp += _lp_entry_size(ids[i], node.master, names, values, same)
            assert lp == node.lp_base, "listpack size accounting drifted"
            total_live += node.live
        assert total_live == self.length
        # XSETID may leave last_id below stored tombstones (and below max_deleted_id), as in
        # Redis, but never below a live entry.
        assert self.last_id >= self.last_live_id(), "last_id below the last live ID"
        assert self.entries_added >= self.length


def _varint_size(n: int) -> int:
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


# Snapshot layout of one node (``Stream.dump_nodes``): master ID (high, low), flags, entry
# count, data bytes, live, tombstones, listpack size, dead/own bitmask bytes, field count.
_NODE_HEAD: Final = struct.Struct("<QQBIIIIQIII")
_U32: Final = struct.Struct("<I")
_WIDE: Final = 1
_LONG: Final = 2
_SAME_FIELDS: Final = 4


def le_bytes(a: array[int]) -> bytes:
    """The array's items as little-endian bytes (the snapshot byte order)."""
    if sys.byteorder == "little":
        return a.tobytes()
    b = array(a.typecode, a)
    b.byteswap()
    return b.tobytes()


def array_from_le(typecode: str, raw: memoryview) -> array[int]:
    """An array of `typecode` from little-endian bytes (ValueError unless whole items)."""
    a = array(typecode)
    a.frombytes(raw)
    if sys.byteorder == "big":
        a.byteswap()
    return a
