"""Time-to-live commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with NX, XX, GT, LT), TTL,
PTTL, EXPIRETIME, PEXPIRETIME and PERSIST, with Redis 7.2's replies and error texts
(expire.c). They work on any key type.

Effects (DESIGN principle 2, Redis's propagation): every deadline is logged absolute, as
`PEXPIREAT key <unix ms>` without the NX/XX/GT/LT condition that was already decided; a
deadline at or before the command's time deletes the key on a primary and logs `DEL key`
(an AOF being loaded or a replica applying its primary's log stores it instead, past or
not); PERSIST is logged verbatim when it removed a deadline. A command that changed nothing
logs nothing.
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.args import parse_int
from node.commands.context import Session
from node.commands.expiry import sees_expiry
from node.commands.reply import CommandError
from node.commands.table import command

_I64_MIN: Final = -(1 << 63)
_I64_MAX: Final = (1 << 63) - 1

_NX: Final = 1
_XX: Final = 2
_GT: Final = 4
_LT: Final = 8
_OPTIONS: Final = {b"nx": _NX, b"xx": _XX, b"gt": _GT, b"lt": _LT}


def expire_time_error(argv: list[bytes]) -> CommandError:
    """addReplyErrorExpireTime: names the command as sent, lower-cased."""
    return CommandError(f"ERR invalid expire time in '{argv[0].decode('utf-8', 'replace').lower()}' command")


def already_expired(ctx: Session, when: int) -> bool:
    """checkAlreadyExpired: a deadline not after the command's time deletes the key, except
    on a replica and for a log being replayed, which store it and wait for the DEL."""
    return when <= ctx.command_ms() and sees_expiry(ctx) and ctx.node.role == "master"


def _flags(argv: list[bytes]) -> int:
    """parseExtendedExpireArgumentsOrReply."""
    flags = 0
    for raw in argv[3:]:
        option = raw.split(b"\0", 1)[0]  # strcasecmp sees a C string
        flag = _OPTIONS.get(option.lower())
        if flag is None:
            text = option.decode("utf-8", "replace").replace("\r", " ").replace("\n", " ")
            raise CommandError(f"ERR Unsupported option {text}")
        flags |= flag
    if flags & _NX and flags & (_XX | _GT | _LT):
        raise CommandError("ERR NX and XX, GT or LT options at the same time are not compatible")
    if flags & _GT and flags & _LT:
        raise CommandError("ERR GT and LT options at the same time are not compatible")
    return flags


def _expire(ctx: Session, argv: list[bytes], relative: bool, seconds: bool) -> int:
    """expireGenericCommand."""
    flags = _flags(argv)
    when = parse_int(argv[2])
    if seconds:
        if when > _I64_MAX // 1000 or when < -(_I64_MAX // 1000):
            raise expire_time_error(argv)
        when *= 1000
    base = ctx.command_ms() if relative else 0
    if when > _I64_MAX - base:
        raise expire_time_error(argv)
    when += base
    key = argv[1]
    if key not in ctx.db:
        return 0
    expires = ctx.expires
    if flags:
        current = expires.get(key)
        if flags & _NX and current is not None:
            return 0
        if flags & _XX and current is None:
            return 0
        # No deadline counts as an infinite one: GT never beats it, LT always does.
        if flags & _GT and (current is None or when <= current):
            return 0
        if flags & _LT and current is not None and when >= current:
            return 0
    if already_expired(ctx, when):
        ctx.node.keyspace.delete(ctx.db_index, key)
        ctx.propagate(b"DEL", key)
        return 1
    expires.set(key, when)
    ctx.propagate(b"PEXPIREAT", key, b"%d" % when)
    return 1


@command("expire", -3, "write fast", 1, 1, 1, group="generic", summary="Sets the expiration time of a key in seconds.")
def expire(ctx: Session, argv: list[bytes]) -> Any:
    return _expire(ctx, argv, relative=True, seconds=True)


@command("pexpire", -3, "write fast", 1, 1, 1, group="generic",
         summary="Sets the expiration time of a key in milliseconds.")
def pexpire(ctx: Session, argv: list[bytes]) -> Any:
    return _expire(ctx, argv, relative=True, seconds=False)


@command("expireat", -3, "write fast", 1, 1, 1, group="generic",
         summary="Sets the expiration time of a key to a Unix timestamp.")
def expireat(ctx: Session, argv: list[bytes]) -> Any:
    return _expire(ctx, argv, relative=False, seconds=True)


@command("pexpireat", -3, "write fast", 1, 1, 1, group="generic",
         summary="Sets the expiration time of a key to a Unix milliseconds timestamp.")
def pexpireat(ctx: Session, argv: list[bytes]) -> Any:
    return _expire(ctx, argv, relative=False, seconds=False)


def _ttl(ctx: Session, key: bytes, milliseconds: bool, absolute: bool) -> int:
    """ttlGenericCommand: -2 without the key, -1 without a deadline; seconds are rounded."""
    if key not in ctx.db:
        return -2
    when = ctx.expires.get(key)
    if when is None:
        return -1
    ttl = when if absolute else when - ctx.command_ms()
    if ttl < 0:
        ttl = 0
    return ttl if milliseconds else (ttl + 500) // 1000


@command("ttl", 2, "readonly fast", 1, 1, 1, group="generic", summary="Returns the expiration time in seconds of a key.")
def ttl(ctx: Session, argv: list[bytes]) -> Any:
    return _ttl(ctx, argv[1], milliseconds=False, absolute=False)


@command("pttl", 2, "readonly fast", 1, 1, 1, group="generic",
         summary="Returns the expiration time in milliseconds of a key.")
def pttl(ctx: Session, argv: list[bytes]) -> Any:
    return _ttl(ctx, argv[1], milliseconds=True, absolute=False)


@command("expiretime", 2, "readonly fast", 1, 1, 1, group="generic",
         summary="Returns the expiration time of a key as a Unix timestamp.")
def expiretime(ctx: Session, argv: list[bytes]) -> Any:
    return _ttl(ctx, argv[1], milliseconds=False, absolute=True)


@command("pexpiretime", 2, "readonly fast", 1, 1, 1, group="generic",
         summary="Returns the expiration time of a key as a Unix milliseconds timestamp.")
def pexpiretime(ctx: Session, argv: list[bytes]) -> Any:
    return _ttl(ctx, argv[1], milliseconds=True, absolute=True)


@command("persist", 2, "write fast", 1, 1, 1, group="generic", summary="Removes the expiration time of a key.")
def persist(ctx: Session, argv: list[bytes]) -> Any:
    key = argv[1]
    if key in ctx.db and ctx.expires.remove(key):
        ctx.propagate(b"PERSIST", key)
        return 1
    return 0
