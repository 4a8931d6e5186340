"""Persistence commands: SAVE, BGSAVE, BGREWRITEAOF and WAITAOF (LASTSAVE lives with the
server commands). Replies and error texts are Redis 7.2's (rdb.c, aof.c, replication.c);
the work is done by the node's persistence service, reached through `ctx.node.persistence`,
and WAITAOF's by the node's waits (`ctx.node.waits`, which WAIT shares).
"""

from __future__ import annotations

from typing import Any

from node.commands.args import NOT_AN_INTEGER, SYNTAX_ERROR, to_int
from node.commands.context import Session
from node.commands.reply import OK, CommandError
from node.commands.stream_args import parse_timeout_ms
from node.commands.table import command


@command("save", 1, "admin noscript no_async_loading no_multi", group="server", summary="Synchronously saves the database(s) to disk.")
def save(ctx: Session, argv: list[bytes]) -> Any:
    ctx.node.persistence.save()
    return OK


@command("bgsave", -1, "admin noscript no_async_loading", group="server", summary="Asynchronously saves the database(s) to disk.")
def bgsave(ctx: Session, argv: list[bytes]) -> Any:
    schedule = False
    if len(argv) > 1:
        if len(argv) == 2 and argv[1].lower() == b"schedule":
            schedule = True
        else:
            raise CommandError(SYNTAX_ERROR)
    return ctx.node.persistence.bgsave(schedule, ctx.in_exec)


@command("bgrewriteaof", 1, "admin noscript no_async_loading", group="server", summary="Asynchronously rewrites the append-only file to disk.")
def bgrewriteaof(ctx: Session, argv: list[bytes]) -> Any:
    return ctx.node.persistence.bgrewriteaof(ctx.in_exec)


@command("waitaof", 4, "noscript", group="generic",
         summary="Blocks until all of the preceding write commands sent by the connection are written to the "
                 "append-only file of the master and/or replicas.")
def waitaof(ctx: Session, argv: list[bytes]) -> Any:
    numlocal = to_int(argv[1])
    if numlocal is None:
        raise CommandError(NOT_AN_INTEGER)
    if not 0 <= numlocal <= 1:
        raise CommandError("ERR value is out of range, value must between 0 and 1")
    numreplicas = to_int(argv[2])
    if numreplicas is None:
        raise CommandError(NOT_AN_INTEGER)
    if numreplicas < 0:
        raise CommandError("ERR value is out of range, must be positive")
    timeout = parse_timeout_ms(argv[3], ctx.now_ms())
    if ctx.node.role == "slave":
        raise CommandError(
            "ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are "
            "just local and are not propagated."
        )
    if numreplicas and numlocal and ctx.node.config.get("appendonly") != "yes":
        raise CommandError("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
    return ctx.node.waits.waitaof(ctx, numlocal, numreplicas, timeout)
