"""XADD effects in the form the effect log gives every XADD (`XADD key ms-seq field value
...`: the complete ID, no option), appended straight to their streams: no dispatcher, no
reply, no effect logged. This is most of what a replica applies and an AOF load replays.

Blocks of them go stream by stream in C from the log's bytes (`logged_xadd_block` finds and
groups them, `Stream.append_logged_run` appends a run); a single one parsed into an argv goes
by `append_logged_xadd`. Either refuses, having changed nothing, what it cannot take (another
form, a MULTI in progress, an XADD that would fail): the caller (`node.log.applier`) runs that
the ordinary way. `dirty`, WATCH and blocked readers learn of each append as of the same XADD
propagated.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from node.commands.context import Session
from node.engine import stream_ops
from node.engine.ids import parse_id_parts
from node.engine.stream_ops import StreamError
from node.engine.stream_value import StreamValue

# XADD as clients usually spell it (the log keeps the client's spelling): the spellings
# `append_logged_xadd` takes; any other goes through the dispatcher.
_LOGGED_XADD_NAMES: Final = frozenset((b"XADD", b"xadd"))
# The items of a group's positions from logged_xadd_block (array('q') bytes).
_POSITION: Final = struct.Struct("q")

# Runs the command starting at data[pos] the ordinary way.
OneCommand = Callable[[bytes, int], None]


def append_logged_groups(ctx: Session, data: bytes, groups: list[tuple[bytes, bytes]], one: OneCommand) -> int:
    """Appends a block of logged XADDs found by `logged_xadd_block` in `data`, outside a
    MULTI, stream by stream (XADDs to different streams commute): runs of a stream's XADDs in
    C straight from the log's bytes, and each one a run stops at (a new stream, a new node,
    other fields, an error) by `one(data, its position)`. Returns how many went in C."""
    config = ctx.node.config
    appended_in_c = 0
    for key, positions in groups:
        count = len(positions) // _POSITION.size
        index = 0
        while index < count:
            value = ctx.db.get(key)
            if type(value) is StreamValue:
                before = value.last_id
                index, appended = value.append_logged_run(
                    data, positions, index, key, config.stream_node_max_entries, config.stream_node_max_bytes
                )
                if appended:
                    appended_in_c += appended
                    ctx.effects_in_command += appended
                    ctx.node.appended_from_log(ctx.db_index, key, appended, before)
                    if index == count:
                        break
            one(data, _POSITION.unpack_from(positions, index * _POSITION.size)[0])
            index += 1
    return appended_in_c


def group_sizes(groups: list[tuple[bytes, bytes]]) -> int:
    """How many XADDs the groups of a block hold."""
    return sum(len(positions) for _, positions in groups) // _POSITION.size


def append_logged_xadd(ctx: Session, argv: list[bytes]) -> bool:
    """Appends an XADD in the log's form, spelled XADD or xadd and outside a MULTI, straight
    to its stream (a quarter cheaper than the dispatcher). Returns False, having changed
    nothing, for any other command or form and for an XADD that would fail: the caller runs
    those through the dispatcher, which queues them or reports the error."""
    n = len(argv)
    if n < 5 or not n & 1 or argv[0] not in _LOGGED_XADD_NAMES or ctx.multi is not None:
        return False
    ms, seq = parse_id_parts(argv[2])
    if ms < 0 or not (ms or seq):
        return False
    db = ctx.db
    key = argv[1]
    value = db.get(key)
    created = value is None
    if value is None:
        value = StreamValue()
    elif type(value) is not StreamValue:
        return False
    config = ctx.node.config
    try:
        stream_ops.append_at(value, argv, ms, seq, config.stream_node_max_entries, config.stream_node_max_bytes)
    except StreamError:
        return False
    if created:
        db[key] = value
    ctx.propagate_argv(argv)
    return True
