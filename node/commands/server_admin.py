"""Server-wide commands: INFO, TIME, LASTSAVE, MONITOR, SHUTDOWN and the FUNCTION and
SCRIPT KILL stubs of a node without scripting.

Replies and error texts follow Redis 7.2 (server.c, replication.c, functions.c). The INFO
text itself is rendered by the node (`node.app.info`), which sees every part's figures.
"""

from __future__ import annotations

import time
from typing import Any, Final

from node.commands.args import SYNTAX_ERROR
from node.commands.context import Block, ClientSession, Session
from node.commands.helptext import help_reply
from node.commands.reply import OK, CommandError, Raw, Verbatim
from node.commands.table import command, container, subcommand

# MONITOR from a client that already is a monitor (or a replica) is ignored without a reply.
_NO_REPLY: Final = Raw(b"")

_SHUTDOWN_FLAGS: Final = {b"nosave": "nosave", b"save": "save", b"now": "now", b"force": "force"}


@command("info", -1, "loading stale", group="server", summary="Returns information and statistics about the server.")
def info(ctx: ClientSession, argv: list[bytes]) -> Any:
    sections = [a.decode("utf-8", "replace").lower() for a in argv[1:]]
    text = ctx.core.admin.info(sections).encode()
    if ctx.core.mode == "sentinel":
        return text  # sentinelInfoCommand replies a bulk string, in RESP3 too
    return Verbatim("txt", text)


@command("time", 1, "loading stale fast", group="server", summary="Returns the server time.")
def time_(ctx: ClientSession, argv: list[bytes]) -> Any:
    usec = time.time_ns() // 1000
    return [str(usec // 1_000_000).encode(), str(usec % 1_000_000).encode()]


@command("lastsave", 1, "loading stale fast", group="server", summary="Returns the Unix timestamp of the last successful save to disk.")
def lastsave(ctx: Session, argv: list[bytes]) -> Any:
    return ctx.node.persistence.lastsave


@command("monitor", 1, "admin noscript loading stale", group="server", summary="Listens for all requests received by the server in real-time.")
def monitor(ctx: ClientSession, argv: list[bytes]) -> Any:
    if ctx.in_exec:
        raise CommandError("ERR MONITOR isn't allowed for DENY BLOCKING client")
    if "monitor" in ctx.flags or "replica" in ctx.flags:
        return _NO_REPLY
    ctx.core.clients.add_monitor(ctx)
    return OK


@command("shutdown", -1, "admin noscript loading stale no_multi allow_busy", group="server",
         summary="Synchronously saves the database(s) to disk and shuts down the Redis server.")
def shutdown(ctx: ClientSession, argv: list[bytes]) -> Any:
    flags: set[str] = set()
    abort = False
    for raw in argv[1:]:
        word = raw.lower()
        if word == b"abort":
            abort = True
        elif word in _SHUTDOWN_FLAGS:
            flags.add(_SHUTDOWN_FLAGS[word])
        else:
            raise CommandError(SYNTAX_ERROR)
    if (abort and flags) or {"save", "nosave"} <= flags:
        raise CommandError(SYNTAX_ERROR)
    if abort:
        # Rill's shutdown starts at once (there is no wait for lagging replicas to abort).
        raise CommandError("ERR No shutdown in progress.")
    ctx.core.admin.request_shutdown(ctx, frozenset(flags))
    # As in Redis, the caller stays blocked and gets no reply: its connection closes with
    # the others when the node stops.
    return Block([], 0, _never_ready)


def _never_ready(session: ClientSession) -> None:
    return None


# -- FUNCTION: Rill has no scripting engine, so there is never a library to list or flush ----

container("function", -2, group="scripting", summary="A container for function commands.")

_FUNCTION_HELP: Final = (
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries (Rill has none).",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "KILL",
    "    Kill a running function (there never is one).",
)


@subcommand("function", "list", -2, "noscript", summary="Returns information about all libraries.")
def function_list(ctx: ClientSession, argv: list[bytes]) -> Any:
    with_code = library = False
    i = 2
    while i < len(argv):
        word = argv[i].lower()
        if word == b"withcode" and not with_code:
            with_code = True
        elif word == b"libraryname" and not library:
            if i + 1 >= len(argv):
                raise CommandError("ERR library name argument was not given")
            library = True
            i += 1
        else:
            raise CommandError("ERR Unknown argument %s" % argv[i].decode("utf-8", "replace"))
        i += 1
    return []


@subcommand("function", "flush", -2, "write noscript", summary="Deletes all libraries and functions.")
def function_flush(ctx: ClientSession, argv: list[bytes]) -> Any:
    if len(argv) > 3 or (len(argv) == 3 and argv[2].lower() not in (b"sync", b"async")):
        raise CommandError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
    return OK


# Sentinel sends SCRIPT KILL to an instance answering -BUSY (and a client may FUNCTION KILL):
# with no scripting, nothing ever runs, so both get Redis's idle reply (script.c).
NOTBUSY: Final = "NOTBUSY No scripts in execution right now."


@subcommand("function", "kill", 2, "noscript allow_busy", summary="Terminates a function during execution.")
def function_kill(ctx: ClientSession, argv: list[bytes]) -> Any:
    raise CommandError(NOTBUSY)


container("script", -2, group="scripting", summary="A container for Lua scripts management commands.")


@subcommand("script", "kill", 2, "noscript allow_busy", summary="Terminates a server-side Lua script during execution.")
def script_kill(ctx: ClientSession, argv: list[bytes]) -> Any:
    raise CommandError(NOTBUSY)


@subcommand("script", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def script_help(ctx: ClientSession, argv: list[bytes]) -> Any:
    return help_reply(argv[0], ("KILL", "    Kill the currently executing Lua script (there never is one)."))


@subcommand("function", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def function_help(ctx: ClientSession, argv: list[bytes]) -> Any:
    return help_reply(argv[0], _FUNCTION_HELP)
