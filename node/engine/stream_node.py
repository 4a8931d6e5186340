"""One stream node: up to stream-node-max-entries entries packed in a handful of objects
(node/engine/stream.py describes the layout), how it is created, and how its entries are read
back as (ID, [field, value, ...]).
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from typing import Any, Final

from node.engine.ids import MAX_ID
from node.engine.listpack_size import lp_int_size, lp_master_size
from node.engine.node_values import get_len_slow

_M32: Final = 0xFFFFFFFF
_M64: Final = 0xFFFFFFFFFFFFFFFF
# The StreamNode object (15 slots) and the ints it holds (master ID, base ms, sequence).
_NODE_BASE: Final = 140 + 44 + 3 * 32


class StreamNode:
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
        return self.lp_base + lp_int_size(self.live) + lp_int_size(self.tombs)

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
                npairs, p = get_len_slow(data, p - 1)
            for _ in range(2 * npairs):
                n = data[p]
                p += 1
                if n >= 0x80:
                    n, p = get_len_slow(data, p - 1)
                out.append(data[p : p + n])
                p += n
            if tail:
                return [bytes(x) for x in out]
            return out
        for f in self.fields:
            n = data[p]
            p += 1
            if n >= 0x80:
                n, p = get_len_slow(data, p - 1)
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

    def memory_estimate(self) -> int:
        """Bytes of the node's packed entries and its own ints, in O(1): what
        Stream.memory_estimate sums (it does not change while the node is not the tail)."""
        return _NODE_BASE + sys.getsizeof(self.keys) + sys.getsizeof(self.offsets) + sys.getsizeof(self.data)

    def clone(self) -> StreamNode:
        n = StreamNode.__new__(StreamNode)
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


def collect_entries(node: StreamNode, lo: int, hi: int, rev: bool, limit: int, out: list[tuple[int, list[bytes]]]) -> None:
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
                    n, p = get_len_slow(data, p)
                flat.append(f)
                flat.append(data[p : p + n])
                p += n
            out.append((eid, flat))
        if len(out) == limit:
            return


def new_node(entry_id: int, names: list[bytes], tmpl: list[bytes] | None) -> StreamNode:
    node = StreamNode.__new__(StreamNode)
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
    node.lp_base = lp_master_size(names)
    return node
