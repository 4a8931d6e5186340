"""REPLCONF, PSYNC and SYNC: a redis-server replicating from this node over Redis's protocol
(node/replication/redis_primary.py does the work, reached through `ctx.node.replication`).
Replies and errors are Redis 7.2's (replication.c replconfCommand, syncCommand); after
PSYNC or SYNC the connection carries the replication stream and no more replies.
"""

from __future__ import annotations

from typing import Any

from node.commands.context import Session
from node.commands.table import command


@command("replconf", -1, "admin noscript loading stale allow_busy", group="server",
         summary="An internal command for configuring the replication stream.")
def replconf(ctx: Session, argv: list[bytes]) -> Any:
    return ctx.node.replication.replconf(ctx, argv)


@command("psync", -3, "admin noscript no_async_loading no_multi", group="server",
         summary="An internal command used in replication.")
def psync(ctx: Session, argv: list[bytes]) -> Any:
    return ctx.node.replication.sync(ctx, argv, True)


@command("sync", 1, "admin noscript no_async_loading no_multi", group="server",
         summary="An internal command used in replication.")
def sync(ctx: Session, argv: list[bytes]) -> Any:
    return ctx.node.replication.sync(ctx, argv, False)
