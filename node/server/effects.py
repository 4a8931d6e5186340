"""The effect log: the ordered stream of fully specified write commands a node performed,
with Redis-style replication offsets (bytes of RESP) under a replication id.

Effects of one command (or one EXEC) are a unit: when there are several they are wrapped
in MULTI/EXEC so a replica or an AOF replay applies all or none. Listeners (AOF writer,
replication) receive each committed unit as RESP bytes with the offset it ends at.
"""

from __future__ import annotations

import secrets
from typing import Callable

from node.server.resp import encode_command

Listener = Callable[[bytes, int], None]


def new_replid() -> str:
    return secrets.token_hex(20)


class EffectLog:
    def __init__(self) -> None:
        self.replid = new_replid()
        self.replid2 = "0" * 40
        self.second_offset = -1
        self.offset = 0
        self._db = -1  # database of the last logged effect (a SELECT precedes a change)
        self._pending: list[tuple[int, list[bytes]]] = []
        self._depth = 0
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def begin(self) -> None:
        self._depth += 1

    def append(self, db_index: int, argv: list[bytes]) -> None:
        self._pending.append((db_index, argv))
        if self._depth == 0:
            self.commit()

    def end(self) -> None:
        self._depth -= 1
        if self._depth == 0 and self._pending:
            self.commit()

    def commit(self) -> None:
        pending = self._pending
        if not pending:
            return
        self._pending = []
        parts: list[bytes] = []
        wrap = len(pending) > 1
        leading_select = pending[0][0] != self._db
        for db_index, argv in pending:
            if db_index != self._db:
                parts.append(encode_command([b"SELECT", str(db_index).encode()]))
                self._db = db_index
            parts.append(encode_command(argv))
        if wrap:
            # MULTI goes after any leading SELECT so the transaction body is self-contained.
            parts.insert(1 if leading_select else 0, encode_command([b"MULTI"]))
            parts.append(encode_command([b"EXEC"]))
        data = b"".join(parts)
        self.offset += len(data)
        for listener in self._listeners:
            listener(data, self.offset)
