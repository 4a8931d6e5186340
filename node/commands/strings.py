"""String commands: GET, SET (with NX/XX/GET and the expiry options), SETNX, SETEX, PSETEX,
GETSET, GETEX, GETDEL, MGET, MSET, MSETNX, INCR, INCRBY, DECR, DECRBY, APPEND and STRLEN,
with Redis 7.2's replies and error texts (t_string.c).

A write that stores a whole value drops the key's time to live (SET, GETSET, MSET), unless
SET says KEEPTTL; the INCR family and APPEND change the value in place and keep it.

Effects are state-independent where that is cheap: every write that stores a whole value
logs `SET key value` (SETNX, GETSET, SET … NX/XX/GET and the INCR family included), with
`PXAT <unix ms>` when the key then has a deadline (SET EX/PX/EXAT/KEEPTTL, SETEX, PSETEX,
an INCR of a volatile key); MSETNX logs `MSET`, GETDEL logs `DEL`; GETEX logs what it did,
as `PEXPIREAT`, `PERSIST` or, for a deadline already past, `DEL`. APPEND is logged verbatim
because rewriting it as SET would copy the whole, possibly large, value into the log.
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.args import NOT_AN_INTEGER, SYNTAX_ERROR, parse_int, to_int
from node.commands.context import Session
from node.commands.expire_cmds import already_expired, expire_time_error
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


def _store(ctx: Session, key: bytes, value: bytes) -> None:
    """Store a whole new value (setKey without KEEPTTL): the key's deadline goes."""
    ctx.db[key] = value
    expires = ctx.expires
    if expires.deadlines:
        expires.remove(key)


def _propagate_set(ctx: Session, key: bytes, value: bytes) -> None:
    """Log `SET key value`, with the key's deadline if it has one."""
    when = ctx.expires.get(key) if ctx.expires.deadlines else None
    if when is None:
        ctx.propagate(b"SET", key, value)
    else:
        ctx.propagate(b"SET", key, value, b"PXAT", b"%d" % when)


# ---------------------------------------------------------------------------------------
# GET, SET, GETEX and their variants
# ---------------------------------------------------------------------------------------


@command("get", 2, "readonly fast", 1, 1, 1, group="string", summary="Returns the string value of a key.")
def get(ctx: Session, argv: list[bytes]) -> Any:
    value = ctx.db.get(argv[1])
    if value is None or type(value) is bytes:
        return value
    raise CommandError(WRONGTYPE)


# parseExtendedStringArgumentsOrReply's flags.
_NX: Final = 1
_XX: Final = 2
_GET: Final = 4
_KEEPTTL: Final = 8
_EX: Final = 16
_PX: Final = 32
_EXAT: Final = 64
_PXAT: Final = 128
_PERSIST: Final = 256
_EXPIRY: Final = _EX | _PX | _EXAT | _PXAT
# Each expiry option and the options it excludes (itself repeated is allowed: the last wins).
_EXPIRY_OPTIONS: Final = {
    b"ex": (_EX, _KEEPTTL | _PERSIST | _EXPIRY & ~_EX),
    b"px": (_PX, _KEEPTTL | _PERSIST | _EXPIRY & ~_PX),
    b"exat": (_EXAT, _KEEPTTL | _PERSIST | _EXPIRY & ~_EXAT),
    b"pxat": (_PXAT, _KEEPTTL | _PERSIST | _EXPIRY & ~_PXAT),
}


def _string_options(argv: list[bytes], for_set: bool) -> tuple[int, bytes | None]:
    """SET's options (from argv[3]) or GETEX's (from argv[2]): (flags, the expiry argument).
    Anything out of place is a syntax error: an option the command lacks, NX with XX, two
    different expiry options, KEEPTTL (SET) or PERSIST (GETEX) with one, or an expiry
    option without its argument."""
    flags = 0
    expire: bytes | None = None
    j = 3 if for_set else 2
    while j < len(argv):
        option = argv[j].split(b"\0", 1)[0].lower()  # the C string Redis compares
        expiry = _EXPIRY_OPTIONS.get(option)
        if expiry is not None and not flags & expiry[1] and j + 1 < len(argv):
            flags |= expiry[0]
            expire = argv[j + 1]
            j += 2
            continue
        if for_set and option == b"nx" and not flags & _XX:
            flags |= _NX
        elif for_set and option == b"xx" and not flags & _NX:
            flags |= _XX
        elif for_set and option == b"get":
            flags |= _GET
        elif for_set and option == b"keepttl" and not flags & (_PERSIST | _EXPIRY):
            flags |= _KEEPTTL
        elif not for_set and option == b"persist" and not flags & (_KEEPTTL | _EXPIRY):
            flags |= _PERSIST
        else:
            raise CommandError(SYNTAX_ERROR)
        j += 1
    return flags, expire


def _deadline(ctx: Session, argv: list[bytes], expire: bytes, flags: int) -> int:
    """getExpireMillisecondsOrReply: the absolute deadline in ms of an EX/PX/EXAT/PXAT
    argument, which must be a positive integer that does not overflow."""
    when = parse_int(expire)
    seconds = flags & (_EX | _EXAT)
    if when <= 0 or seconds and when > _I64_MAX // 1000:
        raise expire_time_error(argv)
    if seconds:
        when *= 1000
    if flags & (_EX | _PX):
        when += ctx.command_ms()
        if when > _I64_MAX:
            raise expire_time_error(argv)
    return when


def _set(ctx: Session, argv: list[bytes], key: bytes, value: bytes, flags: int, expire: bytes | None) -> Any:
    """setGenericCommand: the expiry is checked first, then GET's old value (and its type),
    then the NX/XX condition."""
    when = _deadline(ctx, argv, expire, flags) if expire is not None else None
    # With GET the old value is read (and type-checked) before the NX/XX condition.
    old = _string_or_none(ctx, key) if flags & _GET else None
    exists = key in ctx.db
    if flags & _NX and exists or flags & _XX and not exists:
        return old
    if when is not None:
        ctx.db[key] = value
        ctx.expires.set(key, when)
    elif flags & _KEEPTTL:
        ctx.db[key] = value
    else:
        _store(ctx, key, value)
    _propagate_set(ctx, key, value)
    return old if flags & _GET else OK


@command("set", -3, "write denyoom", 1, 1, 1, group="string",
         summary="Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.")
def set_(ctx: Session, argv: list[bytes]) -> Any:
    key = argv[1]
    value = argv[2]
    if len(argv) == 3:
        _store(ctx, key, value)
        ctx.propagate(b"SET", key, value)
        return OK
    flags, expire = _string_options(argv, True)
    return _set(ctx, argv, key, value, flags, expire)


@command("setex", 4, "write denyoom", 1, 1, 1, group="string",
         summary="Sets the string value and expiration time of a key. Creates the key if it doesn't exist.")
def setex(ctx: Session, argv: list[bytes]) -> Any:
    return _set(ctx, argv, argv[1], argv[3], _EX, argv[2])


@command("psetex", 4, "write denyoom", 1, 1, 1, group="string",
         summary="Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.")
def psetex(ctx: Session, argv: list[bytes]) -> Any:
    return _set(ctx, argv, argv[1], argv[3], _PX, argv[2])


@command("getex", -2, "write fast", 1, 1, 1, group="string",
         summary="Returns the string value of a key after setting its expiration time.")
def getex(ctx: Session, argv: list[bytes]) -> Any:
    flags, expire = _string_options(argv, False)
    key = argv[1]
    value = _string_or_none(ctx, key)
    if value is None:
        return None
    when = _deadline(ctx, argv, expire, flags) if expire is not None else None
    if when is not None:
        if flags & (_EXAT | _PXAT) and already_expired(ctx, when):
            ctx.node.keyspace.delete(ctx.db_index, key)
            ctx.propagate(b"DEL", key)
        else:
            ctx.expires.set(key, when)
            ctx.propagate(b"PEXPIREAT", key, b"%d" % when)
    elif flags & _PERSIST and ctx.expires.remove(key):
        ctx.propagate(b"PERSIST", key)
    return value


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
    _store(ctx, key, argv[2])
    ctx.propagate(b"SET", key, argv[2])
    return old


@command("getdel", 2, "write fast", 1, 1, 1, group="string",
         summary="Returns the string value of a key after deleting the key.")
def getdel(ctx: Session, argv: list[bytes]) -> Any:
    key = argv[1]
    old = _string_or_none(ctx, key)
    if old is not None:
        ctx.node.keyspace.delete(ctx.db_index, key)
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
    for i in range(1, len(argv), 2):
        _store(ctx, argv[i], argv[i + 1])
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
    """incrDecrCommand. The effect is `SET key result` (with the key's deadline, which the
    value keeps) rather than the command itself: the result is at most 20 bytes, and
    replaying it does not depend on the value it started from, so a replica or AOF replay
    cannot compound a divergence."""
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
    _propagate_set(ctx, key, encoded)
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
