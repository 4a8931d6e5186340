"""XADD's append: the one way entries get into a stream, whoever asks.

* `append_entry` is the rule for one entry at a decided ID (the stream not exhausted, the ID
  above its last one, the entry not too large) and the append itself. Everything below ends
  in it, except what the C appender takes, which is exactly what it would do.
* A client's XADD: `xadd` (any option: the ID forms, trimming; `idmp_ops.xadd_idmp` wraps it
  for IDMP) and `xadd_plain` (no option, the hot path) decide the ID, append one entry and
  return the effect that replays it; a dead-letter move is such an XADD too.
* The log's XADDs (`XADD key ms-seq field value ...`: a replica applying its primary's
  batch, an AOF being loaded): `append_logged_run` appends a run of them to one stream, in
  C straight from the log's bytes (`Stream.append_logged_run`, node/engine/_logged_xadd.c)
  when the native build made it and the entries suit the tail node, the pure way otherwise;
  a single one parsed into an argv is a run of one (`logged_id` + `append_entry`). Both ways
  leave the same stream (tests/unit/native compares them byte for byte).
* `open_stream` is where an XADD finds or creates its stream; a new one is stored by the
  caller only once an entry is in, so a refused XADD leaves no empty key behind.

Pure: no I/O, the time comes in as `now_ms`. A new option or rule of XADD goes here (its
parsing in node/commands/stream_args.py).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from node.engine.ids import MAX_ID, MAX_MS, MAX_SEQ, format_id, format_parts, parse_id_parts
from node.engine.keyspace import Database
from node.engine.node_values import total_len
from node.engine.stream_ops import (
    TRIM_NONE,
    AddTrimArgs,
    Effect,
    StreamError,
    rewrite_trim,
    trim_walk,
)
from node.engine.stream_value import StreamValue

# Redis STREAM_LISTPACK_MAX_SIZE: no entry may carry more than this many bytes.
MAX_ENTRY_BYTES: Final = 1 << 30
_EXHAUSTED: Final = "ERR The stream has exhausted the last possible ID, unable to add more items"
_NOT_ABOVE_TOP: Final = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
# The spellings of XADD the log's form takes (the log keeps the client's spelling; the C
# appender takes the same two).
_LOGGED_XADD_NAMES: Final = frozenset((b"XADD", b"xadd"))
# The items of a run's positions (array('q') bytes, from logged_xadd_block).
_POSITION: Final = struct.Struct("q")


def open_stream(db: Database, key: bytes) -> tuple[StreamValue | None, bool]:
    """The stream an XADD to `key` appends to, and whether it is new: a new one is not in
    `db` yet (store it once an entry is in). (None, False) when `key` holds another type."""
    value = db.get(key)
    if value is None:
        return StreamValue(), True
    if type(value) is StreamValue:
        return value, False
    return None, False


def append_entry(
    value: StreamValue, argv: list[bytes], first: int, ms: int, seq: int, node_max_entries: int, node_max_bytes: int
) -> None:
    """The entry whose fields are argv[first:], at the ID ms-seq, which must be above the
    stream's last ID (the caller has refused 0-0). Raises StreamError, having changed
    nothing, as streamAppendItem's callers refuse."""
    last_ms = value.last_ms
    if last_ms == MAX_MS and value.last_seq == MAX_SEQ:
        raise StreamError(_EXHAUSTED)
    if ms < last_ms or (ms == last_ms and seq <= value.last_seq):
        raise StreamError(_NOT_ABOVE_TOP)
    size = total_len(argv, first)
    if size > MAX_ENTRY_BYTES:
        raise StreamError("ERR Elements are too large to be stored")
    value.append(ms, seq, (ms << 64) | seq, argv, first, size, node_max_entries, node_max_bytes)


# -- a client's XADD -------------------------------------------------------------------------


def next_auto_parts(value: StreamValue, now_ms: int) -> tuple[int, int]:
    """streamNextID as (ms, seq): the clock's millisecond, or one past the last ID if the
    clock is not ahead of it (IDs never go backwards). Works on the halves, which are small
    ints where the whole 128-bit ID is not (XADD * runs this on every call)."""
    ms = value.last_ms
    if now_ms > ms:
        return now_ms, 0
    seq = value.last_seq + 1
    if not seq >> 64:
        return ms, seq
    if ms == MAX_MS:
        raise StreamError(_EXHAUSTED)
    return ms + 1, 0


def next_auto_id(value: StreamValue, now_ms: int) -> int:
    """next_auto_parts as one ID."""
    ms, seq = next_auto_parts(value, now_ms)
    return (ms << 64) | seq


def xadd(
    value: StreamValue,
    argv: list[bytes],
    args: AddTrimArgs,
    now_ms: int,
    node_max_entries: int,
    node_max_bytes: int,
) -> tuple[int, Effect]:
    """Append argv's fields (after the ID) and trim as asked; returns the new ID and the
    effect. Raises StreamError as streamAppendItem's callers do."""
    last = value.last_id
    if last == MAX_ID:
        raise StreamError(_EXHAUSTED)
    if not args.id_given:
        entry_id = next_auto_id(value, now_ms)
    elif args.seq_given:
        entry_id = args.entry_id
    elif last >> 64 == args.entry_id >> 64:
        # `ms-*` in the last ID's millisecond: the next sequence number, if there is one.
        if last & MAX_SEQ == MAX_SEQ:
            raise StreamError(_NOT_ABOVE_TOP)
        entry_id = last + 1
    else:
        entry_id = args.entry_id
    append_entry(value, argv, args.id_pos + 1, entry_id >> 64, entry_id & MAX_SEQ, node_max_entries, node_max_bytes)

    effect = argv.copy()
    if args.strategy != TRIM_NONE:
        _, reached = trim_walk(value, args)
        rewrite_trim(effect, value, args, reached)
    if not args.id_given or not args.seq_given:
        effect[args.id_pos] = format_id(entry_id)
    return entry_id, effect


def xadd_plain(
    value: StreamValue,
    argv: list[bytes],
    ms: int,
    seq: int,
    now_ms: int,
    node_max_entries: int,
    node_max_bytes: int,
) -> Effect:
    """XADD key <id> field value ... without options, the hot path: `*` when ms < 0 (the ID
    from the clock), else the complete ID ms-seq (the caller has refused 0-0). Returns the
    effect, which names the new ID as argv[2] does (the generated ID for `*`, the client's
    text otherwise)."""
    effect = argv.copy()
    if ms < 0:
        ms, seq = next_auto_parts(value, now_ms)
        effect[2] = format_parts(ms, seq)
    append_entry(value, argv, 3, ms, seq, node_max_entries, node_max_bytes)
    return effect


# -- the log's XADDs -------------------------------------------------------------------------


def logged_id(argv: list[bytes]) -> tuple[int, int]:
    """The ID of an XADD in the form the effect log gives every XADD (`XADD key ms-seq field
    value ...`, spelled XADD or xadd: the complete ID, no option) as (ms, seq); (-1, 0) for
    any other command or form, and for 0-0 (an XADD the dispatcher must refuse)."""
    n = len(argv)
    if n < 5 or not n & 1 or argv[0] not in _LOGGED_XADD_NAMES:
        return -1, 0
    ms, seq = parse_id_parts(argv[2])
    if ms < 0 or not (ms or seq):
        return -1, 0
    return ms, seq


# Parses the whole command that starts at data[pos] (node.log.scan.command_at).
CommandAt = Callable[[bytes, int], list[bytes]]


def append_logged_run(
    value: StreamValue,
    key: bytes,
    data: bytes,
    positions: bytes,
    index: int,
    node_max_entries: int,
    node_max_bytes: int,
    command_at: CommandAt,
) -> tuple[int, int]:
    """Appends to `value`, the stream at `key`, the log's XADDs to it that start in `data`
    at positions[index:] (a group from `logged_xadd_block`), in order: in C as many at a
    time as the tail node takes (same fields, no split due, see Stream.append_logged_run),
    each other one parsed and appended by `append_entry`. Stops before the first one
    neither takes (another form, an XADD that would fail): returns its index (the end when
    all went in) and how many it appended. The caller runs that one the ordinary way, which
    reports its error, and may come back for the rest."""
    count = run_length(positions)
    appended = 0
    while index < count:
        index, in_c = value.append_logged_run(data, positions, index, key, node_max_entries, node_max_bytes)
        appended += in_c
        if index == count:
            break
        argv = command_at(data, position_at(positions, index))
        ms, seq = logged_id(argv)
        if ms < 0:
            break
        try:
            append_entry(value, argv, 3, ms, seq, node_max_entries, node_max_bytes)
        except StreamError:
            break
        appended += 1
        index += 1
    return index, appended


def position_at(positions: bytes, index: int) -> int:
    """Where in the log's bytes the command at `index` of a run's positions starts."""
    start: int = _POSITION.unpack_from(positions, index * _POSITION.size)[0]
    return start


def run_length(positions: bytes) -> int:
    """How many commands a run's positions hold."""
    return len(positions) // _POSITION.size
