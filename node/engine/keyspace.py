"""The keyspace: numbered databases mapping keys to values, each with the deadlines of its
volatile keys, and the type rules.

Values are `bytes` (the string type) or `StreamValue` (a `Stream` with its consumer
groups). Deadlines live beside the values (`Expires`), as Redis keeps `db->expires` beside
`db->dict`. Pure data: no I/O, no clock.
"""

from __future__ import annotations

from typing import Final, Union

from node.engine.expires import Expires
from node.engine.stream_value import StreamValue

Value = Union[bytes, StreamValue]
Database = dict[bytes, Value]

WRONGTYPE: Final = "WRONGTYPE Operation against a key holding the wrong kind of value"


def type_name(value: Value) -> str:
    return "string" if type(value) is bytes else "stream"


class Keyspace:
    """All databases of a node. `dbs[i]` is a plain dict so command handlers pay one
    dict lookup per key; `expires[i]` holds the deadlines of database i's volatile keys."""

    __slots__ = ("dbs", "expires")

    def __init__(self, databases: int = 16) -> None:
        self.dbs: list[Database] = [{} for _ in range(databases)]
        self.expires: list[Expires] = [Expires() for _ in range(databases)]

    def flush(self, index: int | None = None) -> None:
        for i in range(len(self.dbs)) if index is None else (index,):
            self.dbs[i].clear()
            self.expires[i].clear()

    def swap(self, a: int, b: int) -> None:
        self.dbs[a], self.dbs[b] = self.dbs[b], self.dbs[a]
        self.expires[a], self.expires[b] = self.expires[b], self.expires[a]

    def replace_with(self, other: Keyspace) -> None:
        """Take other's data in place: the dict and Expires objects sessions point at stay."""
        for db, expires, new_db, new_expires in zip(self.dbs, self.expires, other.dbs, other.expires):
            db.clear()
            db.update(new_db)
            expires.replace_with(new_expires)

    def delete(self, index: int, key: bytes) -> Value | None:
        """Remove key and its deadline from database index; the value, or None if absent."""
        value = self.dbs[index].pop(key, None)
        if value is not None:
            expires = self.expires[index]
            if expires.deadlines:
                expires.remove(key)
        return value

    def key_count(self) -> int:
        return sum(len(db) for db in self.dbs)

    def volatile_count(self) -> int:
        return sum(len(expires) for expires in self.expires)
