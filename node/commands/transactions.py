"""Transactions: MULTI, EXEC, DISCARD, WATCH and UNWATCH, with Redis 7.2's rules (multi.c).

The dispatcher queues commands while a client is in MULTI and marks the transaction doomed
when one is rejected before running (unknown, wrong arity, …). EXEC then:

* aborts with EXECABORT if the transaction is doomed (checked before WATCH, as Redis does);
* replies a null array if a WATCHed key was modified (by anyone, this client included),
  was flushed/swapped while it existed, or has expired since it was watched;
* otherwise unwatches and runs every queued command through the server, collecting each
  reply (errors as values). A command that would block answers at once instead, as if its
  timeout had expired, because nothing may wait inside a transaction. Every queued command
  sees the time EXEC started, so no key expires half-way through (Session.command_ms). A queued
  CLIENT KILL that closes the caller ends its replies: EXEC's array is cut after the kill's
  reply (the rest still runs), as Redis's CLIENT_CLOSE_AFTER_REPLY does.

The server wraps the whole EXEC in one effect-log unit, so the transaction's effects reach
replicas and the AOF as one MULTI/EXEC (or as a single command when there is only one).
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.context import Block, Session
from node.commands.expiry import is_expired
from node.commands.reply import NULL_ARRAY, OK, CommandError, Pushed, ReplyError, Truncated
from node.commands.table import command, queues_write

_EXECABORT: Final = "EXECABORT Transaction discarded because of previous errors."
_READONLY: Final = "READONLY You can't write against a read only replica."


@command("multi", 1, "noscript loading stale fast allow_busy", group="transactions",
         summary="Starts a transaction.")
def multi(ctx: Session, argv: list[bytes]) -> Any:
    # A nested MULTI is refused but does not doom the transaction.
    if ctx.multi is not None:
        raise CommandError("ERR MULTI calls can not be nested")
    ctx.multi = []
    ctx.multi_error = False
    return OK


def _end_transaction(ctx: Session) -> list[list[bytes]]:
    queued = ctx.multi or []
    ctx.discard_transaction()
    return queued


def _writes_refused(ctx: Session, queued: list[list[bytes]]) -> bool:
    """The node became a read-only replica while writes were queued (processCommand
    rejects such an EXEC as a whole); the replication link itself may write."""
    if ctx.node.role != "slave" or "master" in ctx.flags:
        return False
    return queues_write(queued)


def _run_queued(ctx: Session, argv: list[bytes]) -> Any:
    reply = ctx.node.execute(ctx, argv)
    if type(reply) is not Block:
        return reply
    try:
        ready = reply.retry(ctx)
    except CommandError as exc:
        return ReplyError(exc.message)
    return reply.timeout_reply if ready is None else ready


@command("exec", 1, "noscript loading stale skip_slowlog", group="transactions",
         summary="Executes all commands in a transaction.")
def exec_(ctx: Session, argv: list[bytes]) -> Any:
    if ctx.multi is None:
        raise CommandError("ERR EXEC without MULTI")
    refused = _writes_refused(ctx, ctx.multi)
    doomed = ctx.multi_error
    dirty = ctx.watch_dirty or _watched_key_expired(ctx)
    queued = _end_transaction(ctx)
    if refused:
        raise CommandError("EXECABORT Transaction discarded because of: " + _READONLY)
    if doomed:
        raise CommandError(_EXECABORT)
    if dirty:
        return NULL_ARRAY
    ctx.exec_ms = ctx.now_ms()
    ctx.in_exec = True
    # Pushes a queued command produces (SUBSCRIBE's confirmations, a message PUBLISH sends
    # this very client) go inside EXEC's array, before that command's reply.
    outer = ctx.pushes
    pushed: list[bytes] = []
    replies: list[Any] = []
    closed = False
    try:
        for command_argv in queued:
            ctx.pushes = pushed
            reply = _run_queued(ctx, command_argv)
            if pushed:
                reply = Pushed(b"".join(pushed), reply)
                pushed.clear()
            if not closed:
                replies.append(reply)
                # A queued CLIENT KILL that closed the caller: its own reply is the last the
                # caller gets; the rest runs without replies (CLIENT_CLOSE_AFTER_REPLY).
                closed = ctx.closing
    finally:
        ctx.pushes = outer
        ctx.in_exec = False
    return Truncated(len(queued), replies) if len(replies) < len(queued) else replies


def _watched_key_expired(ctx: Session) -> bool:
    """isWatchedKeyExpired: a key watched while it existed has expired since."""
    return any(
        not expired_then and is_expired(ctx, key, db) for (db, key), expired_then in ctx.watched.items()
    )


@command("discard", 1, "noscript loading stale fast allow_busy", group="transactions",
         summary="Discards a transaction.")
def discard(ctx: Session, argv: list[bytes]) -> Any:
    if ctx.multi is None:
        raise CommandError("ERR DISCARD without MULTI")
    _end_transaction(ctx)
    return OK


@command("watch", -2, "noscript loading stale fast allow_busy", 1, -1, 1, group="transactions",
         summary="Monitors changes to keys to determine the execution of a transaction.")
def watch(ctx: Session, argv: list[bytes]) -> Any:
    if ctx.multi is not None:
        raise CommandError("ERR WATCH inside MULTI is not allowed")
    # Once dirty, the next EXEC fails whatever else is watched.
    if not ctx.watch_dirty:
        watches = ctx.node.watches
        for key in argv[1:]:
            watches.watch(ctx, key)
    return OK


@command("unwatch", 1, "noscript loading stale fast allow_busy", group="transactions",
         summary="Forgets about watched keys of a transaction.")
def unwatch(ctx: Session, argv: list[bytes]) -> Any:
    ctx.node.watches.unwatch_all(ctx)
    return OK
