"""Stream entry commands: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XSETID and XREAD
(with BLOCK). Consumer groups are in `stream_groups`, XINFO in `stream_info`."""

from __future__ import annotations

from typing import Any

from node.commands.args import NOT_AN_INTEGER, SYNTAX_ERROR, to_int
from node.commands.context import Session
from node.commands.reply import NULL_ARRAY, OK, CommandError, OutputLimitReached
from node.commands.stream_args import (
    ReadArgs,
    block_or_timeout,
    counted_range_reply,
    engine_error,
    entries_reply,
    keyed_reply,
    lookup_stream,
    parse_add_or_trim,
    parse_end_bound,
    parse_read_args,
    parse_start_bound,
    parse_strict_id,
    propagate_all,
    range_reply,
    read_budget,
)
from node.commands.stream_idmp import new_stream_effects, xadd_idmp
from node.commands.table import command
from node.engine import stream_append, stream_ops
from node.engine.ids import MAX_ID, format_id, format_parts, parse_id_parts
from node.engine.keyspace import WRONGTYPE
from node.engine.stream_append import open_stream
from node.engine.stream_ops import StreamError
from node.engine.stream_value import StreamValue


@command(
    "xadd", -5, "write denyoom fast", 1, 1, 1, group="stream",
    summary="Appends a new message to a stream. Creates the key if it doesn't exist.",
)  # fmt: skip
def xadd(ctx: Session, argv: list[bytes]) -> Any:
    if argv[2] == b"*":
        # The hot path: XADD key * field value ..., no option to parse.
        return _xadd_plain(ctx, argv, -1, 0)
    ms, seq = parse_id_parts(argv[2])
    if ms >= 0:
        # A complete `ms-seq` ID and no option: every XADD a replica or the AOF applies.
        return _xadd_plain(ctx, argv, ms, seq)

    args = parse_add_or_trim(ctx, argv, True)
    n_fields = len(argv) - args.id_pos - 1
    if n_fields < 2 or n_fields % 2:
        raise CommandError("ERR wrong number of arguments for 'xadd' command")
    if args.id_given and args.seq_given and args.entry_id == 0:
        raise CommandError("ERR The ID specified in XADD must be greater than 0-0")
    db = ctx.db
    key = argv[1]
    value, created = open_stream(db, key)
    if value is None:
        raise CommandError(WRONGTYPE)
    if created and args.no_mkstream:
        return None
    if args.idmp_pid:
        reply = xadd_idmp(ctx, argv, args, value, created)
        if created:
            db[key] = value
        return reply
    config = ctx.node.config
    settings = new_stream_effects(ctx, key, value) if created else []
    try:
        entry_id, effect = stream_append.xadd(
            value, argv, args, ctx.now_ms(), config.stream_node_max_entries, config.stream_node_max_bytes
        )
    except StreamError as exc:
        raise engine_error(exc) from None
    if created:
        db[key] = value
    ctx.propagate_argv(effect)
    propagate_all(ctx, settings)
    return format_id(entry_id)


def _xadd_plain(ctx: Session, argv: list[bytes], ms: int, seq: int) -> Any:
    """XADD without options: `*` when ms < 0, else the complete ID ms-seq."""
    if len(argv) % 2 == 0:
        raise CommandError("ERR wrong number of arguments for 'xadd' command")
    if ms == 0 and seq == 0:
        raise CommandError("ERR The ID specified in XADD must be greater than 0-0")
    db = ctx.db
    key = argv[1]
    value, created = open_stream(db, key)
    if value is None:
        raise CommandError(WRONGTYPE)
    config = ctx.node.config
    try:
        effect = stream_append.xadd_plain(
            value, argv, ms, seq, ctx.now_ms() if ms < 0 else 0,
            config.stream_node_max_entries, config.stream_node_max_bytes,
        )
    except StreamError as exc:
        raise engine_error(exc) from None
    if created:
        # Stored only once the entry is in: a refused XADD leaves no empty key behind.
        db[key] = value
        ctx.propagate_argv(effect)
        propagate_all(ctx, new_stream_effects(ctx, key, value))
    else:
        ctx.propagate_argv(effect)
    # The reply is the ID in canonical form (the client's text may have leading zeros).
    return effect[2] if ms < 0 else format_parts(ms, seq)


def _range(ctx: Session, argv: list[bytes], rev: bool) -> Any:
    start = parse_start_bound(argv[3] if rev else argv[2])
    end = parse_end_bound(argv[2] if rev else argv[3])
    count = -1  # no COUNT
    j = 4
    while j < len(argv):
        if argv[j].lower() == b"count" and j + 1 < len(argv):
            parsed = to_int(argv[j + 1])
            if parsed is None:
                raise CommandError(NOT_AN_INTEGER)
            count = max(parsed, 0)
            j += 2
        else:
            raise CommandError(SYNTAX_ERROR)
    value = lookup_stream(ctx.db, argv[1])
    if value is None:
        return []
    if count == 0:
        return NULL_ARRAY
    # Inside EXEC the transaction's replies are not cut short: every queued command runs.
    room = 0 if ctx.in_exec else ctx.output_room
    return range_reply(value, start, end, max(count, 0), rev, room)


@command("xrange", -4, "readonly", 1, 1, 1, group="stream",
         summary="Returns the messages from a stream within a range of IDs.")
def xrange(ctx: Session, argv: list[bytes]) -> Any:
    return _range(ctx, argv, False)


@command("xrevrange", -4, "readonly", 1, 1, 1, group="stream",
         summary="Returns the messages from a stream within a range of IDs in reverse order.")
def xrevrange(ctx: Session, argv: list[bytes]) -> Any:
    return _range(ctx, argv, True)


@command("xlen", 2, "readonly fast", 1, 1, 1, group="stream", summary="Return the number of messages in a stream.")
def xlen(ctx: Session, argv: list[bytes]) -> Any:
    value = lookup_stream(ctx.db, argv[1])
    return value.length if value is not None else 0


@command("xdel", -3, "write fast", 1, 1, 1, group="stream",
         summary="Returns the number of messages after removing them from a stream.")
def xdel(ctx: Session, argv: list[bytes]) -> Any:
    value = lookup_stream(ctx.db, argv[1])
    if value is None:
        return 0
    # Parse every ID first: the command runs all or nothing.
    ids = [parse_strict_id(raw) for raw in argv[2:]]
    deleted, effects = stream_ops.xdel(value, argv, ids)
    propagate_all(ctx, effects)
    return deleted


@command("xtrim", -4, "write", 1, 1, 1, group="stream", summary="Deletes messages from the beginning of a stream.")
def xtrim(ctx: Session, argv: list[bytes]) -> Any:
    args = parse_add_or_trim(ctx, argv, False)
    value = lookup_stream(ctx.db, argv[1])
    if value is None:
        return 0
    removed, effects = stream_ops.xtrim(value, argv, args)
    propagate_all(ctx, effects)
    return removed


@command("xsetid", -3, "write denyoom fast", 1, 1, 1, group="stream",
         summary="An internal command for replicating stream values.")
def xsetid(ctx: Session, argv: list[bytes]) -> Any:
    last_id = parse_strict_id(argv[2])
    entries_added = -1
    max_deleted = 0
    i = 3
    while i < len(argv):
        more = len(argv) - 1 - i
        opt = argv[i].lower()
        if opt == b"entriesadded" and more:
            parsed = to_int(argv[i + 1])
            if parsed is None:
                raise CommandError(NOT_AN_INTEGER)
            if parsed < 0:
                raise CommandError("ERR entries_added must be positive")
            entries_added = parsed
        elif opt == b"maxdeletedid" and more:
            max_deleted = parse_strict_id(argv[i + 1])
            if last_id < max_deleted:
                raise CommandError("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
        else:
            raise CommandError(SYNTAX_ERROR)
        i += 2
    value = lookup_stream(ctx.db, argv[1])
    if value is None:
        raise CommandError("ERR no such key")
    try:
        effects = stream_ops.xsetid(value, argv, last_id, entries_added, max_deleted)
    except StreamError as exc:
        raise engine_error(exc) from None
    propagate_all(ctx, effects)
    return OK


@command("xread", -4, "readonly blocking", group="stream",
         summary="Returns messages from multiple streams with IDs greater than the ones requested. "
                 "Blocks until a message is available otherwise.")
def xread(ctx: Session, argv: list[bytes]) -> Any:
    args = parse_read_args(argv, False, ctx.now_ms())
    db = ctx.db
    after: list[int] = []
    plus_at: list[int] = []  # positions of '+' IDs, resolved again on every wake-up
    for key, raw in zip(args.keys, args.ids):
        value = lookup_stream(db, key)
        if raw == b"$":
            # Resolved now, so a blocked read waits for entries added after this moment.
            after.append(value.last_id if value is not None else 0)
        elif raw == b"+":
            plus_at.append(len(after))
            after.append(_before_last_entry(value))
        elif raw == b">":
            raise CommandError(
                "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
            )
        else:
            after.append(parse_strict_id(raw))
    reply = _serve_xread(ctx, args.keys, after, args, False)
    if reply is not None:
        return reply
    return block_or_timeout(ctx, args.keys, args.timeout_ms, _XreadRetry(args, after, plus_at))


class _XreadRetry:
    """A blocked XREAD's wake-up. A class, not a closure: compiled, a nested function and its
    environment reference each other, and a reference cycle per blocked read made the cyclic
    GC stall the loop for ~10 ms every few seconds under a blocking-read load."""

    def __init__(self, args: ReadArgs, after: list[int], plus_at: list[int]) -> None:
        self.args = args
        self.keys = args.keys
        self.after = after
        self.plus_at = plus_at

    def __call__(self, session: Session) -> Any:
        # Redis 7.4 re-executes the command on wake-up, rewriting only '$': a '+' reads the
        # stream's last entry as it is now, even when several arrived at once.
        after = self.after
        for i in self.plus_at:
            value = session.db.get(self.keys[i])
            after[i] = _before_last_entry(value if type(value) is StreamValue else None)
        return _serve_xread(session, self.keys, after, self.args, True)


def _before_last_entry(value: StreamValue | None) -> int:
    """XREAD '+' (Redis 7.4): the last entry itself is read, so start just before it."""
    return value.last_live_id() - 1 if value is not None and value.length else 0


def _serve_xread(ctx: Session, keys: list[bytes], after: list[int], args: ReadArgs, woken: bool) -> Any:
    """The streams that have entries past their ID; None when none has.

    A woken read runs again as Redis 7.2 re-executes the command, except that a key that
    no longer holds a stream is not a reason to wake up: it answers WRONGTYPE only if
    another key has something to serve (as the re-executed command would). MAXCOUNT and
    MAXSIZE (Redis 8.10) bound the whole reply: streams are served in the order given
    until the budget is spent."""
    served: list[tuple[bytes, Any]] = []
    db = ctx.db
    wrong_type = False
    count = args.count
    budget = read_budget(args)
    # Like XRANGE's, the reply stops as soon as it would pass the client's hard output limit,
    # counted over every key's entries (not inside EXEC, where every queued command runs).
    room = 0 if ctx.in_exec else ctx.output_room
    for key, last in zip(keys, after):
        value = db.get(key)
        if value is None:
            continue
        if type(value) is not StreamValue:
            if not woken:
                raise CommandError(WRONGTYPE)
            wrong_type = True
            continue
        start = stream_ops.read_start(value, last)
        if start is not None and budget is not None:
            if budget.exhausted():
                break
            if budget.bytes_left:
                taken = [e for e in value.range(start, MAX_ID, budget.limit(count)) if budget.take(list(e))]
                if taken:
                    served.append((key, entries_reply(taken)))
                continue
            entries, n = counted_range_reply(value, start, MAX_ID, budget.limit(count), False, room)
            budget.emitted += n
            served.append((key, entries))
            continue
        if start is not None:
            entries = range_reply(value, start, MAX_ID, count, False, room)
            served.append((key, entries))
            if room:
                room -= len(entries.data)
                if room <= 0:
                    raise OutputLimitReached
    if not served:
        return None
    if wrong_type:
        raise CommandError(WRONGTYPE)
    return keyed_reply(ctx, served)
