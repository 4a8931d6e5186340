"""Diagnostics: DEBUG (SLEEP, DIGEST, DIGEST-VALUE, SET-ACTIVE-EXPIRE, LOG), MEMORY, SLOWLOG
and LATENCY.

DEBUG DIGEST is the state check the effects design relies on (DESIGN.md principle 2):
two nodes with the same data report the same digest. Rill keeps no slow log and no
latency samples, so SLOWLOG and LATENCY answer as an instance with nothing recorded
(documented in docs/compatibility.md); their argument checks and texts are Redis 7.2's.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Any, Final

from node.commands.args import SYNTAX_ERROR, parse_int, to_int
from node.commands.context import Session
from node.commands.helptext import help_reply, unknown_subcommand
from node.commands.reply import OK, CommandError, ReplyError, Verbatim
from node.commands.table import command, container, subcommand
from node.engine.digest import digest_keyspace, digest_value
from node.engine.keyspace import Value

log = logging.getLogger("rill.server")

_DEBUG_HELP: Final = (
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
)

# The longest prefix C's strtod() would read: DEBUG SLEEP "abc" sleeps 0 seconds in Redis.
_STRTOD_PREFIX: Final = re.compile(rb"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _strtod(raw: bytes) -> float:
    match = _STRTOD_PREFIX.match(raw)
    return float(match.group(0)) if match else 0.0


@command("debug", -2, "admin noscript loading stale", group="server", summary="A container for debugging commands.")
def debug(ctx: Session, argv: list[bytes]) -> Any:
    sub = argv[1].lower()
    argc = len(argv)
    if sub == b"help" and argc == 2:
        return help_reply(argv[0], _DEBUG_HELP)
    if sub == b"sleep" and argc == 3:
        ctx.node.admin.sleep(max(0.0, _strtod(argv[2])))
        return OK
    if sub == b"digest" and argc == 2:
        return digest_keyspace(ctx.node.keyspace).decode()
    if sub == b"digest-value":
        # Logically expired keys too: DEBUG reads the database as it is.
        deadlines = ctx.expires.deadlines
        return [_value_digest(ctx.db.get(key), key in deadlines) for key in argv[2:]]
    if sub == b"set-active-expire" and argc == 3:
        ctx.node.expiry.active = _atoi(argv[2]) != 0
        return OK
    if sub == b"log" and argc == 3:
        log.warning("DEBUG LOG: %s", argv[2].decode("utf-8", "replace"))
        return OK
    if sub == b"error" and argc == 3:
        return ReplyError(argv[2].decode("utf-8", "replace"))
    raise CommandError(unknown_subcommand(argv))


def _value_digest(value: Value | None, volatile: bool) -> str:
    return "0" * 40 if value is None else digest_value(value, volatile).decode()


_ATOI_PREFIX: Final = re.compile(rb"\s*[-+]?\d+")


def _atoi(raw: bytes) -> int:
    """C's atoi(): the leading integer, 0 when there is none."""
    match = _ATOI_PREFIX.match(raw)
    return int(match.group()) if match else 0


# -- MEMORY ---------------------------------------------------------------------------------

container("memory", -2, group="server", summary="A container for memory diagnostics commands.")

_MEMORY_HELP: Final = (
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
)


def value_memory(key: bytes, value: Value) -> int:
    """Bytes held by a key and its value, as Python accounts them (MEMORY USAGE)."""
    held = sys.getsizeof(value) if isinstance(value, bytes) else value.memory_bytes()
    return sys.getsizeof(key) + held


@subcommand("memory", "usage", -3, "readonly", first_key=2, last_key=2, key_step=1,
            summary="Estimates the memory usage of a key.")
def memory_usage(ctx: Session, argv: list[bytes]) -> Any:
    i = 3
    while i < len(argv):
        if argv[i].lower() == b"samples" and i + 1 < len(argv):
            if parse_int(argv[i + 1]) < 0:
                raise CommandError(SYNTAX_ERROR)
            i += 2
        else:
            raise CommandError(SYNTAX_ERROR)
    value = ctx.db.get(argv[2])
    if value is None:
        return None
    # Rill measures the whole value, so SAMPLES (Redis's estimate of nested values) is moot.
    return value_memory(argv[2], value)


@subcommand("memory", "stats", 2, "", summary="Returns details about memory usage.")
def memory_stats(ctx: Session, argv: list[bytes]) -> Any:
    return ctx.node.admin.memory_stats()


@subcommand("memory", "doctor", 2, "", summary="Outputs a memory problems report.")
def memory_doctor(ctx: Session, argv: list[bytes]) -> Any:
    if ctx.node.keyspace.key_count() == 0:
        text = (
            "Hi Sam, this instance is empty or is using very little memory, my issues detector "
            "can't be used in these conditions. Please, leave for your mission on Earth and fill "
            "it with some data. The new Sam and I will be back to our programming as soon as I "
            "finished rebooting."
        )
    else:
        text = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base."
    return Verbatim("txt", (text + "\n").encode())


@subcommand("memory", "malloc-stats", 2, "", summary="Returns the allocator statistics.")
def memory_malloc_stats(ctx: Session, argv: list[bytes]) -> Any:
    return Verbatim("txt", b"Stats not supported for the current allocator")


@subcommand("memory", "purge", 2, "", summary="Asks the allocator to release memory.")
def memory_purge(ctx: Session, argv: list[bytes]) -> Any:
    return OK


@subcommand("memory", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def memory_help(ctx: Session, argv: list[bytes]) -> Any:
    return help_reply(argv[0], _MEMORY_HELP)


# -- SLOWLOG --------------------------------------------------------------------------------

container("slowlog", -2, group="server", summary="A container for slow log commands.")

_SLOWLOG_HELP: Final = (
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
)


@subcommand("slowlog", "get", -2, "admin loading stale", summary="Returns the slow log's entries.")
def slowlog_get(ctx: Session, argv: list[bytes]) -> Any:
    if len(argv) > 3:
        raise CommandError(unknown_subcommand(argv))
    if len(argv) == 3:
        count = to_int(argv[2])
        if count is None or count < -1:
            raise CommandError("ERR count should be greater than or equal to -1")
    return []


@subcommand("slowlog", "len", 2, "admin loading stale", summary="Returns the number of entries in the slow log.")
def slowlog_len(ctx: Session, argv: list[bytes]) -> Any:
    return 0


@subcommand("slowlog", "reset", 2, "admin loading stale", summary="Clears all entries from the slow log.")
def slowlog_reset(ctx: Session, argv: list[bytes]) -> Any:
    return OK


@subcommand("slowlog", "help", 2, "loading stale", summary="Show helpful text about the different subcommands.")
def slowlog_help(ctx: Session, argv: list[bytes]) -> Any:
    return help_reply(argv[0], _SLOWLOG_HELP)


# -- LATENCY --------------------------------------------------------------------------------

container("latency", -2, group="server", summary="A container for latency diagnostics commands.")

_LATENCY_HELP: Final = (
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
)

_LATENCY_DISABLED: Final = (
    "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. "
    'You may use "CONFIG SET latency-monitor-threshold <milliseconds>." in order to enable it. '
    "If we weren't in a deep space mission I'd suggest to take a look at "
    "https://redis.io/topics/latency-monitor.\n"
)


@subcommand("latency", "latest", 2, "admin noscript loading stale", summary="Returns the latest latency samples for all events.")
def latency_latest(ctx: Session, argv: list[bytes]) -> Any:
    return []


@subcommand("latency", "history", 3, "admin noscript loading stale", summary="Returns timestamp-latency samples for an event.")
def latency_history(ctx: Session, argv: list[bytes]) -> Any:
    return []


@subcommand("latency", "reset", -2, "admin noscript loading stale", summary="Resets the latency data for one or more events.")
def latency_reset(ctx: Session, argv: list[bytes]) -> Any:
    return 0


@subcommand("latency", "graph", 3, "admin noscript loading stale", summary="Returns a latency graph for an event.")
def latency_graph(ctx: Session, argv: list[bytes]) -> Any:
    raise CommandError("ERR No samples available for event '%s'" % argv[2].decode("utf-8", "replace"))


@subcommand("latency", "doctor", 2, "admin noscript loading stale", summary="Returns a human-readable latency analysis report.")
def latency_doctor(ctx: Session, argv: list[bytes]) -> Any:
    return Verbatim("txt", _LATENCY_DISABLED.encode())


@subcommand("latency", "histogram", -2, "admin noscript loading stale", summary="Returns the cumulative distribution of latencies of a subset or all commands.")
def latency_histogram(ctx: Session, argv: list[bytes]) -> Any:
    # Call counts are real; Rill keeps no per-command latency buckets.
    wanted = {a.decode("utf-8", "replace").lower() for a in argv[2:]}
    out: dict[bytes, Any] = {}
    for name, stat in ctx.node.admin.command_stats().items():
        if stat.calls and (not wanted or name in wanted):
            out[name.encode()] = {b"calls": stat.calls, b"histogram_usec": {}}
    return out


@subcommand("latency", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def latency_help(ctx: Session, argv: list[bytes]) -> Any:
    return help_reply(argv[0], _LATENCY_HELP)
