"""Consumer group commands: XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER,
HELP), XREADGROUP (with BLOCK), XACK, XPENDING, XCLAIM and XAUTOCLAIM."""

from __future__ import annotations

from typing import Any, Final

from node.commands.args import NOT_AN_INTEGER, SYNTAX_ERROR, to_int
from node.commands.context import Session
from node.commands.reply import NULL_ARRAY, OK, CommandError
from node.commands.stream_args import (
    ReadArgs,
    block_or_timeout,
    bytes_text,
    claimed_entries_reply,
    encoded_entries_reply,
    engine_error,
    entries_reply,
    from_log,
    keyed_reply,
    lookup_stream,
    parse_end_bound,
    parse_range_id,
    parse_read_args,
    parse_start_bound,
    parse_strict_id,
    propagate_all,
    read_budget,
)
from node.commands.stream_dead_letters import mover as dead_letter_mover
from node.commands.stream_idmp import new_stream_effects
from node.commands.table import command, container, subcommand
from node.engine import stream_ops
from node.engine.groups import INVALID_ENTRIES_READ, UNOWNED, ConsumerGroup, pending_counts
from node.engine.ids import MAX_ID, format_id, incr_id, parse_id
from node.engine.stream_ops import ClaimOptions, Effect, StreamError
from node.engine.stream_value import StreamValue

_LONG_MAX: Final = (1 << 63) - 1


def _nogroup(key: bytes, group: bytes, where: str = "") -> CommandError:
    return CommandError(f"NOGROUP No such key '{bytes_text(key)}' or consumer group '{bytes_text(group)}'{where}")


def _group_of(ctx: Session, key: bytes, group_name: bytes) -> tuple[StreamValue, ConsumerGroup]:
    """The stream and group that XCLAIM/XAUTOCLAIM/XPENDING act on, or NOGROUP."""
    value = lookup_stream(ctx.db, key)
    group = value.group(group_name) if value is not None else None
    if value is None or group is None:
        raise _nogroup(key, group_name)
    return value, group


# ---------------------------------------------------------------------------------------
# XGROUP
# ---------------------------------------------------------------------------------------

container("xgroup", -2, group="stream", summary="A container for consumer groups commands.")

_XGROUP_HELP: Final = [
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
]


def _subcommand_syntax_error(argv: list[bytes]) -> CommandError:
    return CommandError(
        "ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP."
        % (bytes_text(argv[1])[:128], bytes_text(argv[0]).upper())
    )


class _XGroupTarget:
    """What xgroupCommand resolves before dispatching: the stream, the group, options."""

    __slots__ = ("entries_read", "group", "mkstream", "value")

    def __init__(self) -> None:
        self.value: StreamValue | None = None
        self.group: ConsumerGroup | None = None
        self.mkstream = False
        self.entries_read = INVALID_ENTRIES_READ


def _xgroup_target(ctx: Session, argv: list[bytes], needs_group: bool) -> _XGroupTarget:
    """xgroupCommand's common prologue: CREATE/SETID options, then the key (which must
    exist unless MKSTREAM) and, for the subcommands that act on one, the group."""
    t = _XGroupTarget()
    sub = argv[1].lower()
    create = sub == b"create"
    setid = sub == b"setid"
    i = 5
    while i < len(argv):
        opt = argv[i].lower()
        if create and opt == b"mkstream":
            t.mkstream = True
            i += 1
        elif (create or setid) and opt == b"entriesread" and i + 1 < len(argv):
            n = to_int(argv[i + 1])
            if n is None:
                raise CommandError(NOT_AN_INTEGER)
            if n < 0 and n != INVALID_ENTRIES_READ:
                raise CommandError("ERR value for ENTRIESREAD must be positive or -1")
            t.entries_read = n
            i += 2
        else:
            raise _subcommand_syntax_error(argv)
    t.value = lookup_stream(ctx.db, argv[2])
    if not t.mkstream:
        if t.value is None:
            raise CommandError(
                "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want "
                "to use the MKSTREAM option to create an empty stream automatically."
            )
        t.group = t.value.group(argv[3])
        if t.group is None and needs_group:
            raise CommandError(
                f"NOGROUP No such consumer group '{bytes_text(argv[3])}' for key name '{bytes_text(argv[2])}'"
            )
    return t


@subcommand("xgroup", "create", -5, "write denyoom", 2, 2, 1, summary="Creates a consumer group.")
def xgroup_create(ctx: Session, argv: list[bytes]) -> Any:
    t = _xgroup_target(ctx, argv, False)
    if len(argv) > 8:
        raise _subcommand_syntax_error(argv)
    value = t.value
    if argv[4] == b"$":
        last_id = value.last_id if value is not None else 0
    else:
        last_id = parse_strict_id(argv[4])
    settings: list[Effect] = []
    if value is None:
        value = ctx.db[argv[2]] = StreamValue()
        settings = new_stream_effects(ctx, argv[2], value)
    try:
        effects = stream_ops.group_create(value, argv, argv[3], last_id, t.entries_read)
    except StreamError as exc:
        raise engine_error(exc) from None
    propagate_all(ctx, effects)
    propagate_all(ctx, settings)
    return OK


@subcommand("xgroup", "setid", -5, "write", 2, 2, 1, summary="Sets the last-delivered ID of a consumer group.")
def xgroup_setid(ctx: Session, argv: list[bytes]) -> Any:
    t = _xgroup_target(ctx, argv, True)
    if len(argv) not in (5, 7):
        raise _subcommand_syntax_error(argv)
    assert t.value is not None and t.group is not None
    last_id = t.value.last_id if argv[4] == b"$" else parse_range_id(argv[4])
    propagate_all(ctx, stream_ops.group_setid(t.value, t.group, argv, last_id, t.entries_read))
    return OK


@subcommand("xgroup", "destroy", 4, "write", 2, 2, 1, summary="Destroys a consumer group.")
def xgroup_destroy(ctx: Session, argv: list[bytes]) -> Any:
    t = _xgroup_target(ctx, argv, False)
    assert t.value is not None
    destroyed, effects = stream_ops.group_destroy(t.value, argv, argv[3])
    # The effect touches the key, so clients blocked in XREADGROUP on this group wake up
    # and get NOGROUP.
    propagate_all(ctx, effects)
    return 1 if destroyed else 0


@subcommand("xgroup", "createconsumer", 5, "write denyoom", 2, 2, 1, summary="Creates a consumer in a consumer group.")
def xgroup_createconsumer(ctx: Session, argv: list[bytes]) -> Any:
    t = _xgroup_target(ctx, argv, True)
    assert t.group is not None
    created, effects = stream_ops.group_create_consumer(t.group, argv, argv[4], ctx.now_ms())
    propagate_all(ctx, effects)
    return 1 if created else 0


@subcommand("xgroup", "delconsumer", 5, "write", 2, 2, 1, summary="Deletes a consumer from a consumer group.")
def xgroup_delconsumer(ctx: Session, argv: list[bytes]) -> Any:
    t = _xgroup_target(ctx, argv, True)
    assert t.group is not None
    pending, effects = stream_ops.group_delete_consumer(t.group, argv, argv[4])
    propagate_all(ctx, effects)
    return pending


@subcommand("xgroup", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def xgroup_help(ctx: Session, argv: list[bytes]) -> Any:
    return list(_XGROUP_HELP)


# ---------------------------------------------------------------------------------------
# XREADGROUP
# ---------------------------------------------------------------------------------------


@command("xreadgroup", -7, "write blocking", group="stream",
         summary="Returns new or historical messages from a stream for a consumer in a group. "
                 "Blocks until a message is available otherwise.")
def xreadgroup(ctx: Session, argv: list[bytes]) -> Any:
    args = parse_read_args(argv, True, ctx.now_ms())
    group_name = args.group
    assert group_name is not None
    reply = _serve_group(ctx, args, group_name)
    if reply is not None:
        return reply
    retry = _XreadgroupRetry(args, group_name)
    return block_or_timeout(ctx, args.keys, args.timeout_ms, retry, retry.wake_at if args.claim >= 0 else None)


class _XreadgroupRetry:
    """A blocked XREADGROUP's wake-up; a class rather than a closure for the reason given at
    streams._XreadRetry (no reference cycle per blocked read)."""

    def __init__(self, args: ReadArgs, group_name: bytes) -> None:
        self.args = args
        self.group_name = group_name

    def __call__(self, session: Session) -> Any:
        # Only '>' reads block. When every key still holds its group and none has an entry
        # past the group's last ID (or, with CLAIM, a claimable pending entry), there is
        # nothing to serve: keep waiting without re-running (a write wakes every reader of
        # the group, but only the first one gets the new entries).
        args = self.args
        group_name = self.group_name
        db = session.db
        now = session.now_ms()
        for key in args.keys:
            value = db.get(key)
            if type(value) is not StreamValue:
                break
            group = value.group(group_name)
            if group is None or (value.length and value.last_live_id() > group.last_id):
                break
            if args.claim >= 0 and group.idle_entries(now, args.claim, 1):
                break
        else:
            return None
        # Redis 7.2 re-executes the command: a deleted key or destroyed group is NOGROUP,
        # a key of another type WRONGTYPE.
        return _serve_group(session, args, group_name)

    def wake_at(self, session: Session) -> int | None:
        """CLAIM: when the first owned pending entry of any of the keys becomes claimable."""
        earliest: int | None = None
        for key in self.args.keys:
            value = session.db.get(key)
            group = value.group(self.group_name) if type(value) is StreamValue else None
            at = group.next_claimable_at(self.args.claim) if group is not None else None
            if at is not None and (earliest is None or at < earliest):
                earliest = at
        return earliest


def _serve_group(ctx: Session, args: ReadArgs, group_name: bytes) -> Any:
    db = ctx.db
    keys = args.keys
    targets: list[tuple[StreamValue, ConsumerGroup, int | None]] = []
    for key, raw in zip(keys, args.ids):
        value = lookup_stream(db, key)
        group = value.group(group_name) if value is not None else None
        if value is None or group is None:
            raise _nogroup(key, group_name, " in XREADGROUP with GROUP option")
        if raw == b">":
            targets.append((value, group, None))
        elif raw == b"$" or raw == b"+":
            # Redis 7.4 (which gave XREAD its '+') refuses both in XREADGROUP with this text.
            symbol = raw.decode()
            raise CommandError(
                f"ERR The {symbol} ID is meaningless in the context of XREADGROUP: you want to read the history of "
                f"this consumer by specifying a proper ID, or use the > ID to get new messages. The {symbol} ID "
                "would just return an empty result set."
            )
        else:
            start = parse_strict_id(raw)
            # Redis marks '>' with the maximum ID, so that ID given explicitly means '>' too.
            targets.append((value, group, start if start != MAX_ID else None))
    now = ctx.now_ms()
    effects: list[Effect] = []
    served: list[tuple[bytes, Any]] = []
    budget = read_budget(args)
    consumer_name = args.consumer
    for key, (value, group, after) in zip(keys, targets):
        count = args.count
        if budget is not None:
            if budget.exhausted():
                break
            count = budget.limit(count)
        if after is None and args.claim >= 0:
            # Redis 8.4: CLAIM applies to '>' reads only.
            claimed = stream_ops.read_group_claim(
                value, key, group_name, group, consumer_name, count, args.noack, args.claim, now, effects, budget,
                dead_letter_mover(ctx, key, group_name, value, group),
            )
            if claimed is not None:
                served.append((key, claimed_entries_reply(claimed)))
            continue
        if after is None and budget is not None and budget.bytes_left:
            # MAXSIZE: find how many new entries fit before delivering any of them.
            count = _fitting_new_entries(value, group, count, budget)
            if not count:
                continue
        elif after is None and budget is not None:
            budget.emitted += _new_entries_count(value, group, count)
        out: list[Any] = [b""]
        result = stream_ops.read_group(
            value, key, group_name, group, consumer_name, after, count, args.noack, now, effects, out, budget
        )
        if isinstance(result, int):
            served.append((key, encoded_entries_reply(out, result)))
        elif result is not None:
            served.append((key, entries_reply(result)))
    propagate_all(ctx, effects)
    if not served:
        return None
    return keyed_reply(ctx, served)


def _new_entries_count(value: StreamValue, group: ConsumerGroup, count: int) -> int:
    """How many entries a '>' read with this COUNT will deliver (MAXCOUNT's bookkeeping)."""
    start = incr_id(group.last_id)
    if start is None or not value.length:
        return 0
    return len(value.range(start, MAX_ID, count))


def _fitting_new_entries(value: StreamValue, group: ConsumerGroup, count: int, budget: stream_ops.ReadBudget) -> int:
    """How many of the entries a '>' read would deliver fit in the budget (counted in): a
    skipped entry is neither sent nor made pending (Redis 8.10)."""
    start = incr_id(group.last_id)
    if start is None or not value.length:
        return 0
    n = 0
    for entry_id, fields in value.range(start, MAX_ID, count):
        if not budget.take([format_id(entry_id), fields]):
            break
        n += 1
    return n


# ---------------------------------------------------------------------------------------
# XACK, XPENDING
# ---------------------------------------------------------------------------------------


@command("xack", -4, "write fast", 1, 1, 1, group="stream",
         summary="Returns the number of messages that were successfully acknowledged by the consumer group member "
                 "of a stream.")
def xack(ctx: Session, argv: list[bytes]) -> Any:
    value = lookup_stream(ctx.db, argv[1])
    group = value.group(argv[2]) if value is not None else None
    if group is None:
        return 0
    ids = [parse_strict_id(raw) for raw in argv[3:]]
    acked, effects = stream_ops.xack(group, argv, ids)
    propagate_all(ctx, effects)
    return acked


@command("xpending", -3, "readonly", 1, 1, 1, group="stream",
         summary="Returns the information and entries from a stream consumer group's pending entries list.")
def xpending(ctx: Session, argv: list[bytes]) -> Any:
    argc = len(argv)
    if argc != 3 and not 6 <= argc <= 9:
        raise CommandError(SYNTAX_ERROR)
    min_idle = 0
    count = 0
    start = end = 0
    consumer_name: bytes | None = None
    if argc >= 6:
        at = 3
        if argv[3].lower() == b"idle":
            parsed = to_int(argv[4])
            if parsed is None:
                raise CommandError(NOT_AN_INTEGER)
            min_idle = parsed
            if argc < 8:
                raise CommandError(SYNTAX_ERROR)
            at = 5
        parsed = to_int(argv[at + 2])
        if parsed is None:
            raise CommandError(NOT_AN_INTEGER)
        count = max(parsed, 0)
        start = parse_start_bound(argv[at])
        end = parse_end_bound(argv[at + 1])
        if at + 3 < argc:
            consumer_name = argv[at + 3]
    value, group = _group_of(ctx, argv[1], argv[2])

    if argc == 3:
        if not group.pel:
            return [0, None, None, NULL_ARRAY]
        return [
            len(group.pel),
            format_id(group.first_pending()),
            format_id(group.last_pending()),
            [[name, b"%d" % n] for name, n in pending_counts(group)],
        ]

    if consumer_name is not None:
        consumer = group.consumer(consumer_name)
        if consumer is None:
            return []
        ids = group.owned(consumer, start, end)
    else:
        ids = group.pending_range(start, end)
    now = ctx.now_ms()
    out: list[list[Any]] = []
    pel = group.pel
    for entry_id in ids:
        if len(out) >= count:
            break
        delivered, deliveries, owner = pel[entry_id]
        idle = now - delivered
        if min_idle and idle < min_idle:
            continue
        if owner is UNOWNED:
            # Redis 8.8: a NACKed entry shows no consumer and idle time -1 (its delivery
            # time is 0).
            out.append([format_id(entry_id), b"", -1, deliveries])
        else:
            out.append([format_id(entry_id), owner, max(idle, 0), deliveries])
    return out


# ---------------------------------------------------------------------------------------
# XCLAIM, XAUTOCLAIM
# ---------------------------------------------------------------------------------------


def _claimed_reply(value: StreamValue, ids: list[int], justid: bool) -> Any:
    if justid:
        return [format_id(i) for i in ids]
    # Only entries that exist are claimed, so every one has its fields.
    return entries_reply([(i, value.get(i)) for i in ids])


@command("xclaim", -6, "write fast", 1, 1, 1, group="stream",
         summary="Changes, or acquires, ownership of a message in a consumer group, as if the message was "
                 "delivered a consumer group member.")
def xclaim(ctx: Session, argv: list[bytes]) -> Any:
    value, group = _group_of(ctx, argv[1], argv[2])
    min_idle = to_int(argv[4])
    if min_idle is None:
        raise CommandError("ERR Invalid min-idle-time argument for XCLAIM")
    now = ctx.now_ms()
    opts = ClaimOptions(min_idle=max(min_idle, 0))
    ids: list[int] = []
    j = 5
    while j < len(argv):
        raw = argv[j]
        entry_id = None if raw == b"-" or raw == b"+" else parse_id(raw, 0)
        if entry_id is None:
            break  # not an ID: the options start here
        ids.append(entry_id)
        j += 1
    while j < len(argv):
        more = len(argv) - 1 - j
        opt = argv[j].lower()
        if opt == b"force":
            opts.force = True
        elif opt == b"justid":
            opts.justid = True
        elif opt == b"idle" and more:
            j += 1
            idle = to_int(argv[j])
            if idle is None:
                raise CommandError("ERR Invalid IDLE option argument for XCLAIM")
            opts.delivery_time = now - idle
        elif opt == b"time" and more:
            j += 1
            at = to_int(argv[j])
            if at is None:
                raise CommandError("ERR Invalid TIME option argument for XCLAIM")
            opts.delivery_time = at
        elif opt == b"retrycount" and more:
            j += 1
            retries = to_int(argv[j])
            if retries is None:
                raise CommandError("ERR Invalid RETRYCOUNT option argument for XCLAIM")
            opts.retry_count = retries
        elif opt == b"lastid" and more:
            j += 1
            opts.last_id = parse_strict_id(argv[j])
        else:
            raise CommandError(f"ERR Unrecognized XCLAIM option '{bytes_text(argv[j])}'")
        j += 1
    claimed, effects = stream_ops.xclaim(
        value, argv[1], argv[2], group, argv[3], ids, opts, now, trust_time=from_log(ctx),
        mover=dead_letter_mover(ctx, argv[1], argv[2], value, group),
    )
    propagate_all(ctx, effects)
    return _claimed_reply(value, claimed, opts.justid)


@command("xautoclaim", -6, "write fast", 1, 1, 1, group="stream",
         summary="Changes, or acquires, ownership of messages in a consumer group, as if the messages were "
                 "delivered to as consumer group member.")
def xautoclaim(ctx: Session, argv: list[bytes]) -> Any:
    min_idle = to_int(argv[4])
    if min_idle is None:
        raise CommandError("ERR Invalid min-idle-time argument for XAUTOCLAIM")
    start = parse_start_bound(argv[5])
    count = 100
    justid = False
    # COUNT is capped so that Redis's scan budget (10 * COUNT) cannot overflow.
    max_count = _LONG_MAX // 16
    j = 6
    while j < len(argv):
        more = len(argv) - 1 - j
        opt = argv[j].lower()
        if opt == b"count" and more:
            parsed = to_int(argv[j + 1])
            if parsed is None or not 1 <= parsed <= max_count:
                raise CommandError("ERR COUNT must be > 0")
            count = parsed
            j += 1
        elif opt == b"justid":
            justid = True
        else:
            raise CommandError(SYNTAX_ERROR)
        j += 1
    value, group = _group_of(ctx, argv[1], argv[2])
    cursor, claimed, deleted, effects = stream_ops.xautoclaim(
        value, argv[1], argv[2], group, argv[3], max(min_idle, 0), start, count, justid, ctx.now_ms(),
        dead_letter_mover(ctx, argv[1], argv[2], value, group),
    )
    propagate_all(ctx, effects)
    return [format_id(cursor), _claimed_reply(value, claimed, justid), [format_id(i) for i in deleted]]

