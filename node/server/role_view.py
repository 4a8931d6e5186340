"""The node's replication role as the server reads it: "master" or "slave" ("sentinel" for a
sentinel's server core). The server core, its dispatcher and the command handlers (through
`Core.role`) read it here; they are given it when they are built. The one writer is the
replication side: node/replication/role.py's `Role` (this class with the two transitions),
which `ReplicationNode` owns. A server built without one (a sentinel, a bare server core in
tests) gets a role nobody changes.
"""

from __future__ import annotations


class RoleView:
    """A role, read-only: `name` is "master", "slave" or "sentinel"."""

    def __init__(self, name: str = "master") -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name
