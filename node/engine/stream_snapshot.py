"""A stream's nodes in the snapshot format: the packed storage copied as it is (keys,
offsets, data, bitmasks and the listpack size accounting), so loading costs a few array copies
per node instead of one XADD per entry. Arrays are little-endian. node/persistence/snapshot.py
writes the rest of a stream key around them.
"""

from __future__ import annotations

import struct
import sys
from array import array
from typing import Final, cast

from node.engine.stream import Stream
from node.engine.stream_node import StreamNode

_M64: Final = 0xFFFFFFFFFFFFFFFF

# Snapshot layout of one node (``dump_nodes``): master ID (high, low), flags, entry
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


def dump_nodes(stream: Stream, out: list[bytes]) -> None:
    """Append the nodes to ``out`` as raw bytes, in the layout ``load_nodes`` reads.

    Snapshots copy the packed storage as it is (keys, offsets, data, bitmasks and the
    listpack size accounting), so loading costs a few array copies per node instead of
    one XADD per entry.  Arrays are written little-endian.  Layout per node: a
    ``_NODE_HEAD``, the keys (compact: one u64 each; wide: all high then all low u64
    halves), the u32 offsets, the data, the ``dead`` and ``own`` bitmasks, then the
    master field names unless the node shares the previous node's.
    """
    out.append(_U32.pack(len(stream.nodes)))
    previous: list[bytes] | None = None
    for node in stream.nodes:
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

def load_nodes(stream: Stream, buf: bytes | memoryview, pos: int) -> int:
    """Replace the nodes with those ``dump_nodes`` wrote at ``buf[pos:]``; returns the
    position after them.  The counters (length, last_id, ...) are the caller's to set.
    Raises ValueError when the bytes do not hold well-formed nodes."""
    view = memoryview(buf)
    end = len(view)
    (count,) = _U32.unpack_from(view, pos)
    pos += 4
    nodes: list[StreamNode] = []
    masters: list[int] = []
    fields: list[bytes] = []
    tmpl: list[bytes] = []
    head = _NODE_HEAD
    for _ in range(count):
        (hi, lo, flags, n, dlen, live, tombs, lp_base, dead_len, own_len, nfields) = head.unpack_from(view, pos)
        pos += head.size
        if n == 0 or pos + 12 * n + dlen + dead_len + own_len > end:
            raise ValueError("stream node out of bounds")
        node = StreamNode.__new__(StreamNode)
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
    stream.nodes = nodes
    stream.masters = masters
    stream.forget_memory_estimate()
    return pos
