"""The stream data type: entries packed into append-only macro nodes, no object per entry.

This module owns the storage of one stream's entries and the Redis rules that act on that
storage (node split on XADD, tombstones on XDEL, exact and ``~`` trimming).  It knows nothing
about consumer groups, commands or replies.

Layout (mirrors Redis's radix tree of listpacks, t_stream.c):

* Entries live in *nodes* (``StreamNode``, node/engine/stream_node.py).  ``Stream.masters`` is
  a sorted list of each node's master ID (the ID of its first entry, tombstone or not, like
  the rax key) and ``Stream.nodes`` the nodes in the same order; a node is found by bisecting
  ``masters``.  Nodes are appended at the tail only and removed anywhere.
* Inside a node, ``keys`` holds one packed ID per entry (see ``StreamNode``), ``offsets`` where
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

Beside it: ``stream_node`` (one node and reading its entries), ``node_values`` (how values are
packed), ``listpack_size`` (Redis's listpack sizes), ``stream_resp`` (entries as RESP straight
from the nodes), ``logged_run`` (the C appender of logged XADDs), ``stream_snapshot`` (the nodes
in a snapshot).
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from node.engine.ids import MAX_ID
from node.engine.listpack_size import LP_FLAGS, LP_MAX_SIZE, as_int64, lp_entry_size, lp_int_size, lp_master_size
from node.engine.logged_run import NATIVE_APPEND_RUN
from node.engine.node_values import has_names, pack_values, put_len, total_len, varint_size
from node.engine.stream_node import StreamNode, collect_entries, new_node
from node.engine.stream_resp import encode_entries

_M64: Final = 0xFFFFFFFFFFFFFFFF
# memory_estimate(): the Stream object with its two lists, and per node a slot in each list
# plus the 128-bit master ID in `masters`.
_STREAM_BASE: Final = 200
_PER_NODE: Final = 60


class Stream:
    """Entries of one stream key plus the counters XINFO and consumer groups rely on."""

    __slots__ = (
        "_last_id",
        "_sealed",
        "digests",
        "masters",
        "nodes",
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
    # memory_estimate() of every node but the tail, kept up to date as nodes come and go
    # (a node's estimate does not change once it stopped being the tail); -1: not known,
    # summed again on the next memory_estimate().
    _sealed: int
    # DEBUG DIGEST's entry chains, by starting digest (node.engine.digest): (digest after
    # the last entry hashed, that entry's ID). Entries are only ever added after the last
    # one, so a chain is continued; anything that removes entries drops them (None).
    digests: dict[bytes, tuple[bytes, int]] | None

    def __init__(self) -> None:
        self.masters: list[int] = []
        self.nodes: list[StreamNode] = []
        self._sealed = 0
        self.digests = None
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
        nodes = self.nodes
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
            node = new_node(entry_id, names, tmpl)
            if nodes and self._sealed >= 0:
                self._sealed += nodes[-1].memory_estimate()  # the old tail is sealed now
            nodes.append(node)
            self.masters.append(entry_id)
            same = True
        else:
            same = has_names(argv, first, node.fields)
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
            lp = LP_FLAGS + lp_int_size(as_int64(msd)) + lp_int_size(as_int64(seq - node.master_seq))
        else:
            # Both deltas fit in 32 bits here, so they need no int64 wrap-around.
            lp = LP_FLAGS + lp_int_size(msd) + lp_int_size(seq - node.master_seq)
        if same:
            packed, long = pack_values(data, argv, first + 1, 2)
            lp += packed + lp_int_size(nv + 3)
        else:
            node.own |= 1 << i
            put_len(data, nv)
            packed, long = pack_values(data, argv, first, 1)
            lp += packed + lp_int_size(nv) + lp_int_size(2 * nv + 4)
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
        nodes = self.nodes
        append_run = NATIVE_APPEND_RUN
        if append_run is None or not nodes:
            return index, 0
        node = nodes[-1]
        out = node.data
        keys = node.keys
        if node.wide or type(out) is not bytearray or type(keys) is not array:
            return index, 0
        cap = max_bytes if 0 < max_bytes <= LP_MAX_SIZE else LP_MAX_SIZE
        stop, count, packed_keys, offsets, values, lp, last_ms, last_seq = append_run(
            data, positions, index, key, node.fields, len(out), node.base_ms, node.master_seq, keys[-1], self.last_ms,
            self.last_seq, node.lp_base, node.live, node.tombs, cap, max_entries,
        )
        if count:
            # All-or-nothing on a MemoryError: the new counters are computed before the node
            # changes (a large int is an allocation), and each extend is whole or raises having
            # changed nothing, so cutting back to the old lengths restores the node.
            lp_base = node.lp_base + lp
            live = node.live + count
            length = self.length + count
            entries_added = self.entries_added + count
            last_id = (last_ms << 64) | last_seq
            n, at = len(keys), len(out)
            try:
                keys.frombytes(packed_keys)
                node.offsets.frombytes(offsets)
                out += values
            except BaseException:
                del keys[n:], node.offsets[n:], out[at:]
                raise
            node.lp_base = lp_base
            node.live = live
            self.length = length
            self.entries_added = entries_added
            # Not the last_id setter: it would split last_id again (two more large ints).
            self._last_id = last_id
            self.last_ms = last_ms
            self.last_seq = last_seq
        return stop, count

    def _drop_stale_tombstones(self, entry_id: int) -> None:
        """Physically remove stored entries with IDs >= ``entry_id`` before adding it.

        They can only be tombstones left above ``last_id`` by XSETID (which Redis checks
        against the last *live* ID) or by an exact MINID trim that emptied the head node.
        Redis appends after them, leaving its listpack out of ID order; no read can see the
        difference, but bisecting needs sorted IDs, so Rill drops them instead.  Only node
        byte/count accounting (hence later split points) can differ from Redis here.
        """
        nodes = self.nodes
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
                node.lp_base -= lp_entry_size(node.id_at(i), node.master, flat[0::2], flat[1::2], same)
            if cut == 0:
                del nodes[-1]
                del self.masters[-1]
                self._tail_removed()
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
        j = bisect_right(self.masters, entry_id) - 1
        if j < 0:
            return False
        node = self.nodes[j]
        i = node.lower(entry_id)
        if i >= len(node.keys) or node.id_at(i) != entry_id or (node.dead >> i) & 1:
            return False
        node.dead |= 1 << i
        node.live -= 1
        node.tombs += 1
        self.length -= 1
        self.digests = None
        self.max_deleted_id = max(self.max_deleted_id, entry_id)
        if node.live == 0:
            # streamIteratorRemoveEntry frees the listpack when its last live entry goes.
            tail = j == len(self.nodes) - 1
            if not tail and self._sealed >= 0:
                self._sealed -= node.memory_estimate()
            del self.nodes[j]
            del self.masters[j]
            if tail:
                self._tail_removed()
        return True

    def _tail_removed(self) -> None:
        """The tail node went: the node before it is the tail now, no longer sealed."""
        if self.nodes and self._sealed >= 0:
            self._sealed -= self.nodes[-1].memory_estimate()

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
        nodes = self.nodes
        removed = 0
        self.digests = None
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
            if gone == len(nodes):
                self._sealed = 0
            elif self._sealed >= 0:
                self._sealed -= sum(node.memory_estimate() for node in nodes[:gone])
            del nodes[:gone]
            del self.masters[:gone]
        return removed

    def trim_per_entry(
        self,
        maxlen: int,
        minid: int,
        approx: bool,
        limit: int,
        keep: Callable[[int], bool] | None,
        removing: Callable[[int], None] | None,
    ) -> tuple[int, int]:
        """streamTrim with Redis 8.2's DELREF or ACKED (node.engine.stream_refs): entries go
        one by one, never a node at once, so that `keep(id)` (ACKED: the entry is still
        referenced) can spare one and `removing(id)` (DELREF: drop the groups' references)
        runs for each one removed. Exactly one of maxlen / minid is >= 0.

        The walk is `_trim`'s, with Redis 8.6's fix for `~` (redis#14623): a node that could
        go whole has its entries examined and the walk goes on to the next node; the first
        node that could not go whole stops an approximate trim, while an exact one examines
        it up to the threshold. A node left with no live entry is freed. Returns the number
        removed and the first ID the walk did not reach (every stored ID below it was
        examined; MAX_ID when it reached the end), from which the effect is written.
        """
        by_len = maxlen >= 0
        nodes = self.nodes
        removed = 0
        reached = -1
        emptied: list[int] = []
        self.digests = None
        for j, node in enumerate(nodes):
            if by_len and self.length <= maxlen:
                reached = node.master
                break
            entries = node.live
            if limit and removed + entries > limit:
                reached = node.master
                break
            if by_len:
                whole = self.length - entries >= maxlen
            else:
                whole = node.id_at(len(node.keys) - 1) < minid
            if approx and not whole:
                reached = node.master
                break
            dead = node.dead
            marked = 0
            for i in range(len(node.keys)):
                entry_id = node.id_at(i)
                if (by_len and self.length <= maxlen) or (not by_len and entry_id >= minid):
                    reached = entry_id
                    break
                if (dead >> i) & 1 or (keep is not None and keep(entry_id)):
                    continue
                if removing is not None:
                    removing(entry_id)
                dead |= 1 << i
                marked += 1
                self.length -= 1
            node.dead = dead
            node.live -= marked
            node.tombs += marked
            removed += marked
            if not node.live:
                emptied.append(j)
            if reached >= 0:
                break
        for j in reversed(emptied):
            tail = j == len(nodes) - 1
            if not tail and self._sealed >= 0:
                self._sealed -= nodes[j].memory_estimate()
            del nodes[j]
            del self.masters[j]
            if tail:
                self._tail_removed()
        return removed, reached if reached >= 0 else MAX_ID

    # -- reading -------------------------------------------------------------------------

    def first_id(self) -> int:
        """ID of the first live entry, 0 when the stream is empty."""
        for node in self.nodes:
            if node.live:
                return node.id_at(node.first_live_index())
        return 0

    def last_live_id(self) -> int:
        """ID of the last live entry, 0 when empty (may be < last_id after XDEL)."""
        for node in reversed(self.nodes):
            if node.live:
                return node.id_at(node.last_live_index())
        return 0

    def get(self, entry_id: int) -> list[bytes] | None:
        """Fields of the live entry ``entry_id``, None if absent or deleted."""
        j = bisect_right(self.masters, entry_id) - 1
        if j < 0:
            return None
        node = self.nodes[j]
        i = node.lower(entry_id)
        if i >= len(node.keys) or node.id_at(i) != entry_id or (node.dead >> i) & 1:
            return None
        return node.fields_at(i)

    def contains(self, entry_id: int) -> bool:
        j = bisect_right(self.masters, entry_id) - 1
        if j < 0:
            return False
        node = self.nodes[j]
        i = node.lower(entry_id)
        return i < len(node.keys) and node.id_at(i) == entry_id and not (node.dead >> i) & 1

    def range(self, start: int, end: int, count: int = 0, rev: bool = False) -> list[tuple[int, list[bytes]]]:
        """Live entries with start <= ID <= end, ascending (descending with rev), at most
        ``count`` of them (0 = all).  O(log N + M)."""
        out: list[tuple[int, list[bytes]]] = []
        for node, lo, hi in self._spans(start, end, rev):
            collect_entries(node, lo, hi, rev, count, out)
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
        max_bytes: int = 0,
    ) -> int:
        """``range`` written as RESP: appends each entry's ``*2 <id> *2n <field> <value> ...``
        to ``out`` (the caller adds the array header) straight from the packed nodes, with
        no tuple, list or int per entry; returns the number of entries.  With ``ids`` the
        entries' IDs are appended to it too (XREADGROUP records them as pending), and their
        wire forms to ``raw_ids`` (its effects name them: no second formatting).

        With ``max_bytes`` the writing stops after the node at which the bytes written
        pass it, returning -1: the reply would not fit (a client's output limit), and
        building it whole first would cost its full size in memory.

        This is the reply of XRANGE, XREVRANGE, XREAD and XREADGROUP, so it lives beside
        the storage it reads, like Redis's streamReplyWithRange in t_stream.c."""
        n = 0
        raw = raw_ids if raw_ids is not None else []
        written = 0
        for node, lo, hi in self._spans(start, end, rev):
            mark = len(out)
            n = encode_entries(node, lo, hi, rev, count, n, out, ids, raw)
            if max_bytes:
                written += sum(map(len, out[mark:]))
                if written > max_bytes:
                    return -1
            if count and n >= count:
                break
        return n

    def iter_range(self, start: int, end: int, rev: bool = False) -> Iterator[tuple[int, list[bytes]]]:
        """Lazy ``range``, decoding one node at a time.  Do not modify the stream while
        iterating."""
        for node, lo, hi in self._spans(start, end, rev):
            batch: list[tuple[int, list[bytes]]] = []
            collect_entries(node, lo, hi, rev, 0, batch)
            yield from batch

    def _spans(self, start: int, end: int, rev: bool) -> Iterator[tuple[StreamNode, int, int]]:
        """(node, lo, hi): the index runs [lo, hi) of each node that holds IDs in
        [start, end], in iteration order."""
        if start > end:
            return
        masters = self.masters
        nodes = self.nodes
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
        for node in self.nodes:
            dead = node.dead
            for i in range(len(node.keys)):
                if not (dead >> i) & 1:
                    yield node.id_at(i), node.fields_at(i)

    # -- introspection -------------------------------------------------------------------

    def node_count(self) -> int:
        """Number of macro nodes (XINFO STREAM radix-tree-keys)."""
        return len(self.nodes)

    def memory_estimate(self) -> int:
        """Bytes the stream's entries take, in O(1) (amortized): what INFO's
        used_memory_dataset and the maxmemory check count. Close to memory_bytes() without
        walking every node (the field-name lists and deletion bitmaps are left out)."""
        nodes = self.nodes
        if self._sealed < 0:
            self._sealed = sum(node.memory_estimate() for node in nodes[:-1])
        tail = nodes[-1].memory_estimate() if nodes else 0
        # The masters list and its ints, the nodes list.
        return _STREAM_BASE + len(nodes) * _PER_NODE + self._sealed + tail

    def forget_memory_estimate(self) -> None:
        """The nodes were replaced wholesale (a snapshot load): sum them again when asked."""
        self._sealed = -1

    def memory_bytes(self) -> int:
        """Approximate bytes held by this stream's Python objects (MEMORY USAGE)."""
        getsizeof = sys.getsizeof
        total = getsizeof(self) + getsizeof(self.masters) + getsizeof(self.nodes)
        seen_fields: set[int] = set()
        for node in self.nodes:
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
        s.masters = self.masters[:]
        s.nodes = [n.clone() for n in self.nodes]
        s._sealed = -1
        s.digests = None
        s.length = self.length
        s.last_id = self.last_id
        s.max_deleted_id = self.max_deleted_id
        s.entries_added = self.entries_added

    def _check(self) -> None:
        """Assert every invariant of the structure (tests and debugging only)."""
        masters = self.masters
        nodes = self.nodes
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
            lp = lp_master_size(node.fields)
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
                    size = sum(varint_size(len(v)) + len(v) for v in values)
                else:
                    size = varint_size(len(values)) + sum(varint_size(len(x)) + len(x) for x in flat)
                assert p + size == end, "entry does not fill its slot"
                if not node.long:
                    stored = values if same else [*flat, b"x" * len(values)]
                    assert max(map(len, stored)) < 0x80, "long flag unset"
                lp += lp_entry_size(ids[i], node.master, names, values, same)
            assert lp == node.lp_base, "listpack size accounting drifted"
            total_live += node.live
        assert total_live == self.length
        # XSETID may leave last_id below stored tombstones (and below max_deleted_id), as in
        # Redis, but never below a live entry.
        assert self.last_id >= self.last_live_id(), "last_id below the last live ID"
        assert self.entries_added >= self.length
