"""The commands a sentinel shares with a node: Redis 7.2 marks them CMD_SENTINEL (commands.def),
and in sentinel mode every other command is unknown (`-ERR unknown command ...`). A sentinel
built on the server core starts from this table and adds its own: SENTINEL, ROLE, and its
PUBLISH (which only takes `__sentinel__:hello`), replacing the node's.

"""

from __future__ import annotations

from typing import Final

from node.commands import load_all
from node.commands.table import CommandTable, restricted_table

# Name -> the subcommands shared (None: all of them). CLIENT NO-TOUCH is not a sentinel command.
SHARED_WITH_SENTINEL: Final[dict[str, tuple[str, ...] | None]] = {
    "acl": None,
    "auth": None,
    "client": (
        "caching", "getname", "getredir", "help", "id", "info", "kill", "list", "no-evict", "pause", "reply",
        "setinfo", "setname", "tracking", "trackinginfo", "unblock", "unpause",
    ),
    "command": None,
    "hello": None,
    "info": None,
    "ping": None,
    "psubscribe": None,
    "publish": None,
    "punsubscribe": None,
    "shutdown": None,
    "subscribe": None,
    "unsubscribe": None,
}


def sentinel_commands() -> CommandTable:
    """A new table of the node's commands a sentinel runs too (add the sentinel's own)."""
    load_all()
    return restricted_table(SHARED_WITH_SENTINEL)
