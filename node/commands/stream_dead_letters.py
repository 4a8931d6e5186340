"""RILL.XDEADLETTER: a consumer group's delivery limit and dead-letter stream (Rill's own; the
rules are in `node.engine.dead_letters`), and the mover the claiming commands use.

    RILL.XDEADLETTER SET key group MAXDELIVERIES n TO dlkey    -> OK
    RILL.XDEADLETTER GET key group                             -> [maxdeliveries n to dlkey] or nil
    RILL.XDEADLETTER UNSET key group                           -> 1, or 0 when there was none

The name has a dot, as module commands do and Redis's own never do, so no Redis release can
give it another meaning; the policy lives with the group (snapshots, COPY, DEBUG DIGEST) and
SET/UNSET are logged as sent.
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.args import to_int
from node.commands.context import Session
from node.commands.reply import OK, CommandError
from node.commands.stream_args import bytes_text, from_log, lookup_stream, propagate_all
from node.commands.stream_idmp import new_stream_effects
from node.commands.table import container, subcommand
from node.engine import stream_append
from node.engine.dead_letters import DeadLetterPolicy, Mover, history_fields
from node.engine.groups import ConsumerGroup, Nack
from node.engine.stream_append import open_stream
from node.engine.stream_ops import AddTrimArgs, Effect, StreamError, xack_effect
from node.engine.stream_value import StreamValue

container("rill.xdeadletter", -2, group="stream", summary="Rill: a consumer group's delivery limit and dead-letter stream.")

_HELP: Final = [
    "RILL.XDEADLETTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "SET <key> <group> MAXDELIVERIES <n> TO <dlkey>",
    "    Entries of the group delivered <n> times go to the stream <dlkey> instead of",
    "    being delivered again (claimed, or handed back with XNACK).",
    "GET <key> <group>",
    "    Return the group's delivery limit and dead-letter stream, or nil.",
    "UNSET <key> <group>",
    "    Remove the group's delivery limit.",
    "HELP",
    "    Print this help.",
]


def _group(ctx: Session, key: bytes, group_name: bytes) -> ConsumerGroup:
    value = lookup_stream(ctx.db, key)
    group = value.group(group_name) if value is not None else None
    if group is None:
        raise CommandError(f"NOGROUP No such key '{bytes_text(key)}' or consumer group '{bytes_text(group_name)}'")
    return group


# Both keys are keys of SET (first 2, last 7, step 5): the stream and the dead-letter stream
# that later claims of the group write to (ACL key permissions, COMMAND GETKEYS).
@subcommand("rill.xdeadletter", "set", 8, "write denyoom", 2, 7, 5,
            summary="Sets a consumer group's delivery limit and dead-letter stream.")
def xdeadletter_set(ctx: Session, argv: list[bytes]) -> Any:
    if argv[4].lower() != b"maxdeliveries" or argv[6].lower() != b"to":
        raise CommandError("ERR syntax error")
    limit = to_int(argv[5])
    if limit is None or limit < 1:
        raise CommandError("ERR MAXDELIVERIES must be a positive integer")
    key, target = argv[2], argv[7]
    if target == key:
        raise CommandError("ERR the dead-letter stream must be another key")
    lookup_stream(ctx.db, target)  # WRONGTYPE when it holds another type
    group = _group(ctx, key, argv[3])
    policy = DeadLetterPolicy(limit, target)
    if group.dead_letter != policy:
        group.dead_letter = policy
        propagate_all(ctx, [argv])
    return OK


@subcommand("rill.xdeadletter", "get", 4, "readonly", 2, 2, 1,
            summary="Returns a consumer group's delivery limit and dead-letter stream.")
def xdeadletter_get(ctx: Session, argv: list[bytes]) -> Any:
    policy = _group(ctx, argv[2], argv[3]).dead_letter
    if policy is None:
        return None
    return [b"maxdeliveries", policy.max_deliveries, b"to", policy.stream]


@subcommand("rill.xdeadletter", "unset", 4, "write", 2, 2, 1,
            summary="Removes a consumer group's delivery limit.")
def xdeadletter_unset(ctx: Session, argv: list[bytes]) -> Any:
    group = _group(ctx, argv[2], argv[3])
    if group.dead_letter is None:
        return 0
    group.dead_letter = None
    propagate_all(ctx, [argv])
    return 1


@subcommand("rill.xdeadletter", "help", 2, "loading stale", summary="Returns helpful text about the subcommands.")
def xdeadletter_help(ctx: Session, argv: list[bytes]) -> Any:
    return list(_HELP)


def mover(ctx: Session, key: bytes, group_name: bytes, value: StreamValue, group: ConsumerGroup) -> Mover | None:
    """The dead-letter mover of a group with a policy (None without one): see
    node.engine.dead_letters for the rule. A dead-letter key that holds another type by
    then keeps the entry where it is. Replaying the log moves nothing by itself: the log
    carries the moves the primary made."""
    policy = group.dead_letter
    if policy is None or from_log(ctx):
        return None
    db = ctx.db
    config = ctx.node.config

    def move(entry_id: int, nack: Nack) -> list[Effect] | None:
        if not policy.exhausted(nack):
            return None
        fields = value.get(entry_id)
        if fields is None:
            group.ack(entry_id)
            return [xack_effect(key, group_name, entry_id)]
        target, created = open_stream(db, policy.stream)
        if target is None:
            return None
        argv = [b"XADD", policy.stream, b"*", *history_fields(key, group_name, entry_id, nack, fields)]
        try:
            _, effect = stream_append.xadd(
                target, argv, AddTrimArgs(), ctx.now_ms(), config.stream_node_max_entries, config.stream_node_max_bytes
            )
        except StreamError:
            return None  # the dead-letter stream has no ID left (XSETID'd to the maximum)
        effects = [effect]
        if created:
            db[policy.stream] = target
            effects += new_stream_effects(ctx, policy.stream, target)
        group.ack(entry_id)
        effects.append(xack_effect(key, group_name, entry_id))
        return effects

    return move
