"""Applying a log's XADDs to one stream both ways, for the tests of the C appender
(node/engine/_logged_xadd.c): as a replica does (blocks grouped by stream, runs of a group in
C, each command a run stops at the ordinary way) and the ordinary way only
(`stream_append.append_entry`, one parsed command at a time); and the stream's whole inner state,
to compare the two."""

from __future__ import annotations

import struct
from typing import Any

from node.engine import logged_run, stream_append, stream_ops
from node.engine.ids import parse_id
from node.engine.stream_value import StreamValue
from node.log.scan import command_at, command_end


def state(value: StreamValue) -> Any:
    """Everything a stream holds: its nodes' packed keys, offsets, data bytes, listpack
    accounting and flags, and the stream's counters."""
    nodes = [
        (n.master, n.base_ms, n.master_seq, n.wide, list(n.keys), list(n.offsets), bytes(n.data),
         n.fields, n.long, n.dead, n.own, n.live, n.tombs, n.lp_base)
        for n in value.nodes
    ]
    return (nodes, list(value.masters), value.length, value.last_id, value.last_ms, value.last_seq,
            value.entries_added, value.max_deleted_id)


def ordinary(value: StreamValue, argv: list[bytes], max_entries: int, max_bytes: int) -> bool:
    """An XADD with an explicit ID (any spelling) the ordinary way; False (nothing changed)
    for any other command and for one that fails."""
    if len(argv) < 5 or not len(argv) & 1 or argv[0].upper() != b"XADD":
        return False
    entry_id = parse_id(argv[2], 0)
    if entry_id is None:
        return False
    ms, seq = entry_id >> 64, entry_id & (2**64 - 1)
    if not (ms or seq):
        return False
    try:
        stream_append.append_entry(value, argv, 3, ms, seq, max_entries, max_bytes)
    except stream_ops.StreamError:
        return False
    return True


def apply_runs(value: StreamValue, key: bytes, data: bytes, max_entries: int, max_bytes: int) -> tuple[int, int]:
    """Applies `key`'s XADDs in `data` as a replica does, up to the first bytes that are not a
    whole command. Returns (entries appended in C, entries the ordinary way)."""
    fast = slow = 0
    pos = 0
    while pos < len(data):
        end, groups = logged_run.logged_xadd_block(data, pos)
        if groups:
            for group_key, positions in groups:
                if group_key != key:
                    continue
                count = len(positions) // 8
                index = 0
                while index < count:
                    stop, appended = value.append_logged_run(data, positions, index, key, max_entries, max_bytes)
                    assert stop - index == appended
                    fast += appended
                    index = stop
                    if index < count:
                        argv = command_at(data, struct.unpack_from("q", positions, 8 * index)[0])
                        slow += ordinary(value, argv, max_entries, max_bytes)
                        index += 1
            pos = end
            continue
        end = command_end(data, pos)
        if end < 0:
            break
        argv = command_at(data, pos)
        pos = end
        if len(argv) > 1 and argv[1] == key and ordinary(value, argv, max_entries, max_bytes):
            slow += 1
    return fast, slow


def apply_ordinary(value: StreamValue, key: bytes, data: bytes, max_entries: int, max_bytes: int) -> int:
    """Applies `key`'s XADDs in `data` the ordinary way only, up to the first bytes that are
    not a whole command; returns how many went in."""
    added = pos = 0
    while pos < len(data):
        end = command_end(data, pos)
        if end < 0:
            break
        argv = command_at(data, pos)
        pos = end
        if len(argv) > 1 and argv[1] == key and ordinary(value, argv, max_entries, max_bytes):
            added += 1
    return added
