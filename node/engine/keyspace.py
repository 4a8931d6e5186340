"""The keyspace: numbered databases mapping keys to values, and the type rules.

Values are `bytes` (the string type) or `StreamValue` (a `Stream` with its consumer
groups). Pure data: no I/O, no clock.
"""

from __future__ import annotations

from typing import Final, Union

from node.engine.stream_value import StreamValue

Value = Union[bytes, StreamValue]
Database = dict[bytes, Value]

WRONGTYPE: Final = "WRONGTYPE Operation against a key holding the wrong kind of value"


def type_name(value: Value) -> str:
    return "string" if type(value) is bytes else "stream"


class Keyspace:
    """All databases of a node. `dbs[i]` is a plain dict so command handlers pay one
    dict lookup per key."""

    __slots__ = ("dbs",)

    def __init__(self, databases: int = 16) -> None:
        self.dbs: list[Database] = [{} for _ in range(databases)]

    def flush(self, index: int | None = None) -> None:
        if index is None:
            for db in self.dbs:
                db.clear()
        else:
            self.dbs[index].clear()

    def swap(self, a: int, b: int) -> None:
        self.dbs[a], self.dbs[b] = self.dbs[b], self.dbs[a]

    def key_count(self) -> int:
        return sum(len(db) for db in self.dbs)
