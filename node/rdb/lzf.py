"""LZF, as Redis compresses RDB strings (liblzf 3.6 in src/lzf_c.c and lzf_d.c, built with
HLOG 16, VERY_FAST, no ULTRA_FAST).

`compress` must give Redis's bytes exactly (a DUMP payload is compared byte for byte), so it
is the C code step for step, with one deliberate difference: Redis leaves its hash table
uninitialized (INIT_HTAB 0), so a slot may still hold a pointer from an earlier call; when
such a stale pointer lands inside the current input with matching bytes, Redis takes a match
that a clean table would not. That depends on Redis's memory layout, not on the data; here
the table starts empty, which is what Redis does whenever no stale pointer matches.

The C module node/rdb/_rdb_native.c does the same much faster; this is its Python fallback
and its specification.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Final

_HSIZE: Final = 1 << 16  # HLOG 16
_MAX_LIT: Final = 1 << 5
_MAX_OFF: Final = 1 << 13
_MAX_REF: Final = (1 << 8) + (1 << 3)
_M32: Final = 0xFFFFFFFF


def _native_compress() -> Callable[[bytes, int], bytes | None] | None:
    try:
        from node.rdb._rdb_native import lzf_compress
    except ImportError:
        return None
    return lzf_compress


def _native_decompress() -> Callable[[bytes, int], bytes | None] | None:
    try:
        from node.rdb._rdb_native import lzf_decompress
    except ImportError:
        return None
    return lzf_decompress


_NATIVE_COMPRESS: Final = _native_compress()
_NATIVE_DECOMPRESS: Final = _native_decompress()


def compress(data: bytes, out_len: int) -> bytes | None:
    """``lzf_compress(data, len, out, out_len)``: the compressed bytes, or None when they
    would not fit in ``out_len`` bytes (lzf_compress returns 0)."""
    if _NATIVE_COMPRESS is not None:
        return _NATIVE_COMPRESS(data, out_len)
    return compress_python(data, out_len)


def decompress(data: bytes, out_len: int) -> bytes | None:
    """``lzf_decompress(data, len, out, out_len)`` when it yields exactly ``out_len`` bytes
    (what Redis checks), else None (damaged input, or another length)."""
    if _NATIVE_DECOMPRESS is not None:
        return _NATIVE_DECOMPRESS(data, out_len)
    return decompress_python(data, out_len)


def compress_python(data: bytes, out_len: int) -> bytes | None:
    in_len = len(data)
    if not in_len or not out_len:
        return None
    out = bytearray(out_len + 1)
    out_end = out_len
    htab = array("q", bytes(8 * _HSIZE))  # positions; 0 = empty (position 0 never matches)
    ip = 0
    op = 1  # start run
    lit = 0
    in_end = in_len
    hval = (data[0] << 8) | (data[1] if in_len > 1 else 0)
    while ip < in_end - 2:
        hval = ((hval << 8) | data[ip + 2]) & _M32
        slot = ((hval >> 8) - hval * 5) & (_HSIZE - 1)
        ref = htab[slot]
        htab[slot] = ip
        off = ip - ref - 1
        if ref > 0 and off < _MAX_OFF and data[ref + 2] == data[ip + 2] and data[ref] == data[ip] and data[ref + 1] == data[ip + 1]:
            length = 2
            maxlen = in_end - ip - length
            if maxlen > _MAX_REF:
                maxlen = _MAX_REF
            if op + 3 + 1 >= out_end and op - (0 if lit else 1) + 3 + 1 >= out_end:
                return None
            out[op - lit - 1] = (lit - 1) & 0xFF  # stop run
            if not lit:
                op -= 1  # undo run if length is zero
            broke = False
            if maxlen > 16:
                for _ in range(16):
                    length += 1
                    if data[ref + length] != data[ip + length]:
                        broke = True
                        break
            if not broke:
                length += 1
                while length < maxlen and data[ref + length] == data[ip + length]:
                    length += 1
            length -= 2  # now the number of octets - 1
            ip += 1
            if length < 7:
                out[op] = (off >> 8) + (length << 5)
                op += 1
            else:
                out[op] = (off >> 8) + (7 << 5)
                out[op + 1] = length - 7
                op += 2
            out[op] = off & 0xFF
            op += 2  # the offset byte, then start a run
            lit = 0
            ip += length + 1
            if ip >= in_end - 2:
                break
            # VERY_FAST: hash the last two positions of the match.
            ip -= 2
            hval = (data[ip] << 8) | data[ip + 1]
            hval = ((hval << 8) | data[ip + 2]) & _M32
            htab[((hval >> 8) - hval * 5) & (_HSIZE - 1)] = ip
            ip += 1
            hval = ((hval << 8) | data[ip + 2]) & _M32
            htab[((hval >> 8) - hval * 5) & (_HSIZE - 1)] = ip
            ip += 1
        else:
            if op >= out_end:
                return None
            lit += 1
            out[op] = data[ip]
            op += 1
            ip += 1
            if lit == _MAX_LIT:
                out[op - lit - 1] = lit - 1  # stop run
                lit = 0
                op += 1  # start run
    if op + 3 > out_end:
        return None
    while ip < in_end:
        lit += 1
        out[op] = data[ip]
        op += 1
        ip += 1
        if lit == _MAX_LIT:
            out[op - lit - 1] = lit - 1
            lit = 0
            op += 1
    out[op - lit - 1] = (lit - 1) & 0xFF  # end run
    if not lit:
        op -= 1  # undo run if length is zero
    return bytes(out[:op])


def decompress_python(data: bytes, out_len: int) -> bytes | None:
    out = bytearray()
    ip = 0
    in_end = len(data)
    while ip < in_end:
        ctrl = data[ip]
        ip += 1
        if ctrl < (1 << 5):  # literal run
            ctrl += 1
            if len(out) + ctrl > out_len or ip + ctrl > in_end:
                return None
            out += data[ip : ip + ctrl]
            ip += ctrl
            continue
        length = ctrl >> 5  # back reference
        ref = len(out) - ((ctrl & 0x1F) << 8) - 1
        if ip >= in_end:
            return None
        if length == 7:
            length += data[ip]
            ip += 1
            if ip >= in_end:
                return None
        ref -= data[ip]
        ip += 1
        length += 2
        if len(out) + length > out_len or ref < 0:
            return None
        if ref + length <= len(out):
            out += out[ref : ref + length]
        else:
            for i in range(length):  # overlapping: octet by octet
                out.append(out[ref + i])
    return bytes(out) if len(out) == out_len else None
