"""The log's XADDs (`XADD key ms-seq field value ...`: the complete ID, no option) appended
straight to their streams: no dispatcher, no reply, no effect logged. This is most of what a
replica applies and an AOF load replays.

Blocks of them (`logged_xadd_block`) go stream by stream, each stream's run through the
engine's `append_logged_run` (node/engine/stream_append.py: in C from the log's bytes when
built); a single one parsed into an argv is a run of one (`append_logged_xadd`). What the
engine does not take (another form, a MULTI in progress, an XADD that would fail) is
refused having changed nothing: the caller (`node.log.applier`) runs it the ordinary way,
which reports its error. Either way the node learns of the appends one way, `_appended`:
`dirty`, WATCH, blocked readers and committed reads see them as of the same XADDs
propagated (a replica's log drops them, `applying_primary_units`: it records the primary's bytes).
"""

from __future__ import annotations

from collections.abc import Callable

from node.commands.context import Session
from node.engine.stream_append import (
    append_entry,
    append_logged_run,
    logged_id,
    open_stream,
    position_at,
    run_length,
)
from node.engine.stream_ops import StreamError
from node.log.scan import command_at

# Runs the command starting at data[pos] the ordinary way.
OneCommand = Callable[[bytes, int], None]


def append_logged_groups(ctx: Session, data: bytes, groups: list[tuple[bytes, bytes]], one: OneCommand) -> int:
    """Appends a block of logged XADDs found by `logged_xadd_block` in `data`, outside a
    MULTI, stream by stream (XADDs to different streams commute), each one the engine
    refuses by `one(data, its position)`. Returns how many went in without the dispatcher."""
    config = ctx.node.config
    direct = 0
    for key, positions in groups:
        count = run_length(positions)
        index = 0
        while index < count:
            db = ctx.db
            value, created = open_stream(db, key)
            if value is not None:
                before = value.last_id
                index, appended = append_logged_run(
                    value, key, data, positions, index, config.stream_node_max_entries,
                    config.stream_node_max_bytes, command_at,
                )
                if appended:
                    if created:
                        db[key] = value
                    direct += appended
                    _appended(ctx, key, appended, before)
                if index == count:
                    break
            one(data, position_at(positions, index))
            index += 1
    return direct


def group_sizes(groups: list[tuple[bytes, bytes]]) -> int:
    """How many XADDs the groups of a block hold."""
    return sum(run_length(positions) for _, positions in groups)


def append_logged_xadd(ctx: Session, argv: list[bytes]) -> bool:
    """Appends an XADD in the log's form, outside a MULTI, straight to its stream (a quarter
    cheaper than the dispatcher). Returns False, having changed nothing, for any other
    command or form and for an XADD that would fail: the caller runs those through the
    dispatcher, which queues them or reports the error."""
    if ctx.multi is not None:
        return False
    ms, seq = logged_id(argv)
    if ms < 0:
        return False
    db = ctx.db
    key = argv[1]
    value, created = open_stream(db, key)
    if value is None:
        return False
    before = value.last_id
    config = ctx.node.config
    try:
        append_entry(value, argv, 3, ms, seq, config.stream_node_max_entries, config.stream_node_max_bytes)
    except StreamError:
        return False
    if created:
        db[key] = value
    _appended(ctx, key, 1, before)
    return True


def _appended(ctx: Session, key: bytes, count: int, before: int) -> None:
    """The one way the node learns of XADDs appended from the log: `count` to `key`, whose
    last ID was `before`."""
    ctx.effects_in_command += count
    ctx.node.appended_from_log(ctx.db_index, key, count, before)
