"""The values Rill holds, as RDB values: a type byte and the value (rdbSaveObjectType and
rdbSaveObject, rdbLoadObjectType and rdbLoadObject). Rill has strings and streams; every
other Redis type is known by name so that a loader can refuse or skip it saying what it is.
"""

from __future__ import annotations

from typing import Final

from node.engine.keyspace import Value
from node.engine.stream_value import StreamValue
from node.rdb.encoding import Reader, put_string
from node.rdb.stream_codec import (
    RDB_TYPE_STREAM_LISTPACKS,
    RDB_TYPE_STREAM_LISTPACKS_2,
    RDB_TYPE_STREAM_LISTPACKS_3,
    read_stream,
    stream_type,
    write_stream,
)

RDB_TYPE_STRING: Final = 0
STREAM_TYPES: Final = frozenset((RDB_TYPE_STREAM_LISTPACKS, RDB_TYPE_STREAM_LISTPACKS_2, RDB_TYPE_STREAM_LISTPACKS_3))

# The Redis type of every other object type byte (rdb.h), for messages.
OTHER_TYPES: Final = {
    1: "list", 10: "list", 14: "list", 18: "list",
    2: "set", 11: "set", 20: "set",
    3: "zset", 5: "zset", 12: "zset", 17: "zset",
    4: "hash", 9: "hash", 13: "hash", 16: "hash",
    6: "module", 7: "module",
}


class UnsupportedType(Exception):
    """A value of a type Rill does not have (`type_name`, Redis's name for it)."""

    def __init__(self, rdb_type: int, type_name: str) -> None:
        super().__init__(f"a value of type {type_name} (RDB type {rdb_type})")
        self.rdb_type = rdb_type
        self.type_name = type_name


def write_value(out: bytearray, value: Value, rdb_version: int, compress: bool, key: bytes | None = None) -> None:
    """The type byte, the key when given (a file's key record), and the value, as
    `rdb_version` (10: Redis 7.0, 11: Redis 7.2) has them."""
    if type(value) is bytes:
        out.append(RDB_TYPE_STRING)
        if key is not None:
            put_string(out, key, compress)
        put_string(out, value, compress)
        return
    assert isinstance(value, StreamValue)
    out.append(stream_type(rdb_version))
    if key is not None:
        put_string(out, key, compress)
    write_stream(out, value, rdb_version, compress)


def is_object_type(rdb_type: int) -> bool:
    """rdbIsObjectType."""
    return 0 <= rdb_type <= 7 or 9 <= rdb_type <= 21


def read_value(r: Reader, rdb_type: int) -> Value:
    """The value of type `rdb_type`; UnsupportedType (positioned after nothing) for a type
    Rill does not hold, RdbError for damage."""
    if rdb_type == RDB_TYPE_STRING:
        return r.string()
    if rdb_type in STREAM_TYPES:
        return read_stream(r, rdb_type)
    name = OTHER_TYPES.get(rdb_type)
    if name is None:
        raise r.error(f"unknown object type {rdb_type}")
    raise UnsupportedType(rdb_type, name)
