"""Connection commands: PING, ECHO, QUIT, SELECT, AUTH, HELLO, RESET.

PING, AUTH and HELLO use only the server `Core`: a sentinel runs them too (HELLO then says
`mode: sentinel` and has no `role`)."""

from __future__ import annotations

from typing import Any, Final

from node import reported_version
from node.commands.acl import MULTI, TOPLEVEL, log_denial
from node.commands.acl_rules import DENIED_AUTH
from node.commands.args import parse_int
from node.commands.context import ClientSession, Session
from node.commands.reply import OK, CommandError, Raw
from node.commands.table import command

_PONG: Final = Raw(b"+PONG\r\n")


@command("ping", -1, "fast", group="connection", summary="Returns the server's liveliness response.")
def ping(ctx: ClientSession, argv: list[bytes]) -> Any:
    if len(argv) > 2:
        raise CommandError("ERR wrong number of arguments for 'ping' command")
    if ctx.subscriptions is not None and ctx.proto == 2:
        # A RESP2 client in Pub/Sub mode reads arrays only: ["pong", argument or ""].
        return [b"pong", argv[1] if len(argv) == 2 else b""]
    if len(argv) == 2:
        return argv[1]
    return _PONG


@command("echo", 2, "loading stale fast", group="connection", summary="Returns the given string.")
def echo(ctx: ClientSession, argv: list[bytes]) -> Any:
    return argv[1]


@command("quit", -1, "noscript loading stale fast no_auth allow_busy", group="connection", summary="Closes the connection.")
def quit_(ctx: ClientSession, argv: list[bytes]) -> Any:
    ctx.closing = True
    return OK


@command("select", 2, "loading stale fast", group="connection", summary="Changes the selected database.")
def select(ctx: Session, argv: list[bytes]) -> Any:
    index = parse_int(argv[1], "ERR value is not an integer or out of range")
    if not 0 <= index < len(ctx.node.keyspace.dbs):
        raise CommandError("ERR DB index is out of range")
    ctx.select(index)
    return OK


_WRONGPASS: Final = "WRONGPASS invalid username-password pair or user is disabled."


def _authenticate(ctx: ClientSession, argv0: bytes, username: bytes, password: bytes) -> None:
    """checkPasswordBasedAuth: the client becomes the user, or the failure is logged (as an
    `auth` entry naming the command as sent) and WRONGPASS raised."""
    user = ctx.core.acl.authenticate(username, password)
    if user is None:
        log_denial(ctx, DENIED_AUTH, MULTI if ctx.multi is not None or ctx.in_exec else TOPLEVEL, argv0, username)
        raise CommandError(_WRONGPASS)
    ctx.authenticated = True
    ctx.user = user


@command("auth", -2, "noscript loading stale fast no_auth allow_busy", group="connection",
         summary="Authenticates the connection.")
def auth(ctx: ClientSession, argv: list[bytes]) -> Any:
    if len(argv) > 3:
        raise CommandError("ERR syntax error")
    if len(argv) == 2:
        if ctx.core.acl.default.nopass:
            raise CommandError(
                "ERR AUTH <password> called without any password configured for the default user. "
                "Are you sure your configuration is correct?"
            )
        _authenticate(ctx, argv[0], b"default", argv[1])
    else:
        _authenticate(ctx, argv[0], argv[1], argv[2])
    return OK


@command("hello", -1, "noscript loading stale fast no_auth allow_busy", group="connection",
         summary="Handshakes with the server.")
def hello(ctx: ClientSession, argv: list[bytes]) -> Any:
    proto = ctx.proto
    i = 1
    if len(argv) >= 2:
        ver = parse_int(argv[1], "ERR Protocol version is not an integer or out of range")
        if ver < 2 or ver > 3:
            raise CommandError("NOPROTO unsupported protocol version")
        proto = ver
        i = 2
    setname: bytes | None = None
    credentials: tuple[bytes, bytes] | None = None
    while i < len(argv):
        opt = argv[i].lower()
        more = len(argv) - i - 1
        if opt == b"auth" and more >= 2:
            credentials = (argv[i + 1], argv[i + 2])  # the last AUTH option counts
            i += 3
        elif opt == b"setname" and more >= 1:
            setname = argv[i + 1]
            if any(c <= 32 or c > 126 for c in setname):
                raise CommandError("ERR Client names cannot contain spaces, newlines or special characters.")
            i += 2
        else:
            raise CommandError("ERR Syntax error in HELLO option '%s'" % argv[i].decode("utf-8", "replace"))
    if credentials is not None:
        _authenticate(ctx, argv[0], *credentials)
    if not ctx.authenticated:
        raise CommandError("NOAUTH HELLO must be called with the client already authenticated, "
                           "otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
                           "authenticate the client and select the RESP protocol version at the same time")
    if setname is not None:
        ctx.name = setname
    ctx.proto = proto
    reply: dict[bytes, Any] = {
        b"server": b"redis",
        b"version": reported_version(ctx.core.mode).encode(),
        b"proto": proto,
        b"id": ctx.id,
        b"mode": ctx.core.mode.encode(),
    }
    if ctx.core.mode != "sentinel":  # a sentinel has no replication role to report
        reply[b"role"] = b"master" if ctx.core.role == "master" else b"replica"
    reply[b"modules"] = []
    return reply


@command("reset", 1, "noscript loading stale fast no_auth allow_busy", group="connection",
         summary="Resets the connection.")
def reset(ctx: Session, argv: list[bytes]) -> Any:
    ctx.discard_transaction()
    ctx.node.clients.remove_monitor(ctx)
    ctx.node.pubsub.unsubscribe_all(ctx)  # silently: RESET's reply is the only one
    ctx.select(0)
    ctx.proto = 2
    ctx.name = b""
    ctx.reply_mode = "on"
    ctx.no_evict = False
    ctx.no_touch = False
    # clientSetDefaultAuth
    acl = ctx.node.acl
    ctx.user = acl.default
    ctx.authenticated = acl.default.nopass and acl.default.enabled
    return Raw(b"+RESET\r\n")
