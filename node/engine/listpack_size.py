"""What a stream node would take as a Redis listpack (listpack.c: lpEncodeGetType,
lpEncodeBacklen, lpStringToInt64, and t_stream.c's entry layout).

Rill stores nodes in its own packed form, but splits them where Redis splits its listpacks:
`streamAppendItem` compares the listpack's byte size with stream-node-max-bytes. These
functions give that size, element by element, so a node can track it incrementally
(`StreamNode.lp_base`) and node boundaries, hence `XTRIM ~` and XINFO, match Redis's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

_M64: Final = 0xFFFFFFFFFFFFFFFF

# Redis STREAM_LISTPACK_MAX_SIZE: the byte cap used when stream-node-max-bytes is 0 or larger.
LP_MAX_SIZE: Final = 1 << 30
# Listpack header (total bytes + element count) plus the end-of-listpack byte.
LP_EMPTY: Final = 7
# A flags element (values 0..3) is one encoding byte plus one backlen byte.
LP_FLAGS: Final = 2
# The master entry's terminating "0" element.
LP_MASTER_END: Final = 2


def lp_int_size(v: int) -> int:
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


def lp_str_size(s: bytes) -> int:
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
                    return lp_int_size(v)
        elif c == 0x30:
            if n == 1:
                return 2
        elif c == 0x2D and n > 1 and 0x31 <= s[1] <= 0x39 and s[1:].isdigit():
            v = int(s)
            if v >= -0x8000000000000000:
                return lp_int_size(v)
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


def as_int64(v: int) -> int:
    """``v`` (mod 2**64) seen as int64, as lpAppendInteger receives uint64 ID deltas."""
    v &= _M64
    return v - (1 << 64) if v >> 63 else v


def lp_entry_size(
    entry_id: int,
    master_id: int,
    names: Sequence[bytes],
    values: Sequence[bytes],
    same: bool,
) -> int:
    """Listpack bytes of one entry: flags, ms-diff, seq-diff, [n, fields], values, lp-count."""
    size = (
        LP_FLAGS
        + lp_int_size(as_int64((entry_id >> 64) - (master_id >> 64)))
        + lp_int_size(as_int64((entry_id & _M64) - (master_id & _M64)))
    )
    for v in values:
        size += lp_str_size(v)
    n = len(values)
    if same:
        size += lp_int_size(n + 3)
    else:
        size += lp_int_size(n) + lp_int_size(2 * n + 4)
        for f in names:
            size += lp_str_size(f)
    return size


def lp_master_size(names: Sequence[bytes]) -> int:
    """Listpack bytes of an empty node plus its master entry, count and deleted excluded."""
    size = LP_EMPTY + lp_int_size(len(names)) + LP_MASTER_END
    for f in names:
        size += lp_str_size(f)
    return size
