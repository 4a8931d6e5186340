"""A sentinel's command table: the commands it shares with a node, SENTINEL with its
subcommands (with Redis 7.2's arities and SENTINEL HELP's text) and its own ROLE and PUBLISH.
The handlers are the caller's: node/sentinel/commands.py binds its own, and the
configuration loader checks ACL rules against a table without any."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from node.commands.table import CommandSpec, CommandTable, add_command
from node.server.sentinel_mode import sentinel_commands

# Redis's arity of each SENTINEL subcommand: counts SENTINEL and the subcommand; negative =
# at least.
SUBCOMMAND_ARITIES: Final = {
    "ckquorum": 3,
    "config": -4,
    "debug": -2,
    "failover": 3,
    "flushconfig": 2,
    "get-master-addr-by-name": 3,
    "help": 2,
    "info-cache": -3,
    "is-master-down-by-addr": 6,
    "master": 3,
    "masters": 2,
    "monitor": 6,
    "myid": 2,
    "pending-scripts": 2,
    "remove": 3,
    "replicas": 3,
    "reset": 3,
    "sentinels": 3,
    "set": -5,
    "simulate-failure": -3,
    "slaves": 3,
}

HELP_LINES: Final = (
    "CKQUORUM <master-name>",
    "    Check if the current Sentinel configuration is able to reach the quorum",
    "    needed to failover a master and the majority needed to authorize the",
    "    failover.",
    "CONFIG SET param value [param value ...]",
    "    Set a global Sentinel configuration parameter.",
    "CONFIG GET <param> [param param param ...]",
    "    Get global Sentinel configuration parameter.",
    "DEBUG [<param> <value> ...]",
    "    Show a list of configurable time parameters and their values (milliseconds).",
    "    Or update current configurable parameters values (one or more).",
    "GET-MASTER-ADDR-BY-NAME <master-name>",
    "    Return the ip and port number of the master with that name.",
    "FAILOVER <master-name>",
    "    Manually failover a master node without asking for agreement from other",
    "    Sentinels",
    "FLUSHCONFIG",
    "    Force Sentinel to rewrite its configuration on disk, including the current",
    "    Sentinel state.",
    "INFO-CACHE <master-name>",
    "    Return last cached INFO output from masters and all its replicas.",
    "IS-MASTER-DOWN-BY-ADDR <ip> <port> <current-epoch> <runid>",
    "    Check if the master specified by ip:port is down from current Sentinel's",
    "    point of view.",
    "MASTER <master-name>",
    "    Show the state and info of the specified master.",
    "MASTERS",
    "    Show a list of monitored masters and their state.",
    "MONITOR <name> <ip> <port> <quorum>",
    "    Start monitoring a new master with the specified name, ip, port and quorum.",
    "MYID",
    "    Return the ID of the Sentinel instance.",
    "PENDING-SCRIPTS",
    "    Get pending scripts information.",
    "REMOVE <master-name>",
    "    Remove master from Sentinel's monitor list.",
    "REPLICAS <master-name>",
    "    Show a list of replicas for this master and their state.",
    "RESET <pattern>",
    "    Reset masters for specific master name matching this pattern.",
    "SENTINELS <master-name>",
    "    Show a list of Sentinel instances for this master and their state.",
    "SET <master-name> <option> <value> [<option> <value> ...]",
    "    Set configuration parameters for certain masters.",
    "SIMULATE-FAILURE [CRASH-AFTER-ELECTION] [CRASH-AFTER-PROMOTION] [HELP]",
    "    Simulate a Sentinel crash.",
)


def command_table(handler: Callable[[str], Any]) -> CommandTable:
    """The table, with `handler(name)` as the handler of "sentinel|<subcommand>", "role"
    and "publish"."""
    table = sentinel_commands()
    sentinel = CommandSpec("sentinel", -2, frozenset({"admin"}), 0, 0, 0, None, "sentinel",
                           "A container for Redis Sentinel commands.")
    for name, arity in SUBCOMMAND_ARITIES.items():
        sentinel.subcommands[name] = CommandSpec(
            f"sentinel|{name}", arity, frozenset({"admin"}), 0, 0, 0, handler(f"sentinel|{name}"), "sentinel", "",
        )
    add_command(table, sentinel)
    add_command(table, CommandSpec("role", 1, frozenset({"noscript", "loading", "stale", "fast"}), 0, 0, 0,
                                   handler("role"), "server", "Returns the replication role."))
    add_command(table, CommandSpec("publish", 3, frozenset({"pubsub", "loading", "stale", "fast"}), 0, 0, 0,
                                   handler("publish"), "pubsub", "Posts a message to a channel."))
    return table
