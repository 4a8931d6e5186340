"""CONFIG GET/SET/RESETSTAT/REWRITE/HELP over the node's `Config`.

Matching, validation order and error texts follow Redis 7.2's config.c; the directives
themselves (types, ranges, defaults) live in `node.config`.
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.args import SYNTAX_ERROR
from node.commands.context import Session
from node.commands.glob import glob_match
from node.commands.helptext import help_reply
from node.commands.reply import OK, CommandError
from node.commands.table import container, subcommand
from node.config import DIRECTIVES, ConfigError, canonical_name

container("config", -2, group="server", summary="A container for server configuration commands.")

_HELP: Final = (
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
)

# Every name CONFIG GET can match (aliases included, as Redis lists both) → canonical name.
_ALL_NAMES: Final = tuple((name, d.name) for d in DIRECTIVES.values() for name in (d.name, *d.aliases))


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


@subcommand("config", "get", -3, "admin noscript loading stale", summary="Returns the effective values of configuration parameters.")
def config_get(ctx: Session, argv: list[bytes]) -> Any:
    config = ctx.node.config
    found: dict[str, tuple[str, str]] = {}  # lower-case name → (name as replied, canonical)
    for raw in argv[2:]:
        pattern = _text(raw)
        if not any(c in pattern for c in "[*?"):
            # An exact name is looked up directly and replied as the client spelled it.
            canon = canonical_name(pattern)
            if canon is not None and pattern.lower() not in found:
                found[pattern.lower()] = (pattern, canon)
            continue
        for name, canon in _ALL_NAMES:
            if name not in found and glob_match(raw, name.encode(), nocase=True):
                found[name] = (name, canon)
    return {name.encode(): config.get(canon).encode("utf-8", "surrogateescape") for name, canon in found.values()}


@subcommand("config", "set", -4, "admin noscript loading stale", summary="Sets configuration parameters in-flight.")
def config_set(ctx: Session, argv: list[bytes]) -> Any:
    if len(argv) % 2:
        raise CommandError(SYNTAX_ERROR)
    pairs = [(_text(argv[i]), _text(argv[i + 1])) for i in range(2, len(argv), 2)]
    try:
        ctx.node.config.set_many(pairs)
    except ConfigError as exc:
        raise CommandError(f"ERR {exc}") from None
    return OK


@subcommand("config", "resetstat", 2, "admin noscript loading stale", summary="Resets the server's statistics.")
def config_resetstat(ctx: Session, argv: list[bytes]) -> Any:
    ctx.node.admin.reset_stats()
    return OK


@subcommand("config", "rewrite", 2, "admin noscript loading stale", summary="Persists the effective configuration to file.")
def config_rewrite(ctx: Session, argv: list[bytes]) -> Any:
    try:
        ctx.node.config.rewrite()
    except ConfigError as exc:
        raise CommandError(f"ERR {exc}") from None
    except OSError as exc:
        raise CommandError(f"ERR Rewriting config file: {exc.strerror}") from None
    return OK


@subcommand("config", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def config_help(ctx: Session, argv: list[bytes]) -> Any:
    return help_reply(argv[0], _HELP)
