"""Stream entries as RESP replies written straight from a node's bytes (XRANGE, XREVRANGE,
XREAD): no (ID, fields) tuple per entry, the field names' headers built once per node.
"""

from __future__ import annotations

from typing import Any, Final

from node.engine.ids import decimal
from node.engine.stream_node import StreamNode

_M32: Final = 0xFFFFFFFF
_M64: Final = 0xFFFFFFFFFFFFFFFF

_CRLF: Final = b"\r\n"
# b"*2\r\n$<n>\r\n": the head of an entry whose ID is n bytes long (3 to 41).
_ENTRY_HEADS: Final = tuple(b"*2\r\n$%d\r\n" % n for n in range(42))
_BULK_HEADS: Final = tuple(b"$%d\r\n" % n for n in range(256))


def _bulk_head(n: int) -> bytes:
    return _BULK_HEADS[n] if n < 256 else b"$%d\r\n" % n


def encode_entries(
    node: StreamNode,
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
