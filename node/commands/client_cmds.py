"""CLIENT: the connection registry as clients see it (ID, names, LIST/INFO lines, KILL,
UNBLOCK, reply modes, library metadata).

Replies and error texts follow Redis 7.2's networking.c (clientCommand and friends). The
per-connection figures Rill does not track (query buffer, reply buffer peaks) are reported
as 0 so the line keeps Redis's field set and order, which client libraries parse.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from node.commands.args import SYNTAX_ERROR, parse_int, to_int
from node.commands.context import ClientSession, Session
from node.commands.helptext import help_reply, unknown_subcommand
from node.commands.reply import OK, CommandError, ReplyError, Verbatim
from node.commands.table import container, subcommand

container("client", -2, group="connection", summary="A container for client connection commands.")

_HELP: Final = (
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "    * ID <client-id> [<client-id> ...]",
    "      Return clients with the given ids.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
)

# getClientTypeByName: the names CLIENT LIST/KILL TYPE accept.
_TYPE_NAMES: Final = {"normal": "normal", "slave": "slave", "replica": "slave", "pubsub": "pubsub", "master": "master"}

UNBLOCKED_ERROR: Final = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

# -- the CLIENT LIST line -------------------------------------------------------------------


def client_type(session: ClientSession) -> str:
    """getClientType: a MONITOR client counts as normal even though Redis flags it a replica."""
    flags = session.flags
    if "master" in flags:
        return "master"
    if "replica" in flags and "monitor" not in flags:
        return "slave"
    if "pubsub" in flags:
        return "pubsub"
    return "normal"


def _flag_string(session: ClientSession) -> str:
    """The single-letter flags of CLIENT LIST, in Redis's order (catClientInfoString)."""
    flags = session.flags
    letters = []
    if "monitor" in flags:
        letters.append("O")
    elif "replica" in flags:
        letters.append("S")
    if "master" in flags:
        letters.append("M")
    if "pubsub" in flags:
        letters.append("P")
    if session.multi is not None:
        letters.append("x")
    if "blocked" in flags:
        letters.append("b")
    if isinstance(session, Session) and session.watch_dirty:
        letters.append("d")
    if session.closing:
        letters.append("c")
    if "readonly" in flags:
        letters.append("r")
    if session.no_evict:
        letters.append("e")
    if session.no_touch:
        letters.append("T")
    return "".join(letters) or "N"


def client_line(session: ClientSession, now_ms: int) -> str:
    """One line of CLIENT LIST / CLIENT INFO, without the trailing newline."""
    age = (now_ms - session.created_ms) // 1000
    idle = (now_ms - session.last_interaction_ms) // 1000
    multi = len(session.multi) if session.multi is not None else -1
    omem = session.output_size
    events = "rw" if omem else "r"
    subs = session.subscriptions
    sub, psub, ssub = (len(subs.channels), len(subs.patterns), len(subs.shard_channels)) if subs else (0, 0, 0)
    return (
        f"id={session.id} addr={session.addr} laddr={session.laddr} fd={session.fd} "
        f"name={_text(session.name)} age={age} idle={idle} flags={_flag_string(session)} "
        f"db={session.db_index} sub={sub} psub={psub} ssub={ssub} multi={multi} qbuf=0 qbuf-free=0 argv-mem=0 "
        f"multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem={omem} tot-mem={omem} events={events} "
        f"cmd={session.last_command} user={_text(session.user.name)} redir=-1 resp={session.proto} "
        f"lib-name={_text(session.lib_name)} lib-ver={_text(session.lib_ver)}"
    )


def _text(raw: bytes) -> str:
    # Names are validated to printable ASCII, so this never loses information.
    return raw.decode("ascii", "replace")


def _lines_reply(sessions: Iterable[ClientSession], now_ms: int) -> Verbatim:
    body = "".join(client_line(s, now_ms) + "\n" for s in sessions)
    return Verbatim("txt", body.encode())


def _sorted_sessions(ctx: ClientSession) -> list[ClientSession]:
    return sorted(ctx.core.clients.sessions(), key=lambda s: s.id)


def _valid_attribute(value: bytes) -> bool:
    """validateClientAttr: printable ASCII without spaces, so CLIENT LIST stays splittable."""
    return all(0x21 <= c <= 0x7E for c in value)


# -- subcommands ----------------------------------------------------------------------------


@subcommand("client", "id", 2, "noscript loading stale", summary="Returns the unique client ID of the connection.")
def client_id(ctx: ClientSession, argv: list[bytes]) -> Any:
    return ctx.id


@subcommand("client", "setname", 3, "noscript loading stale", summary="Sets the connection name.")
def client_setname(ctx: ClientSession, argv: list[bytes]) -> Any:
    name = argv[2]
    if not _valid_attribute(name):
        raise CommandError("ERR Client names cannot contain spaces, newlines or special characters.")
    ctx.name = name
    return OK


@subcommand("client", "getname", 2, "noscript loading stale", summary="Returns the name of the connection.")
def client_getname(ctx: ClientSession, argv: list[bytes]) -> Any:
    return ctx.name or None


@subcommand("client", "setinfo", 4, "noscript loading stale", summary="Sets information specific to the client or connection.")
def client_setinfo(ctx: ClientSession, argv: list[bytes]) -> Any:
    attr = argv[2].lower()
    if attr not in (b"lib-name", b"lib-ver"):
        raise CommandError("ERR Unrecognized option '%s'" % argv[2].decode("utf-8", "replace"))
    if not _valid_attribute(argv[3]):
        raise CommandError(
            "ERR %s cannot contain spaces, newlines or special characters." % argv[2].decode("utf-8", "replace")
        )
    if attr == b"lib-name":
        ctx.lib_name = argv[3]
    else:
        ctx.lib_ver = argv[3]
    return OK


@subcommand("client", "info", 2, "noscript loading stale", summary="Returns information about the connection.")
def client_info(ctx: ClientSession, argv: list[bytes]) -> Any:
    return Verbatim("txt", (client_line(ctx, ctx.now_ms()) + "\n").encode())


@subcommand("client", "list", -2, "admin noscript loading stale", summary="Lists open connections.")
def client_list(ctx: ClientSession, argv: list[bytes]) -> Any:
    now = ctx.now_ms()
    sessions = _sorted_sessions(ctx)
    if len(argv) == 2:
        return _lines_reply(sessions, now)
    option = argv[2].lower()
    if option == b"type" and len(argv) == 4:
        wanted = _parse_type(argv[3])
        return _lines_reply((s for s in sessions if client_type(s) == wanted), now)
    if option == b"id" and len(argv) > 3:
        by_id = {s.id: s for s in sessions}
        picked: list[ClientSession] = []
        for raw in argv[3:]:
            cid = to_int(raw)
            if cid is None:
                raise CommandError("ERR Invalid client ID")
            if cid in by_id:
                picked.append(by_id[cid])
        return _lines_reply(picked, now)
    raise CommandError(SYNTAX_ERROR)


def _parse_type(raw: bytes) -> str:
    name = _TYPE_NAMES.get(raw.decode("utf-8", "replace").lower())
    if name is None:
        raise CommandError("ERR Unknown client type '%s'" % raw.decode("utf-8", "replace"))
    return name


@subcommand("client", "kill", -3, "admin noscript loading stale", summary="Terminates open connections.")
def client_kill(ctx: ClientSession, argv: list[bytes]) -> Any:
    old_form = len(argv) == 3
    addr = laddr = wanted_type = None
    user: bytes | None = None
    wanted_id = 0
    # The old form (CLIENT KILL addr) may kill the caller itself; filters skip it by default.
    skipme = not old_form
    if old_form:
        addr = argv[2].decode("utf-8", "replace")
    else:
        i = 2
        while i < len(argv):
            if i + 1 >= len(argv):
                raise CommandError(SYNTAX_ERROR)
            option, value = argv[i].lower(), argv[i + 1]
            text = value.decode("utf-8", "replace")
            if option == b"id":
                cid = to_int(value)
                if cid is None or cid < 1:
                    raise CommandError("ERR client-id should be greater than 0")
                wanted_id = cid
            elif option == b"type":
                wanted_type = _parse_type(value)
            elif option == b"addr":
                addr = text
            elif option == b"laddr":
                laddr = text
            elif option == b"user":
                if value not in ctx.core.acl.users:
                    raise CommandError("ERR No such user '%s'" % text)
                user = value
            elif option == b"skipme":
                low = value.lower()
                if low not in (b"yes", b"no"):
                    raise CommandError(SYNTAX_ERROR)
                skipme = low == b"yes"
            else:
                raise CommandError(SYNTAX_ERROR)
            i += 2
    killed = 0
    for session in _sorted_sessions(ctx):
        if addr is not None and session.addr != addr:
            continue
        if laddr is not None and session.laddr != laddr:
            continue
        if wanted_type is not None and client_type(session) != wanted_type:
            continue
        if wanted_id and session.id != wanted_id:
            continue
        if user is not None and session.user.name != user:
            continue
        if session is ctx:
            if skipme:
                continue
            ctx.closing = True  # after this reply is written, as CLIENT_CLOSE_AFTER_REPLY
        else:
            ctx.core.clients.close_session(session)
        killed += 1
    # The replication links are gRPC streams, not RESP clients, but Redis lists them as
    # clients of type master (on a replica) and slave (on a primary): a filter that only
    # names a type (or nothing) kills them too. They have no address or client id; the
    # link to a primary has no user (Redis's master client has none), a replica's stream
    # has the user its replica authenticated as. A sentinel (its clients are no Sessions) has none.
    if addr is None and laddr is None and not wanted_id and isinstance(ctx, Session):
        links = ctx.node.replication
        if wanted_type in (None, "master") and user is None:
            killed += links.kill_links("master")
        if wanted_type in (None, "slave"):
            killed += links.kill_links("slave", user)
    if old_form:
        if not killed:
            raise CommandError("ERR No such client")
        return OK
    return killed


@subcommand("client", "unblock", -3, "admin noscript loading stale", summary="Unblocks a client blocked by a blocking command from a different connection.")
def client_unblock(ctx: ClientSession, argv: list[bytes]) -> Any:
    if len(argv) > 4:
        raise CommandError(unknown_subcommand(argv))
    with_error = False
    if len(argv) == 4:
        reason = argv[3].lower()
        if reason not in (b"timeout", b"error"):
            raise CommandError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
        with_error = reason == b"error"
    target_id = parse_int(argv[2])
    for session in ctx.core.clients.sessions():
        if session.id != target_id:
            continue
        block = session.blocked_on
        if block is None or block.postponed is not None:
            # A client postponed by a pause has nothing to time out (redis-server 7.0
            # crashes on it).
            return 0
        reply = ReplyError(UNBLOCKED_ERROR) if with_error else block.timeout_reply
        return 1 if ctx.core.clients.unblock_session(session, reply) else 0
    return 0


def _on_off(raw: bytes) -> bool:
    low = raw.lower()
    if low == b"on":
        return True
    if low == b"off":
        return False
    raise CommandError(SYNTAX_ERROR)


@subcommand("client", "no-evict", 3, "admin noscript loading stale", summary="Sets the client eviction mode of the connection.")
def client_no_evict(ctx: ClientSession, argv: list[bytes]) -> Any:
    ctx.no_evict = _on_off(argv[2])
    return OK


@subcommand("client", "no-touch", 3, "noscript loading stale", summary="Controls whether commands sent by the client affect the LRU/LFU of accessed keys.")
def client_no_touch(ctx: ClientSession, argv: list[bytes]) -> Any:
    ctx.no_touch = _on_off(argv[2])
    return OK


@subcommand("client", "reply", 3, "noscript loading stale", summary="Instructs the server whether to reply to commands.")
def client_reply(ctx: ClientSession, argv: list[bytes]) -> Any:
    mode = argv[2].lower()
    if mode == b"on":
        ctx.reply_mode = "on"
        return OK
    if mode == b"off":
        ctx.reply_mode = "off"
    elif mode == b"skip":
        # Neither this command nor the next one gets a reply; the connection turns
        # "skip_next" into "skip" once this command's (suppressed) reply is done.
        if ctx.reply_mode in ("on", "skip"):
            ctx.reply_mode = "skip_next"
    else:
        raise CommandError(SYNTAX_ERROR)
    return OK


@subcommand("client", "pause", -3, "admin noscript loading stale", summary="Suspends commands processing.")
def client_pause(ctx: ClientSession, argv: list[bytes]) -> Any:
    # Commands that may write (WRITE) or every command (ALL) wait until the timeout passes
    # or CLIENT UNPAUSE (node/server/pause.py).
    if len(argv) > 4:
        raise CommandError(unknown_subcommand(argv))
    write_only = False
    if len(argv) == 4:
        mode = argv[3].lower()
        if mode not in (b"write", b"all"):
            raise CommandError("ERR CLIENT PAUSE mode must be WRITE or ALL")
        write_only = mode == b"write"
    timeout = to_int(argv[2])
    if timeout is None:
        raise CommandError("ERR timeout is not an integer or out of range")
    if timeout < 0:
        raise CommandError("ERR timeout is negative")
    ctx.core.clients.pause_clients(timeout, write_only)
    return OK


@subcommand("client", "unpause", 2, "admin noscript loading stale", summary="Resumes processing of clients that were paused.")
def client_unpause(ctx: ClientSession, argv: list[bytes]) -> Any:
    ctx.core.clients.unpause_clients()
    return OK


@subcommand("client", "trackinginfo", 2, "noscript loading stale", summary="Returns information about server-assisted client-side caching for the connection.")
def client_trackinginfo(ctx: ClientSession, argv: list[bytes]) -> Any:
    return {b"flags": [b"off"], b"redirect": -1, b"prefixes": []}


@subcommand("client", "getredir", 2, "noscript loading stale", summary="Returns the client ID to which the connection's tracking notifications are redirected.")
def client_getredir(ctx: ClientSession, argv: list[bytes]) -> Any:
    return -1


@subcommand("client", "tracking", -3, "noscript loading stale", summary="Controls server-assisted client-side caching for the connection.")
def client_tracking(ctx: ClientSession, argv: list[bytes]) -> Any:
    raise CommandError("ERR Rill does not support client-side caching (CLIENT TRACKING)")


@subcommand("client", "caching", 3, "noscript loading stale", summary="Instructs the server whether to track the keys in the next request.")
def client_caching(ctx: ClientSession, argv: list[bytes]) -> Any:
    raise CommandError(
        "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
    )


@subcommand("client", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def client_help(ctx: ClientSession, argv: list[bytes]) -> Any:
    return help_reply(argv[0], _HELP)
