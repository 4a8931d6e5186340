"""The `<COMMAND> HELP` reply shared by every container command (Redis's addReplyHelp).

Redis frames each help text the same way: a header line naming the command as the client
typed it (upper-cased), the command's own lines, and a closing `HELP` entry, all as status
strings in one array.
"""

from __future__ import annotations

from collections.abc import Sequence


def help_reply(argv0: bytes, lines: Sequence[str]) -> list[str]:
    name = argv0.decode("utf-8", "replace").upper()
    return [
        f"{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        *lines,
        "HELP",
        "    Prints this help.",
    ]


def unknown_subcommand(argv: list[bytes]) -> str:
    """Redis's text for a subcommand a command does not know (or with wrong arguments),
    for commands that parse their subcommands themselves (DEBUG, COMMAND)."""
    return "ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP." % (
        argv[1].decode("utf-8", "replace")[:128],
        argv[0].decode("utf-8", "replace").upper(),
    )
