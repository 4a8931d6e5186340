"""Redis's CRC-64 (src/crc64.c): the Jones polynomial 0xad93d23594c935a9, reflected, initial
value 0, no final XOR; crc64(0, "123456789") is 0xe9c6d914c4b8d9ca. DUMP payloads end with it,
RDB files too (rdbchecksum). node/rdb/_rdb_native.c computes the same in C.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

_POLY_REFLECTED: Final = 0x95AC9329AC4BC9B5  # 0xad93d23594c935a9 bit-reversed


def _table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY_REFLECTED if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE: Final = _table()


def _native() -> Callable[[int, bytes], int] | None:
    try:
        from node.rdb._rdb_native import crc64
    except ImportError:
        return None
    return crc64


_NATIVE: Final = _native()


def crc64(crc: int, data: bytes | bytearray | memoryview) -> int:
    """The CRC of ``data`` continuing from ``crc`` (0 to start)."""
    if _NATIVE is not None:
        return _NATIVE(crc, bytes(data))
    return crc64_python(crc, data)


def crc64_python(crc: int, data: bytes | bytearray | memoryview) -> int:
    table = _TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc
