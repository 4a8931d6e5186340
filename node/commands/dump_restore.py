"""DUMP and RESTORE (Redis 7.2's cluster.c dumpCommand and restoreCommand), with the RDB
codec of node/rdb/.

DUMP writes the payload Redis writes for the same value, byte for byte: the RDB version is
`rdb-version` (11, Redis 7.2's, by default; 10 gives what Redis 7.0 writes and RESTOREs) and
strings over 20 bytes are LZF-compressed while `rdbcompression` is on. RESTORE reads any
payload up to RDB 11, streams of RDB 9, 10 and 11 included; a value of a type Rill does not
hold (a list, a hash, ...) is refused with `Bad data format` naming it. IDLETIME and FREQ
are checked and have no effect (Rill keeps no access times, docs/compatibility.md).

The effect is deterministic and state-independent: `RESTORE key <deadline or 0> payload
REPLACE [ABSTTL]`, the deadline absolute (as Redis 7 propagates a RESTORE with a TTL), or
`DEL key` when the deadline has already passed and REPLACE deleted a key (Redis's rule).
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.args import SYNTAX_ERROR, parse_int
from node.commands.context import Session
from node.commands.expire_cmds import already_expired
from node.commands.reply import OK, CommandError
from node.commands.table import command
from node.rdb.dump import BadPayload, create_payload, load_payload, verify_payload
from node.rdb.encoding import RdbError
from node.rdb.values import UnsupportedType

BUSYKEY: Final = "BUSYKEY Target key name already exists."
BAD_PAYLOAD: Final = "ERR DUMP payload version or checksum are wrong"
BAD_DATA: Final = "ERR Bad data format"


@command("dump", 2, "readonly", 1, 1, 1, group="generic",
         summary="Returns a serialized representation of the value stored at a key.")
def dump(ctx: Session, argv: list[bytes]) -> Any:
    value = ctx.db.get(argv[1])
    if value is None:
        return None
    config = ctx.node.config
    return create_payload(value, config.get_int("rdb-version"), config.get("rdbcompression") == "yes")


@command("restore", -4, "write denyoom", 1, 1, 1, group="generic",
         summary="Creates a key from the serialized representation of a value.")
def restore(ctx: Session, argv: list[bytes]) -> Any:
    replace = absttl = False
    idle = freq = -1
    j = 4
    while j < len(argv):
        option = argv[j].lower()
        more = len(argv) - j - 1
        if option == b"replace":
            replace = True
        elif option == b"absttl":
            absttl = True
        elif option == b"idletime" and more >= 1 and freq == -1:
            idle = parse_int(argv[j + 1])
            if idle < 0:
                raise CommandError("ERR Invalid IDLETIME value, must be >= 0")
            j += 1
        elif option == b"freq" and more >= 1 and idle == -1:
            freq = parse_int(argv[j + 1])
            if not 0 <= freq <= 255:
                raise CommandError("ERR Invalid FREQ value, must be >= 0 and <= 255")
            j += 1
        else:
            raise CommandError(SYNTAX_ERROR)
        j += 1
    key = argv[1]
    if not replace and key in ctx.db:
        raise CommandError(BUSYKEY)
    ttl = parse_int(argv[2])
    if ttl < 0:
        raise CommandError("ERR Invalid TTL value, must be >= 0")
    payload = argv[3]
    try:
        verify_payload(payload)
    except BadPayload:
        raise CommandError(BAD_PAYLOAD) from None
    try:
        value = load_payload(payload)
    except UnsupportedType as exc:
        raise CommandError(f"{BAD_DATA} (Rill holds strings and streams, not a {exc.type_name})") from None
    except RdbError:
        raise CommandError(BAD_DATA) from None
    deleted = replace and ctx.node.keyspace.delete(ctx.db_index, key) is not None
    when = 0
    if ttl:
        when = ttl if absttl else ttl + ctx.command_ms()
        if already_expired(ctx, when):
            if deleted:
                ctx.propagate(b"DEL", key)
            return OK
    ctx.db[key] = value
    if when:
        ctx.expires.set(key, when)
        ctx.propagate(b"RESTORE", key, b"%d" % when, payload, b"REPLACE", b"ABSTTL")
    else:
        ctx.propagate(b"RESTORE", key, b"0", payload, b"REPLACE")
    return OK
