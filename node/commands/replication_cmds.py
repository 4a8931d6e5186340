"""Replication commands: REPLICAOF/SLAVEOF, WAIT, ROLE and FAILOVER (WAITAOF lives with the
persistence commands), and fenced mode's FENCE and SLAVEOF NO ONE EPOCH (docs/safety.md,
*Fenced mode*). Replies and error texts are Redis 7.2's (replication.c); the work is done by
the node's replication side, reached through `ctx.node.replication`, and WAIT's by the node's
waits (`ctx.node.waits`, which WAITAOF shares).
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.args import NOT_AN_INTEGER, to_int
from node.commands.context import Session
from node.commands.reply import CommandError
from node.commands.stream_args import parse_timeout_ms
from node.commands.table import command

_WAIT_ON_REPLICA: Final = (
    "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is "
    "configured to be writable (which is not the default) writes to replicas are just local and are not "
    "propagated."
)
_INVALID_PORT: Final = "ERR Invalid master port"


# SLAVEOF NO ONE EPOCH e POSITION log-epoch offset (8 arguments) is fenced mode's promotion,
# sent by a sentinel's failover in the failover's epoch with the position the promoted
# replica's FENCE reply showed (node/sentinel/policy/failover.py); the 5-argument form without the
# position is refused in fenced mode but parsed, for its error.
@command("replicaof", 3, "admin noscript stale no_async_loading", group="server", extra_argc=(5, 8),
         summary="Configures a server as replica of another, or promotes it to a master.")
@command("slaveof", 3, "admin noscript stale no_async_loading", group="server", extra_argc=(5, 8),
         summary="Sets a Redis server as a replica of another, or promotes it to being a master.")
def replicaof(ctx: Session, argv: list[bytes]) -> Any:
    promotion = argv[1].lower() == b"no" and argv[2].lower() == b"one"
    epoch = None
    position = None
    if len(argv) > 3:
        if not promotion or argv[3].lower() != b"epoch" or (len(argv) == 8 and argv[5].lower() != b"position"):
            raise CommandError(f"ERR wrong number of arguments for '{argv[0].decode('utf-8', 'replace').lower()}' command")
        numbers: list[int] = []
        for arg in (argv[4], *argv[6:8]):
            number = to_int(arg)
            if number is None or number < 0:
                raise CommandError(NOT_AN_INTEGER)
            numbers.append(number)
        epoch = numbers[0]
        if len(argv) == 8:
            position = (numbers[1], numbers[2])
    if promotion:
        return ctx.node.replication.promote(ctx, epoch, position=position)
    port = to_int(argv[2])
    if port is None or not 0 <= port <= 65535:
        raise CommandError(_INVALID_PORT)
    return ctx.node.replication.replicaof(ctx, argv[1].decode("utf-8", "replace"), port)


@command("wait", 3, "", group="connection",
         summary="Blocks until the asynchronous replication of all preceding write commands sent by the "
                 "connection is completed.")
def wait(ctx: Session, argv: list[bytes]) -> Any:
    # The role is checked before the arguments, as waitCommand does.
    if ctx.node.role == "slave":
        raise CommandError(_WAIT_ON_REPLICA)
    numreplicas = to_int(argv[1])
    if numreplicas is None:
        raise CommandError(NOT_AN_INTEGER)
    timeout = parse_timeout_ms(argv[2], ctx.now_ms())
    return ctx.node.waits.wait(ctx, numreplicas, timeout)


@command("role", 1, "noscript loading stale fast", group="server", summary="Returns the replication role.")
def role(ctx: Session, argv: list[bytes]) -> Any:
    return ctx.node.replication.role_reply()


@command("failover", -1, "admin noscript stale", group="server",
         summary="Starts a coordinated failover from a server to one of its replicas.")
def failover(ctx: Session, argv: list[bytes]) -> Any:
    return ctx.node.replication.failover.command(ctx, argv)


@command("fence", 2, "admin noscript stale fast", group="server",
         summary="Fenced mode: follow and lead nothing older than the epoch; returns [fence epoch, log epoch, offset].")
def fence(ctx: Session, argv: list[bytes]) -> Any:
    epoch = to_int(argv[1])
    if epoch is None or epoch < 0:
        raise CommandError(NOT_AN_INTEGER)
    return ctx.node.replication.fence(epoch)
