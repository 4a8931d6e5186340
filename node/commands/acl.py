"""The ACL command (acl.c aclCommand) and the texts of ACL refusals (getAclErrorMessage), with
Redis 7.2's replies and errors. A sentinel runs it too (Redis marks ACL CMD_SENTINEL).

Users, rules and the log live in node/commands/acl_users.py and acl_rules.py.
"""

from __future__ import annotations

import secrets
from typing import Any, Final

from node.commands.acl_rules import (
    ACL_OK,
    DENIED_CHANNEL,
    DENIED_CMD,
    DENIED_KEY,
    Selector,
    User,
    category_list,
    has_spaces,
    user_flags,
    users_in_order,
)
from node.commands.args import to_int
from node.commands.client_cmds import client_line
from node.commands.context import ClientSession
from node.commands.helptext import help_reply, unknown_subcommand
from node.commands.keyspecs import CATEGORY_BITS, describe
from node.commands.reply import OK, CommandError, RSet
from node.commands.table import CommandSpec, CommandTable, container, subcommand

container("acl", -2, group="server", summary="A container for Access List Control commands.")

NO_ACL_FILE: Final = (
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the "
    "ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) "
    "in order to store users in the Redis configuration."
)
_GENPASS_MAX_BITS: Final = 4096
_NOT_AN_INTEGER: Final = "ERR value is not an integer or out of range"
# Where a refusal happened (ACL_LOG_CTX_*).
TOPLEVEL: Final = 0
MULTI: Final = 1

_HELP: Final = (
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def denial_message(result: int, user: User, spec: CommandSpec, value: bytes, verbose: bool) -> str:
    """getAclErrorMessage (without NOPERM)."""
    if result == DENIED_CMD:
        return "User %s has no permissions to run the '%s' command" % (_text(user.name), spec.name)
    what = "key" if result == DENIED_KEY else "channel"
    if verbose:
        return "User %s has no permissions to access the '%s' %s" % (_text(user.name), _text(value), what)
    return "No permissions to access a %s" % what


def log_denial(ctx: ClientSession, result: int, context: int, obj: bytes, username: bytes | None = None) -> None:
    """addACLLogEntry for the calling client."""
    now = ctx.now_ms()
    ctx.core.acl.record(result, context, obj, ctx.user.name if username is None else username, now,
                        client_line(ctx, now))


def check_command(ctx: ClientSession, spec: CommandSpec, argv: list[bytes]) -> str | None:
    """processCommand's ACL check for a restricted user: None when allowed, else the NOPERM
    error (the refusal is logged)."""
    result, pos = ctx.user.check(spec, argv)
    if result == ACL_OK:
        return None
    obj = spec.name.encode() if result == DENIED_CMD else argv[pos]
    ctx.last_command = spec.name  # the client info logged names it (Redis's c->lastcmd)
    log_denial(ctx, result, MULTI if ctx.multi is not None else TOPLEVEL, obj)
    return "NOPERM " + denial_message(result, ctx.user, spec, argv[pos], False)


_EXEC_REASONS: Final = {
    DENIED_CMD: "no permission to execute the command or subcommand",
    DENIED_KEY: "no permission to touch the specified keys",
    DENIED_CHANNEL: "no permission to access one of the channels used as arguments",
}


def check_queued_command(ctx: ClientSession, spec: CommandSpec, argv: list[bytes]) -> str | None:
    """execCommand's check of each queued command, since the rules may have changed after
    it was queued."""
    result, pos = ctx.user.check(spec, argv)
    if result == ACL_OK:
        return None
    log_denial(ctx, result, MULTI, spec.name.encode() if result == DENIED_CMD else argv[pos])
    return (
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. "
        "This command is no longer allowed for the following reason: %s" % _EXEC_REASONS.get(result, "no permission")
    )


# -- subcommands ------------------------------------------------------------------------------


@subcommand("acl", "setuser", -3, "admin noscript loading stale", summary="Creates and modifies an ACL user and its rules.")
def acl_setuser(ctx: ClientSession, argv: list[bytes]) -> Any:
    name = argv[2]
    if has_spaces(name):
        raise CommandError("ERR Usernames can't contain spaces or null characters")
    error = ctx.core.acl.set_user(name, argv[3:])
    if error is not None:
        # addReplyErrorSdsSafe: a rule's newlines must not break the reply.
        raise CommandError("ERR " + error.replace("\r", " ").replace("\n", " "))
    return OK


@subcommand("acl", "deluser", -3, "admin noscript loading stale", summary="Deletes ACL users, and terminates their connections.")
def acl_deluser(ctx: ClientSession, argv: list[bytes]) -> Any:
    if b"default" in argv[2:]:
        raise CommandError("ERR The 'default' user cannot be removed")
    return ctx.core.acl.delete(argv[2:], ctx)


def _selector_fields(selector: Selector) -> dict[bytes, Any]:
    """aclAddReplySelectorDescription."""
    return {
        b"commands": selector.describe_commands(),
        b"keys": selector.describe_keys(),
        b"channels": selector.describe_channels(),
    }


@subcommand("acl", "getuser", 3, "admin noscript loading stale", summary="Lists the ACL rules of a user.")
def acl_getuser(ctx: ClientSession, argv: list[bytes]) -> Any:
    user = ctx.core.acl.users.get(argv[2])
    if user is None:
        return None
    reply: dict[bytes, Any] = {b"flags": RSet(user_flags(user)), b"passwords": list(user.passwords)}
    reply.update(_selector_fields(user.root))
    reply[b"selectors"] = [_selector_fields(s) for s in user.selectors[1:]]
    return reply


@subcommand("acl", "list", 2, "admin noscript loading stale", summary="Dumps the effective rules in ACL file format.")
def acl_list(ctx: ClientSession, argv: list[bytes]) -> Any:
    return [b"user " + u.name + b" " + u.describe() for u in users_in_order(ctx.core.acl.users.values())]


@subcommand("acl", "users", 2, "admin noscript loading stale", summary="Lists all ACL users.")
def acl_users(ctx: ClientSession, argv: list[bytes]) -> Any:
    return [u.name for u in users_in_order(ctx.core.acl.users.values())]


@subcommand("acl", "whoami", 2, "noscript loading stale", summary="Returns the authenticated username of the current connection.")
def acl_whoami(ctx: ClientSession, argv: list[bytes]) -> Any:
    return ctx.user.name


@subcommand("acl", "load", 2, "admin noscript loading stale", summary="Reloads the rules from the configured ACL file.")
def acl_load(ctx: ClientSession, argv: list[bytes]) -> Any:
    path = ctx.core.config.get("aclfile")
    if not path:
        raise CommandError(NO_ACL_FILE)
    errors = ctx.core.acl.load_file(path)
    if errors is not None:
        raise CommandError("ERR " + errors)
    return OK


@subcommand("acl", "save", 2, "admin noscript loading stale", summary="Saves the effective ACL rules in the configured ACL file.")
def acl_save(ctx: ClientSession, argv: list[bytes]) -> Any:
    path = ctx.core.config.get("aclfile")
    if not path:
        raise CommandError(NO_ACL_FILE)
    if not ctx.core.acl.save_file(path):
        raise CommandError("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
    return OK


@subcommand("acl", "cat", -2, "noscript loading stale", summary="Lists the ACL categories, or the commands inside a category.")
def acl_cat(ctx: ClientSession, argv: list[bytes]) -> Any:
    if len(argv) == 2:
        return category_list()
    if len(argv) != 3:
        raise CommandError(unknown_subcommand(argv))
    bit = CATEGORY_BITS.get(argv[2].decode("utf-8", "replace").lower(), 0) if argv[2].isascii() else 0
    if not bit:
        raise CommandError("ERR Unknown category '%s'" % _text(argv[2])[:128])
    return [spec.name.encode() for spec in ctx.core.acl.commands.all if describe(spec).categories & bit]


@subcommand("acl", "genpass", -2, "noscript loading stale", summary="Generates a pseudorandom, secure password that can be used to identify ACL users")
def acl_genpass(ctx: ClientSession, argv: list[bytes]) -> Any:
    if len(argv) > 3:
        raise CommandError(unknown_subcommand(argv))
    bits = 256
    if len(argv) == 3:
        parsed = to_int(argv[2])
        if parsed is None:
            raise CommandError(_NOT_AN_INTEGER)
        bits = parsed
    if bits <= 0 or bits > _GENPASS_MAX_BITS:
        raise CommandError(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to %d"
            % _GENPASS_MAX_BITS
        )
    chars = (bits + 3) // 4
    return secrets.token_hex((chars + 1) // 2)[:chars].encode()


@subcommand("acl", "log", -2, "admin noscript loading stale", summary="Lists recent security events generated due to ACL rules.")
def acl_log(ctx: ClientSession, argv: list[bytes]) -> Any:
    if len(argv) > 3:
        raise CommandError(unknown_subcommand(argv))
    acl = ctx.core.acl
    count = 10
    if len(argv) == 3:
        if argv[2].lower() == b"reset":
            acl.log.clear()
            return OK
        parsed = to_int(argv[2])
        if parsed is None:
            raise CommandError(_NOT_AN_INTEGER)
        count = max(parsed, 0)
    now = ctx.now_ms()
    return [
        {
            b"count": e.count,
            b"reason": e.reason_name.encode(),
            b"context": (b"toplevel", b"multi", b"lua", b"module")[e.context],
            b"object": e.object,
            b"username": e.username,
            b"age-seconds": (now - e.ctime) / 1000,
            b"client-info": e.cinfo.encode("utf-8", "surrogateescape"),
            b"entry-id": e.entry_id,
            b"timestamp-created": e.created,
            b"timestamp-last-updated": e.ctime,
        }
        for e in acl.log[:count]
    ]


def _lookup(table: CommandTable, argv: list[bytes]) -> CommandSpec | None:
    """lookupCommand (not strict): a container's subcommand when one is named."""
    spec = table.get(argv[0].lower())
    if spec is None or not spec.subcommands or len(argv) == 1:
        return spec
    return spec.subcommands.get(argv[1].decode("utf-8", "replace").lower())


@subcommand("acl", "dryrun", -4, "admin noscript loading stale",
            summary="Simulates the execution of a command by a user, without executing the command.")
def acl_dryrun(ctx: ClientSession, argv: list[bytes]) -> Any:
    user = ctx.core.acl.users.get(argv[2])
    if user is None:
        raise CommandError("ERR User '%s' not found" % _text(argv[2]))
    target = argv[3:]
    spec = _lookup(ctx.core.commands, target)
    if spec is None:
        raise CommandError("ERR Command '%s' not found" % _text(argv[3]))
    if not spec.arity_ok(len(target)):
        raise CommandError("ERR wrong number of arguments for '%s' command" % spec.name)
    result, pos = user.check(spec, target)
    if result != ACL_OK:
        return denial_message(result, user, spec, target[pos], True).encode()
    return OK


@subcommand("acl", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def acl_help(ctx: ClientSession, argv: list[bytes]) -> Any:
    return help_reply(argv[0], _HELP)
