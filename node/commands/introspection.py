"""COMMAND: the command table as clients see it (COMMAND, COUNT, INFO, DOCS, LIST, GETKEYS,
GETKEYSANDFLAGS, HELP), in Redis 7's reply shapes.

Names, arities and flags come from `node.commands.table` (flags listed in Redis's order); ACL
categories, key specs and tips from `node.commands.keyspecs` (Redis 7.2's command JSON), which
also finds the keys GETKEYS returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from node.commands.context import ClientSession
from node.commands.glob import glob_match
from node.commands.helptext import help_reply
from node.commands.keyspecs import CATEGORY_BITS, category_names, describe, find_keys, key_flag_names
from node.commands.reply import CommandError, RSet
from node.commands.table import CommandSpec, CommandTable, command, subcommand

# Flags as COMMAND lists them, in Redis's order (addCommandFlags); may_replicate is hidden.
_FLAG_ORDER: Final = (
    "write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript", "blocking", "loading",
    "stale", "skip_monitor", "skip_slowlog", "asking", "fast", "no_auth", "no_mandatory_keys",
    "no_async_loading", "no_multi", "movablekeys", "allow_busy",
)

# The Redis version that introduced each command (COMMAND DOCS "since").
_SINCE: Final = {
    "ping": "1.0.0", "echo": "1.0.0", "quit": "1.0.0", "select": "1.0.0", "auth": "1.0.0",
    "hello": "6.0.0", "reset": "6.2.0",
    "get": "1.0.0", "set": "1.0.0", "del": "1.0.0", "exists": "1.0.0", "type": "1.0.0",
    "keys": "1.0.0", "dbsize": "1.0.0", "flushall": "1.0.0", "flushdb": "1.0.0", "scan": "2.8.0",
    "randomkey": "1.0.0", "rename": "1.0.0", "swapdb": "4.0.0", "unlink": "4.0.0", "touch": "3.2.1",
    "multi": "1.2.0", "exec": "1.2.0", "discard": "2.0.0", "watch": "2.2.0", "unwatch": "2.2.0",
    "xadd": "5.0.0", "xrange": "5.0.0", "xrevrange": "5.0.0", "xlen": "5.0.0", "xread": "5.0.0",
    "xreadgroup": "5.0.0", "xack": "5.0.0", "xclaim": "5.0.0", "xautoclaim": "6.2.0",
    "xpending": "5.0.0", "xdel": "5.0.0", "xtrim": "5.0.0", "xsetid": "5.0.0", "xgroup": "5.0.0",
    "xgroup|create": "5.0.0", "xgroup|setid": "5.0.0", "xgroup|destroy": "5.0.0",
    "xgroup|createconsumer": "6.2.0", "xgroup|delconsumer": "5.0.0", "xgroup|help": "5.0.0",
    "xinfo": "5.0.0", "xinfo|stream": "5.0.0", "xinfo|groups": "5.0.0", "xinfo|consumers": "5.0.0",
    "xinfo|help": "5.0.0",
    "xdelex": "8.2.0", "xackdel": "8.2.0", "xnack": "8.8.0", "xcfgset": "8.6.0", "xidmprecord": "8.6.0",
    "expire": "1.0.0", "pexpire": "2.6.0", "expireat": "1.2.0", "pexpireat": "2.6.0", "ttl": "1.0.0",
    "pttl": "2.6.0", "expiretime": "7.0.0", "pexpiretime": "7.0.0", "persist": "2.2.0",
    "getex": "6.2.0", "setex": "2.0.0", "psetex": "2.6.0", "move": "1.0.0", "copy": "6.2.0",
    "dump": "2.6.0", "restore": "2.6.0", "replconf": "3.0.0", "psync": "2.8.0", "sync": "1.0.0",
    "info": "1.0.0", "config": "2.0.0", "config|get": "2.0.0", "config|set": "2.0.0",
    "config|resetstat": "2.0.0", "config|rewrite": "2.8.0", "config|help": "5.0.0",
    "client": "2.4.0", "client|id": "5.0.0", "client|setname": "2.6.9", "client|getname": "2.6.9",
    "client|list": "2.4.0", "client|info": "6.2.0", "client|kill": "2.4.0", "client|setinfo": "7.2.0",
    "client|no-evict": "7.0.0", "client|no-touch": "7.2.0", "client|reply": "3.2.0",
    "client|unblock": "5.0.0", "client|pause": "3.0.0", "client|unpause": "6.2.0",
    "client|help": "5.0.0", "client|tracking": "6.0.0", "client|trackinginfo": "6.2.0",
    "client|getredir": "6.0.0", "client|caching": "6.0.0",
    "command": "2.8.13", "command|count": "2.8.13", "command|info": "2.8.13", "command|docs": "7.0.0",
    "command|list": "7.0.0", "command|getkeys": "2.8.13", "command|getkeysandflags": "7.0.0",
    "command|help": "5.0.0",
    "time": "2.6.0", "lastsave": "1.0.0", "monitor": "1.0.0", "debug": "1.0.0", "shutdown": "1.0.0",
    "role": "2.8.12", "function": "7.0.0", "function|list": "7.0.0", "function|flush": "7.0.0",
    "function|help": "7.0.0", "function|kill": "7.0.0", "script": "2.6.0", "script|kill": "2.6.0",
    "script|help": "5.0.0", "memory": "4.0.0", "memory|usage": "4.0.0", "memory|stats": "4.0.0",
    "memory|doctor": "4.0.0", "memory|help": "4.0.0", "memory|purge": "4.0.0",
    "memory|malloc-stats": "4.0.0", "slowlog": "2.2.12", "slowlog|get": "2.2.12",
    "slowlog|len": "2.2.12", "slowlog|reset": "2.2.12", "slowlog|help": "6.2.0", "latency": "2.8.13",
    "latency|latest": "2.8.13", "latency|history": "2.8.13", "latency|reset": "2.8.13",
    "latency|graph": "2.8.13", "latency|doctor": "2.8.13", "latency|histogram": "7.0.0",
    "latency|help": "2.8.13", "wait": "3.0.0", "save": "1.0.0", "bgsave": "1.0.0",
    "bgrewriteaof": "1.0.0", "replicaof": "5.0.0", "slaveof": "1.0.0", "failover": "6.2.0",
    "subscribe": "2.0.0", "unsubscribe": "2.0.0", "psubscribe": "2.0.0", "punsubscribe": "2.0.0",
    "publish": "2.0.0", "ssubscribe": "7.0.0", "sunsubscribe": "7.0.0", "spublish": "7.0.0",
    "pubsub": "2.8.0", "pubsub|channels": "2.8.0", "pubsub|numsub": "2.8.0", "pubsub|numpat": "2.8.0",
    "pubsub|shardchannels": "7.0.0", "pubsub|shardnumsub": "7.0.0", "pubsub|help": "6.2.0",
    "acl": "6.0.0", "acl|cat": "6.0.0", "acl|deluser": "6.0.0", "acl|dryrun": "7.0.0", "acl|genpass": "6.0.0",
    "acl|getuser": "6.0.0", "acl|help": "6.0.0", "acl|list": "6.0.0", "acl|load": "6.0.0", "acl|log": "6.0.0",
    "acl|save": "6.0.0", "acl|setuser": "6.0.0", "acl|users": "6.0.0", "acl|whoami": "6.0.0",
}

# COMMAND DOCS "history" of the stream commands Redis 8 extended (Redis's command JSON).
_HISTORY: Final = {
    "xadd": (
        ("6.2.0", "Added the `NOMKSTREAM` option, `MINID` trimming strategy and the `LIMIT` option."),
        ("7.0.0", "Added support for the `<ms>-*` explicit ID form."),
        ("8.2.0", "Added the `KEEPREF`, `DELREF` and `ACKED` options."),
    ),
    "xtrim": (
        ("6.2.0", "Added the `MINID` trimming strategy and the `LIMIT` option."),
        ("8.2.0", "Added the `KEEPREF`, `DELREF` and `ACKED` options."),
    ),
    "xread": (("8.10.0", "Added the `MAXCOUNT` and `MAXSIZE` options."),),
    "xreadgroup": (
        ("8.4.0", "Added the `CLAIM` option."),
        ("8.10.0", "Added the `MAXCOUNT` and `MAXSIZE` options."),
    ),
}

_HELP: Final = (
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
)


# -- describing one command -----------------------------------------------------------------


def _parent_name(spec: CommandSpec) -> str:
    return spec.name.split("|", 1)[0]


def command_flags(spec: CommandSpec) -> list[str]:
    flags = set(spec.flags)
    # populateCommandMovableKeys: a key spec that is not index + range makes keys movable.
    if any(k.begin != "index" or k.find != "range" for k in describe(spec).specs):
        flags.add("movablekeys")
    return [f for f in _FLAG_ORDER if f in flags]


def acl_categories(spec: CommandSpec) -> list[str]:
    return ["@" + name for name in category_names(spec)]


def key_specs(spec: CommandSpec) -> list[dict[bytes, Any]]:
    """addReplyCommandKeySpecs."""
    out: list[dict[bytes, Any]] = []
    for ks in describe(spec).specs:
        entry: dict[bytes, Any] = {}
        if ks.notes:
            entry[b"notes"] = ks.notes.encode()
        entry[b"flags"] = RSet(key_flag_names(ks.flags))
        if ks.begin == "index":
            entry[b"begin_search"] = {b"type": b"index", b"spec": {b"index": ks.index}}
        elif ks.begin == "keyword":
            entry[b"begin_search"] = {b"type": b"keyword", b"spec": {
                b"keyword": ks.keyword_shown.encode(), b"startfrom": ks.index}}
        else:
            entry[b"begin_search"] = {b"type": b"unknown", b"spec": {}}
        if ks.find == "range":
            entry[b"find_keys"] = {b"type": b"range", b"spec": {b"lastkey": ks.a, b"keystep": ks.b, b"limit": ks.c}}
        elif ks.find == "keynum":
            entry[b"find_keys"] = {b"type": b"keynum", b"spec": {b"keynumidx": ks.a, b"firstkey": ks.b, b"keystep": ks.c}}
        else:
            entry[b"find_keys"] = {b"type": b"unknown", b"spec": {}}
        out.append(entry)
    return out


def command_info(spec: CommandSpec) -> list[Any]:
    return [
        spec.name.encode(),
        spec.arity,
        RSet(command_flags(spec)),
        spec.first_key,
        spec.last_key,
        spec.key_step,
        RSet(acl_categories(spec)),
        RSet(describe(spec).tips),
        RSet(key_specs(spec)),
        RSet(command_info(sub) for sub in spec.subcommands.values()),
    ]


def command_docs(spec: CommandSpec) -> dict[bytes, Any]:
    docs: dict[bytes, Any] = {}
    if spec.summary:
        docs[b"summary"] = spec.summary.encode()
    since = _SINCE.get(spec.name)
    if since is not None:
        docs[b"since"] = since.encode()
    docs[b"group"] = spec.group.encode()
    history = _HISTORY.get(spec.name)
    if history is not None:
        docs[b"history"] = [[version.encode(), text.encode()] for version, text in history]
    if spec.subcommands:
        docs[b"subcommands"] = {sub.name.encode(): command_docs(sub) for sub in spec.subcommands.values()}
    return docs


def _by_full_name(table: CommandTable, raw: bytes) -> CommandSpec | None:
    """A command or "parent|sub" by name, case-insensitively (lookupCommandBySds)."""
    name = raw.decode("utf-8", "replace").lower()
    parent, _, sub = name.partition("|")
    spec = table.get(parent.encode())
    if spec is None or not sub:
        return spec
    return spec.subcommands.get(sub)


def _all_specs(table: CommandTable) -> Iterable[CommandSpec]:
    for spec in table.values():
        yield spec
        yield from spec.subcommands.values()


# -- key extraction (GETKEYS) -----------------------------------------------------------------


def _spec_for_argv(table: CommandTable, argv: list[bytes]) -> CommandSpec | None:
    """lookupCommand: a container's subcommand when one is named, else the command."""
    spec = table.get(argv[0].lower())
    if spec is None or not spec.subcommands or len(argv) == 1:
        return spec
    return spec.subcommands.get(argv[1].decode("utf-8", "replace").lower())


def key_positions(spec: CommandSpec, argv: list[bytes]) -> list[int] | None:
    """Indexes of the key arguments of argv, or None when it names none."""
    return [pos for pos, _flags in find_keys(spec, argv)] or None


def _getkeys(table: CommandTable, argv: list[bytes]) -> tuple[CommandSpec, list[bytes], list[tuple[int, int]]]:
    """getKeysSubcommandImpl's checks; the command, its argv and its keys with their flags."""
    target = argv[2:]
    spec = _spec_for_argv(table, target)
    if spec is None:
        raise CommandError("ERR Invalid command specified")
    if not describe(spec).has_keys:
        raise CommandError("ERR The command has no key arguments")
    if not spec.arity_ok(len(target)):
        raise CommandError("ERR Invalid number of arguments specified for command")
    keys = find_keys(spec, target)
    if not keys and "no_mandatory_keys" not in spec.flags:
        raise CommandError("ERR Invalid arguments specified for command")
    return spec, target, keys


# -- handlers -------------------------------------------------------------------------------


@command("command", -1, "loading stale", group="server", summary="Returns detailed information about all commands.")
def command_(ctx: ClientSession, argv: list[bytes]) -> Any:
    if len(argv) == 1:
        return [command_info(spec) for spec in ctx.core.commands.values()]
    raise CommandError(
        "ERR unknown subcommand '%s'. Try COMMAND HELP." % argv[1].decode("utf-8", "replace")[:128]
    )


@subcommand("command", "count", 2, "loading stale", summary="Returns a count of commands.")
def command_count(ctx: ClientSession, argv: list[bytes]) -> Any:
    return len(ctx.core.commands)


@subcommand("command", "info", -2, "loading stale", summary="Returns information about one, multiple or all commands.")
def command_info_(ctx: ClientSession, argv: list[bytes]) -> Any:
    table = ctx.core.commands
    if len(argv) == 2:
        return [command_info(spec) for spec in table.values()]
    out: list[Any] = []
    for raw in argv[2:]:
        spec = _by_full_name(table, raw)
        out.append(None if spec is None else command_info(spec))
    return out


@subcommand("command", "docs", -2, "loading stale", summary="Returns documentary information about one, multiple or all commands.")
def command_docs_(ctx: ClientSession, argv: list[bytes]) -> Any:
    table = ctx.core.commands
    if len(argv) == 2:
        specs: Iterable[CommandSpec] = table.values()
    else:
        specs = [s for s in (_by_full_name(table, raw) for raw in argv[2:]) if s is not None]
    return {spec.name.encode(): command_docs(spec) for spec in specs}


@subcommand("command", "list", -2, "loading stale", summary="Returns a list of command names.")
def command_list(ctx: ClientSession, argv: list[bytes]) -> Any:
    table = ctx.core.commands
    names = [spec.name.encode() for spec in _all_specs(table)]
    if len(argv) == 2:
        return names
    if len(argv) != 5 or argv[2].lower() != b"filterby":
        raise CommandError("ERR syntax error")
    kind, value = argv[3].lower(), argv[4]
    if kind == b"module":
        return []  # Rill loads no modules
    if kind == b"aclcat":
        bit = CATEGORY_BITS.get(value.decode("utf-8", "replace").lower(), 0)
        return [spec.name.encode() for spec in _all_specs(table) if describe(spec).categories & bit]
    if kind == b"pattern":
        return [name for name in names if glob_match(value, name, nocase=True)]
    raise CommandError("ERR syntax error")


@subcommand("command", "getkeys", -3, "loading stale", summary="Extracts the key names from an arbitrary command.")
def command_getkeys(ctx: ClientSession, argv: list[bytes]) -> Any:
    _spec, target, keys = _getkeys(ctx.core.commands, argv)
    return [target[pos] for pos, _flags in keys]


@subcommand("command", "getkeysandflags", -3, "loading stale", summary="Extracts the key names and access flags for an arbitrary command.")
def command_getkeysandflags(ctx: ClientSession, argv: list[bytes]) -> Any:
    _spec, target, keys = _getkeys(ctx.core.commands, argv)
    return [[target[pos], RSet(key_flag_names(flags))] for pos, flags in keys]


@subcommand("command", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def command_help(ctx: ClientSession, argv: list[bytes]) -> Any:
    return help_reply(argv[0], _HELP)
