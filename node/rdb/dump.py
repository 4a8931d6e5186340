"""DUMP payloads (cluster.c createDumpPayload, verifyDumpPayload): a value as RDB writes it
(its type byte, then the value), the RDB version as two little-endian bytes, and the CRC-64
of all that as eight little-endian bytes.

RESTORE reads payloads of any RDB version up to 11 (Redis 7.2's), the stream types of RDB 9
(Redis 5 to 6.2), 10 (7.0) and 11 included; DUMP writes the version it is asked for.
"""

from __future__ import annotations

import struct
from typing import Final

from node.engine.keyspace import Value
from node.rdb.crc64 import crc64
from node.rdb.encoding import RdbError, Reader
from node.rdb.values import UnsupportedType, read_value, write_value

# The newest RDB version this codec reads (Redis 7.2's RDB_VERSION).
RDB_VERSION: Final = 11
# The versions it writes: 10 as Redis 7.0, 11 as Redis 7.2.
WRITABLE_VERSIONS: Final = (10, 11)

_FOOTER: Final = struct.Struct("<HQ")


class BadPayload(Exception):
    """The payload's version is too new or its checksum wrong (RESTORE's `DUMP payload
    version or checksum are wrong`)."""


def create_payload(value: Value, rdb_version: int = RDB_VERSION, compress: bool = True) -> bytes:
    """The DUMP payload of `value`."""
    out = bytearray()
    write_value(out, value, rdb_version, compress)
    out += rdb_version.to_bytes(2, "little")
    out += crc64(0, out).to_bytes(8, "little")
    return bytes(out)


def payload_version(payload: bytes) -> int:
    """The RDB version in a payload's footer (BadPayload when it has none)."""
    if len(payload) < 10:
        raise BadPayload("payload shorter than its footer")
    return int.from_bytes(payload[-10:-8], "little")


def verify_payload(payload: bytes) -> int:
    """verifyDumpPayload: the payload's RDB version, or BadPayload when it is newer than
    RDB_VERSION or the CRC does not match."""
    version = payload_version(payload)
    if version > RDB_VERSION:
        raise BadPayload(f"RDB version {version} is newer than {RDB_VERSION}")
    (_, crc) = _FOOTER.unpack_from(payload, len(payload) - 10)
    if crc64(0, memoryview(payload)[:-8]) != crc:
        raise BadPayload("checksum mismatch")
    return version


def load_payload(payload: bytes) -> Value:
    """The value of a verified payload; RdbError (or UnsupportedType) when the data is not
    a whole value (RESTORE's `Bad data format`)."""
    body = memoryview(payload)[:-10]
    r = Reader(body)
    rdb_type = r.byte()
    # Redis ignores what may follow the value; so does Rill.
    return read_value(r, rdb_type)


__all__ = ["BadPayload", "RDB_VERSION", "RdbError", "UnsupportedType", "WRITABLE_VERSIONS", "create_payload",
           "load_payload", "payload_version", "verify_payload"]
