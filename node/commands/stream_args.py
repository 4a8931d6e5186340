"""What the stream command modules share: argument parsing with Redis 7.2's rules and
error texts (IDs: strict, range, exclusive '(' bounds, XADD's '*' and 'ms-*'; COUNT; BLOCK
timeouts; the XADD/XTRIM trimming options and Redis 8.6's XADD IDMP / IDMPAUTO; the
XREAD/XREADGROUP option loop), the stream key lookup with its type check, the entry reply
shape and parking a blocking read.

Sources: t_stream.c streamParseAddOrTrimArgsOrReply / xreadCommand, timeout.c
getTimeoutFromObjectOrReply.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from node.commands.args import NOT_AN_INTEGER, SYNTAX_ERROR, to_int
from node.commands.context import Block, Session
from node.commands.reply import NULL_ARRAY, CommandError, OutputLimitReached, Raw
from node.engine.ids import MAX_ID, MAX_SEQ, decr_id, format_id, incr_id, parse_id
from node.engine.keyspace import WRONGTYPE, Database
from node.engine.stream_ops import (
    TRIM_MAXLEN,
    TRIM_MINID,
    TRIM_NONE,
    AddTrimArgs,
    Effect,
    Entry,
    ReadBudget,
    StreamError,
)
from node.engine.stream_refs import KEEPREF, POLICY_NAMES
from node.engine.stream_value import StreamValue

INVALID_ID: Final = "ERR Invalid stream ID specified as stream command argument"
IDMP_TWICE: Final = "ERR IDMP/IDMPAUTO specified multiple times"

_LLONG_MAX: Final = (1 << 63) - 1
_MAX_ID_ARG_LEN: Final = 127  # streamGenericParseIDOrReply's buffer


def from_log(ctx: Session) -> bool:
    """True when the command replays the effect log (a replica applying its primary's
    stream, or an AOF being loaded): Redis's mustObeyClient(). Such a session carries the
    "replay" flag; it may send effect forms a client may not (XADD `MAXLEN = n LIMIT m`)."""
    return "replay" in ctx.flags


# -- IDs -----------------------------------------------------------------------------------


def parse_strict_id(raw: bytes, missing_seq: int = 0) -> int:
    """streamParseStrictIDOrReply: `ms` or `ms-seq`; '-' and '+' are invalid."""
    if raw == b"-" or raw == b"+":
        raise CommandError(INVALID_ID)
    value = parse_id(raw, missing_seq)
    if value is None:
        raise CommandError(INVALID_ID)
    return value


def parse_range_id(raw: bytes, missing_seq: int = 0) -> int:
    """streamParseIDOrReply: like parse_strict_id, but '-' is 0-0 and '+' the maximum ID."""
    if raw == b"-":
        return 0
    if raw == b"+":
        return MAX_ID
    value = parse_id(raw, missing_seq)
    if value is None:
        raise CommandError(INVALID_ID)
    return value


def parse_start_bound(raw: bytes) -> int:
    """Inclusive lower bound of a range (XRANGE, XPENDING, XAUTOCLAIM): '-', an ID, an
    incomplete `ms` (seq 0), or an exclusive '(id' (the next ID)."""
    if len(raw) > 1 and raw[0] == 0x28:  # '('
        start = incr_id(parse_strict_id(raw[1:], 0))
        if start is None:
            raise CommandError("ERR invalid start ID for the interval")
        return start
    return parse_range_id(raw, 0)


def parse_end_bound(raw: bytes) -> int:
    """Inclusive upper bound of a range: '+', an ID, an incomplete `ms` (seq max), or an
    exclusive '(id' (the previous ID)."""
    if len(raw) > 1 and raw[0] == 0x28:
        end = decr_id(parse_strict_id(raw[1:], MAX_SEQ))
        if end is None:
            raise CommandError("ERR invalid end ID for the interval")
        return end
    return parse_range_id(raw, MAX_SEQ)


def parse_xadd_id(raw: bytes) -> tuple[int, bool]:
    """XADD's explicit ID: `ms-seq`, `ms` (seq 0) or `ms-*` (seq to be generated).
    Returns (id, seq_given); with `ms-*` the id holds seq 0."""
    # Redis parses a NUL-terminated copy of at most 127 bytes and splits at the first '-'.
    body = raw.split(b"\0", 1)[0]
    dash = body.find(b"-")
    if len(raw) <= _MAX_ID_ARG_LEN and dash >= 0 and body[dash + 1 :] == b"*":
        value = parse_id(body[:dash], 0)
        if value is None:
            raise CommandError(INVALID_ID)
        return value, False
    return parse_strict_id(raw, 0), True


# -- numbers -------------------------------------------------------------------------------


def parse_count(raw: bytes) -> int:
    """COUNT of XRANGE/XREAD/XPENDING: an integer; negative counts as 0."""
    value = to_int(raw)
    if value is None:
        raise CommandError(NOT_AN_INTEGER)
    return max(value, 0)


def parse_timeout_ms(raw: bytes, now_ms: int) -> int:
    """BLOCK <milliseconds> (getTimeoutFromObjectOrReply with UNIT_MILLISECONDS); 0 means
    wait forever."""
    value = to_int(raw)
    if value is None:
        raise CommandError("ERR timeout is not an integer or out of range")
    if value < 0:
        raise CommandError("ERR timeout is negative")
    if value > 0 and value > _LLONG_MAX - now_ms:
        raise CommandError("ERR timeout is out of range")
    return value


# -- XADD / XTRIM options ------------------------------------------------------------------


def parse_add_or_trim(ctx: Session, argv: list[bytes], xadd: bool) -> AddTrimArgs:
    """Parse XADD's options up to and including its ID, or all of XTRIM's arguments."""
    args = AddTrimArgs()
    argc = len(argv)
    limit_given = False
    policy_given = False
    i = 2
    while i < argc:
        more = argc - 1 - i
        opt = argv[i]
        low = opt.lower()
        if xadd and opt == b"*":
            break
        if (low == b"maxlen" or low == b"minid") and more:
            if args.strategy != TRIM_NONE:
                raise CommandError("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
            args.approx = False
            nxt = argv[i + 1]
            if more >= 2 and nxt == b"~":
                args.approx = True
                i += 1
            elif more >= 2 and nxt == b"=":
                i += 1
            if low == b"maxlen":
                maxlen = to_int(argv[i + 1])
                if maxlen is None:
                    raise CommandError(NOT_AN_INTEGER)
                if maxlen < 0:
                    raise CommandError("ERR The MAXLEN argument must be >= 0.")
                args.maxlen = maxlen
                args.strategy = TRIM_MAXLEN
            else:
                args.minid = parse_strict_id(argv[i + 1], 0)
                args.strategy = TRIM_MINID
            i += 1
            args.threshold_pos = i
        elif low == b"limit" and more:
            limit = to_int(argv[i + 1])
            if limit is None:
                raise CommandError(NOT_AN_INTEGER)
            if limit < 0:
                raise CommandError("ERR The LIMIT argument must be >= 0.")
            args.limit = limit
            limit_given = True
            i += 1
        elif xadd and low == b"nomkstream":
            args.no_mkstream = True
        elif low in POLICY_NAMES and not policy_given:
            # Redis 8.2: once only; XADD takes a second one for the ID (the invalid-ID
            # error), XTRIM answers a syntax error (Redis 8.2.3).
            args.ref_policy = POLICY_NAMES[low]
            policy_given = True
        elif xadd and low == b"idmp" and more >= 2:
            # Redis 8.6: the next two arguments are taken verbatim, whatever they look like.
            if args.idmp_pid:
                raise CommandError(IDMP_TWICE)
            if not argv[i + 1]:
                raise CommandError("ERR IDMP requires a non-empty producer ID")
            if not argv[i + 2]:
                raise CommandError("ERR IDMP requires a non-empty idempotent ID")
            args.idmp_pid = argv[i + 1]
            args.idmp_iid = argv[i + 2]
            i += 2
        elif xadd and low == b"idmpauto" and more:
            if args.idmp_pid:
                raise CommandError(IDMP_TWICE)
            if not argv[i + 1]:
                raise CommandError("ERR IDMPAUTO requires a non-empty producer ID")
            args.idmp_pid = argv[i + 1]
            i += 1
        elif xadd:
            # Not an option: a syntax error or the ID.
            args.entry_id, args.seq_given = parse_xadd_id(opt)
            args.id_given = True
            if args.idmp_pid and not from_log(ctx):
                # The log's XADD IDMP names the ID its primary generated (idmp_ops).
                raise CommandError("ERR IDMP/IDMPAUTO can be used only with auto-generated IDs")
            break
        else:
            raise CommandError(SYNTAX_ERROR)
        i += 1
    args.id_pos = i

    if args.limit and args.strategy == TRIM_NONE:
        raise CommandError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    if not xadd and args.strategy == TRIM_NONE:
        raise CommandError("ERR syntax error, XTRIM must be called with a trimming strategy")

    if from_log(ctx):
        # The primary already rewrote `~` into an exact threshold: trim exactly, unbounded.
        args.limit = 0
    elif limit_given:
        if not args.approx:
            raise CommandError("ERR syntax error, LIMIT cannot be used without the special ~ option")
    elif args.approx:
        args.limit = default_trim_limit(ctx.node.config.stream_node_max_entries)
    else:
        args.limit = 0
    return args


def default_trim_limit(node_max_entries: int) -> int:
    """`~` trimming without LIMIT removes at most 100 nodes' worth of entries, bounded to
    [10000, 1000000] when stream-node-max-entries is 0 or huge (Redis)."""
    limit = 100 * node_max_entries
    if limit <= 0:
        return 10000
    return min(limit, 1000000)


# -- the IDS numids id ... block (XDELEX, XACKDEL, XNACK) -------------------------------------


class IdsBlockTexts:
    """The error texts of a command's IDS block: Redis words them per command."""

    __slots__ = ("bad_numids", "mismatch")

    def __init__(self, bad_numids: str, mismatch: str) -> None:
        self.bad_numids = bad_numids  # numids not an integer > 0
        self.mismatch = mismatch  # fewer IDs follow than numids says


def parse_ids_block(argv: list[bytes], i: int, texts: IdsBlockTexts) -> tuple[list[bytes], int]:
    """`IDS numids id ...` with argv[i] the IDS keyword: the raw IDs (parsed later, once the
    key is known to exist, as Redis does) and the index after them."""
    numids = to_int(argv[i + 1]) if i + 1 < len(argv) else None
    if numids is None or numids <= 0:
        raise CommandError(texts.bad_numids)
    first = i + 2
    if numids > len(argv) - first:
        raise CommandError(texts.mismatch)
    return argv[first : first + numids], first + numids


DELETE_IDS: Final = IdsBlockTexts(
    "ERR Number of IDs must be a positive integer", "ERR The `numids` parameter must match the number of arguments"
)


def parse_delete_options(argv: list[bytes], start: int) -> tuple[int, list[bytes]]:
    """XDELEX's and XACKDEL's `[KEEPREF | DELREF | ACKED] IDS numids id ...` from argv[start],
    in any order (Redis 8.2.3: a second IDS block replaces the first, a second policy or any
    other word is a syntax error, and so is a missing IDS block)."""
    policy = KEEPREF
    policy_given = False
    raw_ids: list[bytes] | None = None
    i = start
    while i < len(argv):
        low = argv[i].lower()
        if low == b"ids":
            raw_ids, i = parse_ids_block(argv, i, DELETE_IDS)
            continue
        if low in POLICY_NAMES and not policy_given:
            policy = POLICY_NAMES[low]
            policy_given = True
        else:
            raise CommandError(SYNTAX_ERROR)
        i += 1
    if raw_ids is None:
        raise CommandError(SYNTAX_ERROR)
    return policy, raw_ids


# -- XREAD / XREADGROUP options --------------------------------------------------------------


class ReadArgs:
    """XREAD/XREADGROUP options: [GROUP g c] [COUNT n] [MAXCOUNT n] [MAXSIZE n] [BLOCK ms]
    [CLAIM min-idle-time] [NOACK] STREAMS k... id...

    A plain class, not a dataclass: compiled, a dataclass's generated __init__ runs as
    interpreted Python on every XREAD."""

    __slots__ = ("timeout_ms", "count", "noack", "group", "consumer", "keys", "ids", "claim", "max_count", "max_size")

    def __init__(self) -> None:
        self.timeout_ms = -1  # -1: no BLOCK
        self.count = 0  # 0: no limit
        self.claim = -1  # Redis 8.4's CLAIM min-idle-time; -1: not given
        self.max_count = 0  # Redis 8.10's MAXCOUNT; 0: not given
        self.max_size = 0  # Redis 8.10's MAXSIZE; 0: not given
        self.noack = False
        self.group: bytes | None = None
        self.consumer = b""
        self.keys: list[bytes] = []
        self.ids: list[bytes] = []


def parse_read_args(argv: list[bytes], xreadgroup: bool, now_ms: int) -> ReadArgs:
    args = ReadArgs()
    argc = len(argv)
    streams_at = 0
    i = 1
    while i < argc:
        more = argc - i - 1
        opt = argv[i].lower()
        if opt == b"block" and more:
            i += 1
            args.timeout_ms = parse_timeout_ms(argv[i], now_ms)
        elif opt == b"count" and more:
            i += 1
            args.count = parse_count(argv[i])
        elif opt == b"streams" and more:
            streams_at = i + 1
            if (argc - streams_at) % 2:
                # Redis 7.2's text (t_stream.c xreadCommand), even though XREAD also accepts
                # 7.4's '+' (which 7.4 added to this text): clients match 7.2's.
                symbol = ">" if xreadgroup else "$"
                raise CommandError(
                    f"ERR Unbalanced '{'xreadgroup' if xreadgroup else 'xread'}' list of streams: for each "
                    f"stream key an ID or '{symbol}' must be specified."
                )
            break
        elif opt == b"group" and more >= 2:
            if not xreadgroup:
                raise CommandError("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
            args.group = argv[i + 1]
            args.consumer = argv[i + 2]
            i += 2
        elif opt == b"noack":
            if not xreadgroup:
                raise CommandError("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
            args.noack = True
        elif opt == b"claim" and more:
            if not xreadgroup:
                raise CommandError("ERR The CLAIM option is only supported by XREADGROUP. You called XREAD instead.")
            i += 1
            min_idle = to_int(argv[i])
            if min_idle is None:
                raise CommandError("ERR min-idle-time is not an integer")
            if min_idle < 0:
                raise CommandError("ERR min-idle-time must be a positive integer")
            args.claim = min_idle
        elif opt == b"maxcount" and more:
            i += 1
            args.max_count = _positive(argv[i], "ERR MAXCOUNT must be a positive integer")
        elif opt == b"maxsize" and more:
            i += 1
            args.max_size = _positive(argv[i], "ERR MAXSIZE must be a positive integer")
        else:
            raise CommandError(SYNTAX_ERROR)
        i += 1
    if not streams_at:
        raise CommandError(SYNTAX_ERROR)
    if args.max_count and args.count and args.max_count < args.count:
        raise CommandError("ERR MAXCOUNT must be greater than or equal to COUNT")
    if xreadgroup and args.group is None:
        raise CommandError("ERR Missing GROUP option for XREADGROUP")
    half = (argc - streams_at) // 2
    args.keys = argv[streams_at : streams_at + half]
    args.ids = argv[streams_at + half :]
    return args


def _positive(raw: bytes, error: str) -> int:
    value = to_int(raw)
    if value is None or value <= 0:
        raise CommandError(error)
    return value


def read_budget(args: ReadArgs) -> ReadBudget | None:
    """The MAXCOUNT/MAXSIZE budget of one run of a read (a blocked read gets a new one at
    each wake-up), None without either option."""
    if not args.max_count and not args.max_size:
        return None
    return ReadBudget(args.max_count, args.max_size)


def can_block(ctx: Session) -> bool:
    """Redis's CLIENT_DENY_BLOCKING: inside MULTI/EXEC, or replaying the log, a blocking
    read that finds nothing answers as if it timed out."""
    return not ctx.in_exec and not from_log(ctx)


def block_or_timeout(
    ctx: Session,
    keys: list[bytes],
    timeout_ms: int,
    retry: Callable[[Session], Any],
    wake_at: Callable[[Session], int | None] | None = None,
) -> Block | object:
    """Park the client on `keys` until `retry` has a reply, or reply a timeout now.
    `wake_at` (XREADGROUP CLAIM) tells when to try again even if no key is touched."""
    if timeout_ms < 0 or not can_block(ctx):
        return NULL_ARRAY
    return Block(list(keys), timeout_ms, retry, NULL_ARRAY, wake_at=wake_at)


# -- lookups and replies ---------------------------------------------------------------------


def lookup_stream(db: Database, key: bytes) -> StreamValue | None:
    """The stream at `key`, None if there is none; WRONGTYPE for another type."""
    value = db.get(key)
    if value is None or type(value) is StreamValue:
        return value
    raise CommandError(WRONGTYPE)


def propagate_all(ctx: Session, effects: list[Effect]) -> None:
    """Log a command's effects, in order."""
    if effects:
        ctx.propagate_many(effects)


def engine_error(exc: StreamError) -> CommandError:
    return CommandError(exc.message)


def entries_reply(entries: Sequence[Entry]) -> Any:
    """Entries as Redis sends them: [id, [field, value, ...]], or [id, null] for an entry
    deleted while pending.

    Arrays of bulk strings are the same bytes in RESP2 and RESP3, so entries are encoded
    here in one pass (XRANGE/XREAD/XREADGROUP replies are mostly this); only a deleted
    entry's null differs between the protocols and keeps the generic value form."""
    parts = [b"*%d\r\n" % len(entries)]
    append = parts.append
    for entry_id, fields in entries:
        if fields is None:
            return [[format_id(i), f if f is not None else NULL_ARRAY] for i, f in entries]
        raw_id = format_id(entry_id)
        append(b"*2\r\n$%d\r\n%s\r\n*%d\r\n" % (len(raw_id), raw_id, len(fields)))
        for item in fields:
            append(b"$%d\r\n%s\r\n" % (len(item), item))
    return Raw(b"".join(parts))


def claimed_entries_reply(entries: list[list[Any]]) -> Raw:
    """XREADGROUP CLAIM's entries, [id, [field, value, ...], idle, deliveries] each, encoded in
    one pass (the same bytes in RESP2 and RESP3: arrays, bulk strings and integers)."""
    parts = [b"*%d\r\n" % len(entries)]
    append = parts.append
    for raw_id, fields, idle, deliveries in entries:
        append(b"*4\r\n$%d\r\n%s\r\n*%d\r\n" % (len(raw_id), raw_id, len(fields)))
        for item in fields:
            append(b"$%d\r\n%s\r\n" % (len(item), item))
        append(b":%d\r\n:%d\r\n" % (idle, deliveries))
    return Raw(b"".join(parts))


def range_reply(value: StreamValue, start: int, end: int, count: int, rev: bool, max_bytes: int = 0) -> Raw:
    """entries_reply(value.range(start, end, count, rev)), encoded straight from the packed
    nodes (Stream.range_resp): XRANGE, XREVRANGE and XREAD answer through it. A reply that
    would pass `max_bytes` (the room left under the client's hard output limit) raises
    OutputLimitReached as soon as it does, before it is built whole."""
    return counted_range_reply(value, start, end, count, rev, max_bytes)[0]


def counted_range_reply(
    value: StreamValue, start: int, end: int, count: int, rev: bool, max_bytes: int = 0
) -> tuple[Raw, int]:
    """range_reply and the number of entries in it."""
    out: list[Any] = [b""]
    n = value.range_resp(start, end, count, rev, out, None, None, max_bytes)
    if n < 0:
        raise OutputLimitReached
    return encoded_entries_reply(out, n), n


def encoded_entries_reply(out: list[Any], n: int) -> Raw:
    """The reply of `n` entries Stream.range_resp wrote to out[1:]; out[0] is kept free for
    the array header, known only once they are written."""
    out[0] = b"*%d\r\n" % n
    return Raw(b"".join(out))


def entry_reply(entry_id: int, fields: list[bytes]) -> Any:
    """One entry, [id, [field, value, ...]] (XINFO STREAM's first/last entry, XCLAIM)."""
    return [format_id(entry_id), fields]


def keyed_reply(ctx: Session, served: list[tuple[bytes, Any]]) -> Any:
    """XREAD/XREADGROUP's reply: RESP2 [[key, entries], ...], RESP3 a map key -> entries."""
    if ctx.proto == 2:
        return [[key, entries] for key, entries in served]
    keys = [key for key, _ in served]
    if len(set(keys)) == len(keys):
        return dict(served)
    # The same key twice (STREAMS s s 0 0) is two map entries in Redis; a dict would merge
    # them, so each key becomes a distinct pre-encoded bulk string.
    return {Raw(b"$%d\r\n%s\r\n" % (len(k), k)): v for k, v in served}


def bytes_text(raw: bytes) -> str:
    """A key or name inside an error text."""
    return raw.decode("utf-8", "replace")
