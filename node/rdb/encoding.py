"""RDB's primitives (rdb.c): lengths, strings (integer-encoded, LZF-compressed or verbatim),
millisecond times, stream IDs; a `Reader` over a buffer that names the offset of whatever it
cannot read, and the writing functions that append to a bytearray.

Writing follows rdbSaveRawString exactly, since a DUMP payload is compared byte for byte: a
string of at most 11 bytes that is an integer's canonical form within 32 bits is stored as
that integer, a longer one than 20 bytes is LZF-compressed when `compress` (rdbcompression)
and the result saves at least 4 bytes, anything else goes verbatim.
"""

from __future__ import annotations

import struct
from typing import Final

from node.rdb import lzf

# Length encodings (rdb.h): the two top bits of the first byte.
RDB_6BITLEN: Final = 0
RDB_14BITLEN: Final = 1
RDB_32BITLEN: Final = 0x80
RDB_64BITLEN: Final = 0x81
RDB_ENCVAL: Final = 3
# Special string encodings (RDB_ENCVAL): the low six bits.
RDB_ENC_INT8: Final = 0
RDB_ENC_INT16: Final = 1
RDB_ENC_INT32: Final = 2
RDB_ENC_LZF: Final = 3

_U64_BE: Final = struct.Struct(">Q")
_U32_BE: Final = struct.Struct(">I")
_I64_LE: Final = struct.Struct("<q")
_STREAM_ID: Final = struct.Struct(">QQ")
_M64: Final = (1 << 64) - 1


class RdbError(Exception):
    """Bytes that are not valid RDB: `offset` is where, from the start of what was given
    to the reader (plus its base), `reason` what."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"at offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason


# -- writing -----------------------------------------------------------------------------


def put_len(out: bytearray, n: int) -> None:
    """rdbSaveLen: 6, 14, 32 or 64 bits (a 64-bit length holds -1 as 2**64 - 1)."""
    n &= _M64
    if n < 1 << 6:
        out.append(n)
    elif n < 1 << 14:
        out.append((n >> 8) | 0x40)
        out.append(n & 0xFF)
    elif n <= 0xFFFFFFFF:
        out.append(RDB_32BITLEN)
        out += _U32_BE.pack(n)
    else:
        out.append(RDB_64BITLEN)
        out += _U64_BE.pack(n)


def int_encoding(s: bytes) -> bytes | None:
    """rdbTryIntegerEncoding: the integer encoding of `s` when it is the canonical form of an
    integer that fits in 32 bits (string2ll's rules: no sign but '-', no leading zero, no
    '-0'), else None."""
    n = len(s)
    if n == 0 or n > 11:
        return None
    c = s[0]
    if c == 0x30:
        if n != 1:
            return None
    elif c == 0x2D:
        if n < 2 or not 0x31 <= s[1] <= 0x39 or not s[1:].isdigit():
            return None
    elif not (0x31 <= c <= 0x39 and s.isdigit()):
        return None
    v = int(s)
    if -(1 << 7) <= v < 1 << 7:
        return bytes((0xC0 | RDB_ENC_INT8, v & 0xFF))
    if -(1 << 15) <= v < 1 << 15:
        return bytes((0xC0 | RDB_ENC_INT16,)) + (v & 0xFFFF).to_bytes(2, "little")
    if -(1 << 31) <= v < 1 << 31:
        return bytes((0xC0 | RDB_ENC_INT32,)) + (v & 0xFFFFFFFF).to_bytes(4, "little")
    return None


def put_string(out: bytearray, s: bytes, compress: bool) -> None:
    """rdbSaveRawString."""
    n = len(s)
    if n <= 11:
        enc = int_encoding(s)
        if enc is not None:
            out += enc
            return
    if compress and n > 20:
        packed = lzf.compress(s, n - 4)  # at least four bytes saved, or not worth it
        if packed is not None:
            out.append(0xC0 | RDB_ENC_LZF)
            put_len(out, len(packed))
            put_len(out, n)
            out += packed
            return
    put_len(out, n)
    out += s


def put_ms_time(out: bytearray, ms: int) -> None:
    """rdbSaveMillisecondTime: a signed 64-bit little-endian integer."""
    out += _I64_LE.pack(ms)


def stream_id_bytes(entry_id: int) -> bytes:
    """streamEncodeID: the 128-bit ID as 16 big-endian bytes (a rax key, a PEL entry)."""
    return _STREAM_ID.pack(entry_id >> 64, entry_id & _M64)


# -- reading -----------------------------------------------------------------------------


class Reader:
    """Reads RDB primitives from `buf` starting at `pos`; errors name the offset `base +
    position` (a DUMP payload counts from its first byte, a file from its start)."""

    __slots__ = ("buf", "pos", "base")

    def __init__(self, buf: bytes | memoryview, pos: int = 0, base: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.base = base

    def error(self, reason: str, at: int | None = None) -> RdbError:
        return RdbError(self.base + (self.pos if at is None else at), reason)

    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def byte(self) -> int:
        pos = self.pos
        if pos >= len(self.buf):
            raise self.error("unexpected end of data")
        self.pos = pos + 1
        return self.buf[pos]

    def take(self, n: int) -> bytes:
        pos = self.pos
        end = pos + n
        if end > len(self.buf):
            raise self.error(f"unexpected end of data (needs {n} bytes, {len(self.buf) - pos} left)")
        self.pos = end
        return bytes(self.buf[pos:end])

    def _len_or_encoding(self) -> tuple[int, bool]:
        start = self.pos
        first = self.byte()
        kind = first >> 6
        if kind == RDB_ENCVAL:
            return first & 0x3F, True
        if kind == RDB_6BITLEN:
            return first & 0x3F, False
        if kind == RDB_14BITLEN:
            return ((first & 0x3F) << 8) | self.byte(), False
        if first == RDB_32BITLEN:
            return _U32_BE.unpack(self.take(4))[0], False
        if first == RDB_64BITLEN:
            return _U64_BE.unpack(self.take(8))[0], False
        raise self.error(f"unknown length encoding {kind}", start)

    def length(self) -> int:
        """rdbLoadLen of a plain length (an encoded one is an error here)."""
        start = self.pos
        n, encoded = self._len_or_encoding()
        if encoded:
            raise self.error("an encoded value where a length was expected", start)
        return n

    def count(self, what: str, each: int = 1) -> int:
        """A length that counts items of at least `each` bytes still to read: one larger
        than the data left is damage (and would make a reader allocate for nothing)."""
        start = self.pos
        n = self.length()
        if n * each > self.remaining():
            raise self.error(f"{what} count {n} is larger than the data left", start)
        return n

    def string(self) -> bytes:
        """rdbGenericLoadStringObject: a verbatim, integer-encoded or LZF string."""
        start = self.pos
        n, encoded = self._len_or_encoding()
        if not encoded:
            return self.take(n)
        if n == RDB_ENC_INT8:
            v = self.byte()
            return str(v - 256 if v >= 128 else v).encode()
        if n == RDB_ENC_INT16:
            return str(int.from_bytes(self.take(2), "little", signed=True)).encode()
        if n == RDB_ENC_INT32:
            return str(int.from_bytes(self.take(4), "little", signed=True)).encode()
        if n == RDB_ENC_LZF:
            clen = self.length()
            ulen = self.length()
            packed = self.take(clen)
            data = lzf.decompress(packed, ulen)
            if data is None:
                raise self.error("invalid LZF compressed string", start)
            return data
        raise self.error(f"unknown string encoding {n}", start)

    def ms_time(self) -> int:
        """rdbLoadMillisecondTime (RDB 9 and later: little-endian)."""
        return int(_I64_LE.unpack(self.take(8))[0])

    def stream_id(self) -> int:
        hi, lo = _STREAM_ID.unpack(self.take(16))
        return int((hi << 64) | lo)

    def double_value(self) -> None:
        """Skips rdbLoadDoubleValue's string-encoded double (old sorted sets)."""
        n = self.byte()
        if n < 253:
            self.take(n)
