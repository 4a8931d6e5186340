"""XCOMMITTED, Rill's committed reads (docs/compatibility.md, *Committed reads*): for each
stream key, the highest entry ID that a majority of the replica set holds, so that
`XRANGE key - <that ID>` returns nothing a failover can take back. The node keeps the
bookkeeping (node/replication/committed.py, reached as `ctx.node.committed`).
"""

from __future__ import annotations

from typing import Any

from node.commands.context import Session
from node.commands.stream_args import lookup_stream
from node.commands.table import command
from node.engine.ids import format_id


@command("xcommitted", -2, "readonly fast", 1, -1, 1, group="stream",
         summary="Rill: the highest entry ID of each stream that a majority of the replica set holds.")
def xcommitted(ctx: Session, argv: list[bytes]) -> Any:
    keys = argv[1:]
    for key in keys:
        lookup_stream(ctx.db, key)  # WRONGTYPE before anything
    committed = ctx.node.committed
    committed.refresh()
    reply: list[bytes | None] = []
    for key in keys:
        entry = committed.committed_id(ctx.db_index, key)
        reply.append(None if entry is None else format_id(entry))
    return reply
