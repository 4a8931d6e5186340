"""The command table: every command's name, arity, flags, key positions and handler.

Handlers register with `@command(...)`; container commands (XGROUP, CONFIG, CLIENT, …)
register their subcommands under the parent with `@subcommand(...)`, all into `TABLE`, the
node's table. A server answers from the table it was built with (its dispatcher, COMMAND,
MULTI queueing and read-only replicas): a node's is `TABLE`; a server with another command
set (a sentinel) builds its own with `restricted_table` and `add_command`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

# A handler takes the calling client's session (node.commands.context.Session) and the
# arguments. The session's type is named by each handler, not here: the table sits below the
# session, which names the table as its server's command list.
Handler = Callable[[Any, list[bytes]], Any]

# Redis command flags used here. "write" commands are refused on replicas and their
# effects are logged; "noscript"/"loading"/"stale" are informative for COMMAND INFO.
KNOWN_FLAGS: Final = frozenset(
    {
        "write", "readonly", "denyoom", "admin", "pubsub", "noscript", "blocking", "loading",
        "stale", "skip_monitor", "skip_slowlog", "fast", "no_auth", "may_replicate",
        "no_multi", "allow_busy", "no_mandatory_keys", "no_async_loading",
    }
)


@dataclass(slots=True)
class CommandSpec:
    name: str  # lower case; subcommands as "parent|sub"
    arity: int  # Redis arity: n = exactly n arguments (with the name), -n = at least n
    flags: frozenset[str]
    first_key: int
    last_key: int
    key_step: int
    handler: Handler | None
    group: str = "generic"  # Redis ACL category / docs group ("stream", "string", …)
    summary: str = ""
    subcommands: dict[str, CommandSpec] = field(default_factory=dict)
    # Argument counts accepted besides the Redis arity, for Rill's extensions of a command
    # (SLAVEOF NO ONE EPOCH e); COMMAND INFO shows the Redis arity.
    extra_argc: frozenset[int] = frozenset()
    # Its bit in ACL selectors' command bitmaps (node.commands.acl_rules numbers every command
    # of a server's table by name, as Redis's ACLGetCommandID); -1 until then.
    acl_id: int = -1

    @property
    def is_write(self) -> bool:
        return "write" in self.flags

    def keys(self, argv: Sequence[bytes]) -> list[bytes]:
        """Key arguments of argv according to first/last/step (last < 0 counts from the end)."""
        if self.first_key <= 0:
            return []
        last = self.last_key if self.last_key >= 0 else len(argv) + self.last_key
        return [argv[i] for i in range(self.first_key, min(last, len(argv) - 1) + 1, self.key_step or 1)]

    def arity_ok(self, argc: int) -> bool:
        a = self.arity
        return (argc == a if a > 0 else argc >= -a) or argc in self.extra_argc


# Lower-case command name -> spec: what one server can run.
CommandTable = dict[bytes, CommandSpec]

TABLE: Final[CommandTable] = {}


def command(
    name: str,
    arity: int,
    flags: str = "",
    first_key: int = 0,
    last_key: int = 0,
    key_step: int = 0,
    group: str = "generic",
    summary: str = "",
    extra_argc: tuple[int, ...] = (),
) -> Callable[[Handler], Handler]:
    """Register a top-level command handler."""
    flag_set = frozenset(flags.split())
    unknown = flag_set - KNOWN_FLAGS
    assert not unknown, f"unknown flags {unknown} on {name}"

    def register(handler: Handler) -> Handler:
        key = name.lower().encode()
        existing = TABLE.get(key)
        spec = CommandSpec(name.lower(), arity, flag_set, first_key, last_key, key_step, handler, group, summary,
                           extra_argc=frozenset(extra_argc))
        if existing is not None:
            assert existing.handler is None, f"{name} registered twice"
            spec.subcommands = existing.subcommands
        TABLE[key] = spec
        return handler

    return register


def container(name: str, arity: int = -2, group: str = "generic", summary: str = "") -> None:
    """Declare a command that only dispatches to subcommands (XGROUP, XINFO, CONFIG, …)."""
    key = name.lower().encode()
    if key not in TABLE:
        TABLE[key] = CommandSpec(name.lower(), arity, frozenset(), 0, 0, 0, None, group, summary)


def subcommand(
    parent: str,
    name: str,
    arity: int,
    flags: str = "",
    first_key: int = 0,
    last_key: int = 0,
    key_step: int = 0,
    summary: str = "",
) -> Callable[[Handler], Handler]:
    """Register a subcommand; arity counts the parent name too (XGROUP CREATE key g id = 5)."""
    container(parent)
    flag_set = frozenset(flags.split())
    assert not (flag_set - KNOWN_FLAGS), f"unknown flags on {parent} {name}"

    def register(handler: Handler) -> Handler:
        parent_spec = TABLE[parent.lower().encode()]
        full = f"{parent.lower()}|{name.lower()}"
        parent_spec.subcommands[name.lower()] = CommandSpec(
            full, arity, flag_set, first_key, last_key, key_step, handler, parent_spec.group, summary
        )
        return handler

    return register


def restricted_table(allowed: dict[str, tuple[str, ...] | None], source: CommandTable | None = None) -> CommandTable:
    """A table of some of `source`'s commands (the node's by default): each name in `allowed`
    with its subcommands, all of them (None) or only those listed. The specs are shared,
    except a container limited to some subcommands, which gets a copy listing only those."""
    table = TABLE if source is None else source
    out: CommandTable = {}
    for name, subcommands in allowed.items():
        spec = table[name.encode()]
        if subcommands is not None:
            spec = CommandSpec(
                spec.name, spec.arity, spec.flags, spec.first_key, spec.last_key, spec.key_step, spec.handler,
                spec.group, spec.summary, {sub: spec.subcommands[sub] for sub in subcommands}, spec.extra_argc,
                spec.acl_id,
            )
        out[name.encode()] = spec
    return out


def add_command(table: CommandTable, spec: CommandSpec) -> None:
    """Adds (or replaces) a command in a server's own table (a handler bound to that server)."""
    assert not (spec.flags - KNOWN_FLAGS), f"unknown flags on {spec.name}"
    table[spec.name.encode()] = spec


def lookup(argv: Sequence[bytes], table: CommandTable | None = None) -> CommandSpec | None:
    """The spec that handles argv (the subcommand's for containers) in `table` (the node's by
    default), or None if unknown."""
    spec = (TABLE if table is None else table).get(argv[0].lower())
    if spec is None or not spec.subcommands or len(argv) < 2:
        return spec
    return spec.subcommands.get(argv[1].decode("utf-8", "replace").lower(), spec)


def queues_write(queued: Sequence[Sequence[bytes]]) -> bool:
    """Whether a MULTI queue holds a write (Redis: mstate.cmd_flags), subcommands included."""
    for argv in queued:
        spec = lookup(argv)
        if spec is not None and spec.is_write:
            return True
    return False
