"""String commands: GET, SET, SETNX, GETSET, GETDEL, MGET, MSET, MSETNX, INCR, INCRBY, DECR,
DECRBY, APPEND and STRLEN, with Redis 7.2's replies and error texts (t_string.c).

Rill has no key expiry, so SET's EX/PX/EXAT/PXAT/KEEPTTL options are refused with a syntax
error (docs/compatibility.md). Effects are state-independent where that is cheap: every
write that stores a whole value logs `SET key value` (SETNX, GETSET, SET … NX/XX/GET and the
INCR family included), MSETNX logs `MSET`, GETDEL logs `DEL`; APPEND is logged verbatim
because rewriting it as SET would copy the whole, possibly large, value into the log.
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.args import NOT_AN_INTEGER, SYNTAX_ERROR, parse_int, to_int
from node.commands.context import Session
from node.commands.reply import OK, CommandError
from node.commands.table import command
from node.engine.keyspace import WRONGTYPE

_I64_MIN: Final = -(1 << 63)
_I64_MAX: Final = (1 << 63) - 1


def _string_or_none(ctx: Session, key: bytes) -> bytes | None:
    """The string at key, None if absent; WRONGTYPE for any other type."""
    value = ctx.db.get(key)
    if value is None or type(value) is bytes:
        return value
    raise CommandError(WRONGTYPE)


# ---------------------------------------------------------------------------------------
# GET, SET and their variants
# ---------------------------------------------------------------------------------------


@command("get", 2, "readonly fast", 1, 1, 1, group="string", summary="Returns the string value of a key.")
def get(ctx: Session, argv: list[bytes]) -> Any:
    value = ctx.db.get(argv[1])
    if value is None or type(value) is bytes:
        return value
    raise CommandError(WRONGTYPE)


_NX: Final = 1
_XX: Final = 2
_GET: Final = 4


def _set_flags(argv: list[bytes]) -> int:
    """SET's options (parseExtendedStringArgumentsOrReply): NX and XX exclude each other;
    the expiry options are refused because Rill keeps no TTLs."""
    flags = 0
    for option in argv[3:]:
        option = option.lower()
        if option == b"nx" and not flags & _XX:
            flags |= _NX
        elif option == b"xx" and not flags & _NX:
            flags |= _XX
        elif option == b"get":
            flags |= _GET
        else:
            raise CommandError(SYNTAX_ERROR)
    return flags


@command("set", -3, "write denyoom", 1, 1, 1, group="string",
         summary="Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.")
def set_(ctx: Session, argv: list[bytes]) -> Any:
    key = argv[1]
    value = argv[2]
    if len(argv) == 3:
        ctx.db[key] = value
        ctx.propagate(b"SET", key, value)
        return OK
    flags = _set_flags(argv)
    # With GET the old value is read (and type-checked) before the NX/XX condition.
    old = _string_or_none(ctx, key) if flags & _GET else None
    exists = key in ctx.db
    if flags & _NX and exists or flags & _XX and not exists:
        return old
    ctx.db[key] = value
    ctx.propagate(b"SET", key, value)
    return old if flags & _GET else OK


@command("setnx", 3, "write denyoom fast", 1, 1, 1, group="string",
         summary="Set the string value of a key only when the key doesn't exist.")
def setnx(ctx: Session, argv: list[bytes]) -> Any:
    db = ctx.db
    key = argv[1]
    if key in db:
        return 0
    db[key] = argv[2]
    ctx.propagate(b"SET", key, argv[2])
    return 1


@command("getset", 3, "write denyoom fast", 1, 1, 1, group="string",
         summary="Returns the previous string value of a key after setting it to a new value.")
def getset(ctx: Session, argv: list[bytes]) -> Any:
    key = argv[1]
    old = _string_or_none(ctx, key)
    ctx.db[key] = argv[2]
    ctx.propagate(b"SET", key, argv[2])
    return old


@command("getdel", 2, "write fast", 1, 1, 1, group="string",
         summary="Returns the string value of a key after deleting the key.")
def getdel(ctx: Session, argv: list[bytes]) -> Any:
    key = argv[1]
    old = _string_or_none(ctx, key)
    if old is not None:
        del ctx.db[key]
        ctx.propagate(b"DEL", key)
    return old


# ---------------------------------------------------------------------------------------
# MGET, MSET, MSETNX
# ---------------------------------------------------------------------------------------


@command("mget", -2, "readonly fast", 1, -1, 1, group="string",
         summary="Atomically returns the string values of one or more keys.")
def mget(ctx: Session, argv: list[bytes]) -> Any:
    # A key holding another type reads as nil here, not as an error.
    db = ctx.db
    out = []
    for key in argv[1:]:
        value = db.get(key)
        out.append(value if type(value) is bytes else None)
    return out


def _check_pairs(argv: list[bytes]) -> None:
    if len(argv) % 2 == 0:
        raise CommandError(f"ERR wrong number of arguments for '{argv[0].decode('utf-8', 'replace').lower()}' command")


def _store_pairs(ctx: Session, argv: list[bytes]) -> None:
    db = ctx.db
    for i in range(1, len(argv), 2):
        db[argv[i]] = argv[i + 1]
    ctx.propagate(b"MSET", *argv[1:])


@command("mset", -3, "write denyoom", 1, -1, 2, group="string",
         summary="Atomically creates or modifies the string values of one or more keys.")
def mset(ctx: Session, argv: list[bytes]) -> Any:
    _check_pairs(argv)
    _store_pairs(ctx, argv)
    return OK


@command("msetnx", -3, "write denyoom", 1, -1, 2, group="string",
         summary="Atomically modifies the string values of one or more keys only when all keys don't exist.")
def msetnx(ctx: Session, argv: list[bytes]) -> Any:
    _check_pairs(argv)
    db = ctx.db
    if any(argv[i] in db for i in range(1, len(argv), 2)):
        return 0
    _store_pairs(ctx, argv)
    return 1


# ---------------------------------------------------------------------------------------
# INCR, INCRBY, DECR, DECRBY
# ---------------------------------------------------------------------------------------


def _add(ctx: Session, key: bytes, increment: int) -> int:
    """incrDecrCommand. The effect is `SET key result` rather than the command itself: the
    result is at most 20 bytes, and replaying it does not depend on the value it started
    from, so a replica or AOF replay cannot compound a divergence."""
    old = _string_or_none(ctx, key)
    if old is None:
        current = 0
    else:
        parsed = to_int(old)
        if parsed is None:
            raise CommandError(NOT_AN_INTEGER)
        current = parsed
    result = current + increment
    if result < _I64_MIN or result > _I64_MAX:
        raise CommandError("ERR increment or decrement would overflow")
    encoded = b"%d" % result
    ctx.db[key] = encoded
    ctx.propagate(b"SET", key, encoded)
    return result


@command("incr", 2, "write denyoom fast", 1, 1, 1, group="string",
         summary="Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.")
def incr(ctx: Session, argv: list[bytes]) -> Any:
    return _add(ctx, argv[1], 1)


@command("decr", 2, "write denyoom fast", 1, 1, 1, group="string",
         summary="Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.")
def decr(ctx: Session, argv: list[bytes]) -> Any:
    return _add(ctx, argv[1], -1)


@command("incrby", 3, "write denyoom fast", 1, 1, 1, group="string",
         summary="Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.")
def incrby(ctx: Session, argv: list[bytes]) -> Any:
    return _add(ctx, argv[1], parse_int(argv[2]))


@command("decrby", 3, "write denyoom fast", 1, 1, 1, group="string",
         summary="Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.")
def decrby(ctx: Session, argv: list[bytes]) -> Any:
    decrement = parse_int(argv[2])
    if decrement == _I64_MIN:
        raise CommandError("ERR decrement would overflow")  # -LLONG_MIN does not fit
    return _add(ctx, argv[1], -decrement)


# ---------------------------------------------------------------------------------------
# APPEND, STRLEN
# ---------------------------------------------------------------------------------------


@command("append", 3, "write denyoom fast", 1, 1, 1, group="string",
         summary="Appends a string to the value of a key. Creates the key if it doesn't exist.")
def append(ctx: Session, argv: list[bytes]) -> Any:
    key, suffix = argv[1], argv[2]
    old = _string_or_none(ctx, key)
    if old is None:
        value = suffix  # an empty suffix still creates the key, as in Redis
    else:
        # checkStringLength; the replication link is exempt (mustObeyClient).
        if len(old) + len(suffix) > ctx.node.config.proto_max_bulk_len and "master" not in ctx.flags:
            raise CommandError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
        value = old + suffix
    ctx.db[key] = value
    ctx.propagate(b"APPEND", key, suffix)
    return len(value)


@command("strlen", 2, "readonly fast", 1, 1, 1, group="string", summary="Returns the length of a string value.")
def strlen(ctx: Session, argv: list[bytes]) -> Any:
    value = _string_or_none(ctx, argv[1])
    return 0 if value is None else len(value)
