"""How a stream node stores its entries' values: each as ``varint(len) + bytes`` in the
node's data, the varint little-endian base-128 (one byte below 128). See node/engine/stream.py
for the node layout.
"""

from __future__ import annotations

from node.engine.listpack_size import lp_str_size


def put_len(data: bytearray, n: int) -> None:
    while n >= 0x80:
        data.append((n & 0x7F) | 0x80)
        n >>= 7
    data.append(n)


def get_len_slow(data: bytes | bytearray, p: int) -> tuple[int, int]:
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


def pack_values(data: bytearray, items: list[bytes], start: int, step: int) -> tuple[int, bool]:
    """Append ``varint(len) + bytes`` for ``items[start::step]``; return their listpack size
    and whether any length needed a multi-byte varint.

    Sizing is fused with packing because XADD pays for it on every entry: a string that
    cannot be a number (first byte not a digit or '-') and is shorter than 64 bytes costs
    its length plus two bytes; the rest goes through ``lp_str_size``.
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
            put_len(data, n)
            long = True
        data += v
        if 0 < n < 64 and (v[0] > 0x39 or v[0] < 0x2D):
            lp += n + 2
        else:
            lp += lp_str_size(v)
    return lp, long


def has_names(argv: list[bytes], first: int, names: list[bytes]) -> bool:
    """Whether ``argv[first::2]`` equals ``names``, without building the slice."""
    if len(argv) - first != 2 * len(names):
        return False
    j = first
    for name in names:
        if argv[j] != name:
            return False
        j += 2
    return True


def varint_size(n: int) -> int:
    """Bytes of ``n`` as a varint."""
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size
