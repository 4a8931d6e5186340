"""Pub/Sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE,
SUNSUBSCRIBE, PUBLISH, SPUBLISH and PUBSUB (Redis 7.2's pubsub.c).

The subscription commands reply only with pushes (one confirmation per name, sent whatever
CLIENT REPLY says), so their own reply is empty; the server's registry (node/server/pubsub.py)
does the work. Every command here uses only the server `Core`: a sentinel runs the
(un)subscribe family as they are (its PUBLISH is its own).
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.context import CHANNEL, PATTERN, SHARD, ClientSession, Session
from node.commands.helptext import help_reply, unknown_subcommand
from node.commands.reply import CommandError, Raw
from node.commands.table import command, container, subcommand

# The confirmations are pushes: the command itself adds nothing to them.
_PUSHED: Final = Raw(b"")


@command("subscribe", -2, "pubsub noscript loading stale", group="pubsub",
         summary="Listens for messages published to channels.")
def subscribe(ctx: ClientSession, argv: list[bytes]) -> Any:
    ctx.core.pubsub.subscribe(ctx, CHANNEL, argv[1:])
    return _PUSHED


@command("unsubscribe", -1, "pubsub noscript loading stale", group="pubsub",
         summary="Stops listening to messages posted to channels.")
def unsubscribe(ctx: ClientSession, argv: list[bytes]) -> Any:
    ctx.core.pubsub.unsubscribe(ctx, CHANNEL, argv[1:])
    return _PUSHED


@command("psubscribe", -2, "pubsub noscript loading stale", group="pubsub",
         summary="Listens for messages published to channels that match one or more patterns.")
def psubscribe(ctx: ClientSession, argv: list[bytes]) -> Any:
    ctx.core.pubsub.subscribe(ctx, PATTERN, argv[1:])
    return _PUSHED


@command("punsubscribe", -1, "pubsub noscript loading stale", group="pubsub",
         summary="Stops listening to messages published to channels that match one or more patterns.")
def punsubscribe(ctx: ClientSession, argv: list[bytes]) -> Any:
    ctx.core.pubsub.unsubscribe(ctx, PATTERN, argv[1:])
    return _PUSHED


@command("ssubscribe", -2, "pubsub noscript loading stale", 1, -1, 1, group="pubsub",
         summary="Listens for messages published to shard channels.")
def ssubscribe(ctx: ClientSession, argv: list[bytes]) -> Any:
    if ctx.in_exec:
        # Inside EXEC the client may not wait for anything (CLIENT_DENY_BLOCKING); SUBSCRIBE
        # and PSUBSCRIBE are let through there for backward compatibility, SSUBSCRIBE is not.
        raise CommandError("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
    ctx.core.pubsub.subscribe(ctx, SHARD, argv[1:])
    return _PUSHED


@command("sunsubscribe", -1, "pubsub noscript loading stale", 1, -1, 1, group="pubsub",
         summary="Stops listening to messages posted to shard channels.")
def sunsubscribe(ctx: ClientSession, argv: list[bytes]) -> Any:
    ctx.core.pubsub.unsubscribe(ctx, SHARD, argv[1:])
    return _PUSHED


@command("publish", 3, "pubsub loading stale fast may_replicate", group="pubsub",
         summary="Posts a message to a channel.")
def publish(ctx: Session, argv: list[bytes]) -> Any:
    _check_lease(ctx)
    receivers = ctx.core.pubsub.publish(argv[1], argv[2])
    _to_replicas(ctx, b"PUBLISH", argv)
    return receivers


@command("spublish", 3, "pubsub loading stale fast may_replicate", 1, 1, 1, group="pubsub",
         summary="Post a message to a shard channel")
def spublish(ctx: Session, argv: list[bytes]) -> Any:
    _check_lease(ctx)
    receivers = ctx.core.pubsub.spublish(argv[1], argv[2])
    _to_replicas(ctx, b"SPUBLISH", argv)
    return receivers


def _check_lease(ctx: ClientSession) -> None:
    """Fenced mode: a primary without its lease refuses to publish, as it refuses writes: the
    message would go into its log (a tail a failover discards) and to its replicas."""
    refusal = ctx.core.lease_refusal()
    if refusal is not None:
        raise CommandError(refusal)


def _to_replicas(ctx: Session, name: bytes, argv: list[bytes]) -> None:
    """A primary's PUBLISH reaches its replicas' subscribers too (Redis propagates it with
    PROPAGATE_REPL: over the replication stream, never into the AOF); a replica's stays
    local (one its primary sent is applied here with role "slave" too)."""
    if ctx.core.role == "master":
        ctx.propagate_to_replicas(name, argv[1], argv[2])


# -- PUBSUB: introspection --------------------------------------------------------------------

container("pubsub", -2, group="pubsub", summary="A container for Pub/Sub commands.")

_HELP: Final = (
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
)


def _channels(ctx: ClientSession, argv: list[bytes], kind: int) -> list[bytes]:
    if len(argv) > 3:
        raise CommandError(unknown_subcommand(argv))
    return ctx.core.pubsub.channel_names(kind, argv[2] if len(argv) == 3 else None)


def _numsub(ctx: ClientSession, argv: list[bytes], kind: int) -> list[Any]:
    out: list[Any] = []
    for channel in argv[2:]:
        out += [channel, ctx.core.pubsub.subscriber_count(kind, channel)]
    return out


@subcommand("pubsub", "channels", -2, "pubsub loading stale", summary="Returns the active channels.")
def pubsub_channels(ctx: ClientSession, argv: list[bytes]) -> Any:
    return _channels(ctx, argv, CHANNEL)


@subcommand("pubsub", "numsub", -2, "pubsub loading stale", summary="Returns a count of subscribers to channels.")
def pubsub_numsub(ctx: ClientSession, argv: list[bytes]) -> Any:
    return _numsub(ctx, argv, CHANNEL)


@subcommand("pubsub", "numpat", 2, "pubsub loading stale", summary="Returns a count of unique pattern subscriptions.")
def pubsub_numpat(ctx: ClientSession, argv: list[bytes]) -> Any:
    return ctx.core.pubsub.pattern_count()


@subcommand("pubsub", "shardchannels", -2, "pubsub loading stale", summary="Returns the active shard channels.")
def pubsub_shardchannels(ctx: ClientSession, argv: list[bytes]) -> Any:
    return _channels(ctx, argv, SHARD)


@subcommand("pubsub", "shardnumsub", -2, "pubsub loading stale",
            summary="Returns the count of subscribers of shard channels.")
def pubsub_shardnumsub(ctx: ClientSession, argv: list[bytes]) -> Any:
    return _numsub(ctx, argv, SHARD)


@subcommand("pubsub", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def pubsub_help(ctx: ClientSession, argv: list[bytes]) -> Any:
    return help_reply(argv[0], _HELP)
