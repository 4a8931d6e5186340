"""The rules that refuse a primary's writes before they run, beside the read-only replica and
maxmemory (the dispatcher's own, node/server/dispatch.py). Each has one writer, which is given
this object when it is built; the dispatcher reads them and is told when one changes (a write
takes its fast path only while none is set):

- `denial`: the -MISCONF text while the AOF or a snapshot cannot be written (and PING gets it
  too, as in Redis); written only by node/persistence/service.py (`deny_writes`).
- `quorum`: returns the -NOREPLICAS text when writes must be refused now (min-replicas-to-write,
  fenced mode's lease); written only by node/replication/role.py (`require_quorum`).
- `lease`: fenced mode's refusal of what a primary adds to its log on its own (PUBLISH, the
  deletion of an expired key); written only by node/replication/role.py (`require_lease`).
"""

from __future__ import annotations

from collections.abc import Callable

Check = Callable[[], str | None]


class WriteGates:
    """The write gates of one server (see the module docstring for who sets each)."""

    def __init__(self) -> None:
        self._denial: str | None = None
        self._quorum: Check | None = None
        self._lease: Check | None = None
        self._listeners: list[Callable[[], None]] = []

    @property
    def denial(self) -> str | None:
        return self._denial

    @property
    def quorum(self) -> Check | None:
        return self._quorum

    @property
    def lease(self) -> Check | None:
        return self._lease

    def on_change(self, listener: Callable[[], None]) -> None:
        """`listener` is called whenever a gate is set or cleared (the dispatcher's)."""
        self._listeners.append(listener)

    def deny_writes(self, text: str | None) -> None:
        """Persistence: refuse writes with `text` (None: stop refusing)."""
        self._denial = text
        self._changed()

    def require_quorum(self, check: Check | None) -> None:
        """Replication: ask `check` before each write (None: stop asking)."""
        self._quorum = check
        self._changed()

    def require_lease(self, check: Check | None) -> None:
        """Replication, in fenced mode: `check` says why the primary may not add to its log
        on its own now."""
        self._lease = check
        self._changed()

    def _changed(self) -> None:
        for listener in self._listeners:
            listener()
