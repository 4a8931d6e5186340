"""Redis's listpack (src/listpack.c), the serialized form of a stream node in RDB: a header
(total bytes, u32 little-endian; element count, u16, 65535 when it does not fit), the
elements, and an end byte 255. An element is its encoding and data followed by its own
length written backwards (lpEncodeBacklen), so the list can be walked from either end.

Strings that are the canonical form of an int64 are stored as integers (lpStringToInt64),
in the smallest of the 7, 13, 16, 24, 32 and 64-bit encodings; other strings take a 6, 12
or 32-bit length. node/engine/listpack_size.py computes the same sizes without the bytes.
`parse` reads every element back and checks everything lpValidateIntegrity does.
"""

from __future__ import annotations

import struct
from typing import Final, Union

_HEADER: Final = struct.Struct("<IH")
HEADER_SIZE: Final = 6
EOF_BYTE: Final = 0xFF
NUMELE_UNKNOWN: Final = 65535
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1

Element = Union[int, bytes]


class ListpackError(ValueError):
    """The bytes are not a well-formed listpack."""


def _backlen(out: bytearray, n: int) -> None:
    """lpEncodeBacklen: n in 7-bit groups, most significant first, all but the last byte
    written (the first read backwards) with the top bit set."""
    if n <= 127:
        out.append(n)
    elif n < 16383:
        out.append(n >> 7)
        out.append((n & 127) | 128)
    elif n < 2097151:
        out.append(n >> 14)
        out.append(((n >> 7) & 127) | 128)
        out.append((n & 127) | 128)
    elif n < 268435455:
        out.append(n >> 21)
        out.append(((n >> 14) & 127) | 128)
        out.append(((n >> 7) & 127) | 128)
        out.append((n & 127) | 128)
    else:
        out.append(n >> 28)
        out.append(((n >> 21) & 127) | 128)
        out.append(((n >> 14) & 127) | 128)
        out.append(((n >> 7) & 127) | 128)
        out.append((n & 127) | 128)


def append_int(out: bytearray, v: int) -> None:
    """lpAppendInteger: ``v`` (an int64) in its smallest integer encoding."""
    if 0 <= v <= 127:
        out.append(v)
        out.append(1)
    elif -4096 <= v <= 4095:
        u = v & 0x1FFF
        out.append((u >> 8) | 0xC0)
        out.append(u & 0xFF)
        out.append(2)
    elif -32768 <= v <= 32767:
        out.append(0xF1)
        out += (v & 0xFFFF).to_bytes(2, "little")
        out.append(3)
    elif -8388608 <= v <= 8388607:
        out.append(0xF2)
        out += (v & 0xFFFFFF).to_bytes(3, "little")
        out.append(4)
    elif -2147483648 <= v <= 2147483647:
        out.append(0xF3)
        out += (v & 0xFFFFFFFF).to_bytes(4, "little")
        out.append(5)
    else:
        out.append(0xF4)
        out += (v & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
        out.append(9)


def string_as_int(s: bytes) -> int | None:
    """lpStringToInt64: the value when ``s`` is an int64's canonical form, else None."""
    n = len(s)
    if n == 0 or n >= 21:
        return None
    c = s[0]
    if c == 0x30:
        return 0 if n == 1 else None
    if c == 0x2D:
        if n < 2 or not 0x31 <= s[1] <= 0x39 or not s[1:].isdigit():
            return None
    elif not (0x31 <= c <= 0x39 and s.isdigit()):
        return None
    v = int(s)
    return v if _INT64_MIN <= v <= _INT64_MAX else None


def append_string(out: bytearray, s: bytes) -> None:
    """lpAppend of a string: as an integer when it is one, else with its length."""
    n = len(s)
    if 0 < n < 21:
        c = s[0]
        if 0x30 <= c <= 0x39 or c == 0x2D:
            v = string_as_int(s)
            if v is not None:
                append_int(out, v)
                return
    if n < 64:
        out.append(0x80 | n)
        out += s
        _backlen(out, n + 1)
    elif n < 4096:
        out.append(0xE0 | (n >> 8))
        out.append(n & 0xFF)
        out += s
        _backlen(out, n + 2)
    else:
        out.append(0xF0)
        out += n.to_bytes(4, "little")
        out += s
        _backlen(out, n + 5)


def finish(body: bytearray, count: int) -> bytes:
    """The listpack holding the elements encoded in ``body`` (``count`` of them)."""
    total = HEADER_SIZE + len(body) + 1
    return _HEADER.pack(total, count if count < NUMELE_UNKNOWN else NUMELE_UNKNOWN) + bytes(body) + b"\xff"


def parse(lp: bytes | memoryview) -> list[Element]:
    """Every element of the listpack ``lp``, ints as int and strings as bytes. Raises
    ListpackError unless the header's size and count, each element's encoding and
    back-length and the end byte agree (lpValidateIntegrity with deep checking)."""
    size = len(lp)
    if size < HEADER_SIZE + 1:
        raise ListpackError("listpack shorter than its header")
    total, numele = _HEADER.unpack_from(lp, 0)
    if total != size:
        raise ListpackError(f"listpack header says {total} bytes, it has {size}")
    if lp[size - 1] != EOF_BYTE:
        raise ListpackError("listpack does not end with its end byte")
    out: list[Element] = []
    append = out.append
    p = HEADER_SIZE
    end = size - 1
    while p < end:
        start = p
        b = lp[p]
        if b < 0x80:  # 7-bit unsigned integer
            append(b)
            p += 1
        elif b < 0xC0:  # 6-bit length string
            n = b & 0x3F
            p += 1 + n
            if p > end:
                raise ListpackError("listpack string runs past the end")
            append(bytes(lp[start + 1 : p]))
        elif b < 0xE0:  # 13-bit integer
            if p + 2 > end:
                raise ListpackError("listpack integer runs past the end")
            u = ((b & 0x1F) << 8) | lp[p + 1]
            append(u - 8192 if u >= 4096 else u)
            p += 2
        elif b < 0xF0:  # 12-bit length string
            if p + 2 > end:
                raise ListpackError("listpack string runs past the end")
            n = ((b & 0x0F) << 8) | lp[p + 1]
            p += 2 + n
            if p > end:
                raise ListpackError("listpack string runs past the end")
            append(bytes(lp[start + 2 : p]))
        elif b == 0xF0:  # 32-bit length string
            if p + 5 > end:
                raise ListpackError("listpack string runs past the end")
            n = int.from_bytes(lp[p + 1 : p + 5], "little")
            p += 5 + n
            if p > end:
                raise ListpackError("listpack string runs past the end")
            append(bytes(lp[start + 5 : p]))
        elif 0xF1 <= b <= 0xF4:
            width = (2, 3, 4, 8)[b - 0xF1]
            if p + 1 + width > end:
                raise ListpackError("listpack integer runs past the end")
            append(int.from_bytes(lp[p + 1 : p + 1 + width], "little", signed=True))
            p += 1 + width
        else:
            raise ListpackError(f"unknown listpack encoding {b:#x}")
        # The element's length, written backwards after it.
        n = p - start
        q = p
        if n <= 127:
            ok = q < end and lp[q] == n
            q += 1
        else:
            expect = bytearray()
            _backlen(expect, n)
            q += len(expect)
            ok = q <= end and bytes(lp[p:q]) == bytes(expect)
        if not ok:
            raise ListpackError("listpack element with a wrong back-length")
        p = q
    if p != end:
        raise ListpackError("listpack elements run past its end byte")
    count = len(out)
    if numele != NUMELE_UNKNOWN and numele != count:
        raise ListpackError(f"listpack header counts {numele} elements, it has {count}")
    return out
