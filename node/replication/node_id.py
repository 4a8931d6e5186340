"""A fenced-mode node's durable identity: 40 hex characters in `rill-node-id` in `dir`,
created at its first start and kept across restarts (unlike the run id, which changes at
every start, as Redis's does).

It is what the replica set counts members by: a replica gives it to its primary in its
handshake, so the primary's lease counts each member's echoes once however often it restarts
(keyed by run ids, a replica in a crash loop counted as several members and kept a cut-off
primary's lease alive), and INFO and FENCE replies show it to the sentinels, which count
fenced members and known replicas by it (docs/safety.md, *Fenced mode*). A directory copied
to make a new node must not keep the file: two nodes with one identity count as one member.
"""

from __future__ import annotations

import os
from typing import Final

from node.persistence.files import atomic_write
from replication import new_run_id
from replication.wire import is_run_id

FILENAME: Final = "rill-node-id"


class NodeIdError(Exception):
    """The file exists but does not hold an identity: the node must not start as another."""


def load_node_id(directory: str) -> str:
    """The node's identity, created (durably) when the directory has none yet."""
    path = os.path.join(directory, FILENAME)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        node_id = new_run_id()
        atomic_write(path, node_id.encode() + b"\n")
        return node_id
    text = raw.decode("ascii", "replace").strip()
    if not is_run_id(text):
        raise NodeIdError(f"{path} does not hold a node id (40 lowercase hex characters)")
    return text
