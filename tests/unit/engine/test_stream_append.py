"""`stream_append.append_logged_run`, the engine's entry point for a run of the log's XADDs:
in C as far as the tail node takes them when the native build is there, each other one by
`append_entry`; without the build (RILL_PURE_PYTHON=1) every one by `append_entry`. Either
way the stream must end exactly as the ordinary way leaves it, one parsed command at a
time (tests/unit/native/appender.py), and the run must stop before an XADD it refuses, for
the caller's dispatcher to report."""

from __future__ import annotations

from array import array

from hypothesis import given
from hypothesis import strategies as st

from node.engine.stream_append import append_logged_run, run_length
from node.engine.stream_value import StreamValue
from node.log.scan import command_at, command_end
from tests.unit.native.appender import apply_ordinary, ordinary, state
from tests.unit.native.logs import FUZZ, encode, encode_all, xadd_log

_limits = st.sampled_from([(100, 4096), (0, 0), (7, 0), (0, 300), (3, 200), (1, 0), (0, 1)])


def _xadd_positions(data: bytes, key: bytes) -> bytes:
    """Where each XADD to `key` in `data` starts (array('q') bytes, as logged_xadd_block
    gives a group), near misses included: the run must refuse those."""
    at: list[int] = []
    pos = 0
    while pos < len(data):
        argv = command_at(data, pos)
        if argv[0].upper() == b"XADD" and argv[1] == key:
            at.append(pos)
        pos = command_end(data, pos)
    return array("q", at).tobytes()


def _apply(value: StreamValue, key: bytes, data: bytes, max_entries: int, max_bytes: int) -> tuple[int, int]:
    """Every XADD to `key` in `data` as append_logged_groups applies a group: runs, and each
    one a run stops at the ordinary way. Returns (appended by runs, the ordinary way)."""
    positions = _xadd_positions(data, key)
    count = run_length(positions)
    in_runs = ordinary_ones = index = 0
    while index < count:
        index, appended = append_logged_run(value, key, data, positions, index, max_entries, max_bytes, command_at)
        in_runs += appended
        if index < count:
            start = array("q", positions)[index]
            ordinary_ones += ordinary(value, command_at(data, start), max_entries, max_bytes)
            index += 1
    return in_runs, ordinary_ones


@FUZZ
@given(xadd_log(st.sampled_from([b"s", b"s", b"s", b"t"]), max_size=60), st.data(), _limits)
def test_a_run_leaves_the_stream_the_ordinary_way_leaves(
    commands: list[list[bytes]], draw: st.DataObject, limits: tuple[int, int]
) -> None:
    # The stream before the log: the first commands the ordinary way, then some entries
    # deleted and maybe an XSETID (tombstones, a last ID above the last entry).
    split = draw.draw(st.integers(0, len(commands)))
    deletions = draw.draw(st.lists(st.integers(0, 30), max_size=5))
    setid = draw.draw(st.one_of(st.none(), st.integers(1, 3)))
    data = encode_all(commands[split:])
    values = StreamValue(), StreamValue()
    for value in values:
        for argv in commands[:split]:
            if argv[1] == b"s":
                ordinary(value, argv, *limits)
        for i in deletions:
            entries = value.range(0, 2**128 - 1, 0, False)
            if entries:
                value.delete(entries[i % len(entries)][0])
        if setid is not None and value.last_id < 2**128 - 10:
            value.last_id += setid
    in_runs, ordinary_ones = _apply(values[0], b"s", data, *limits)
    assert in_runs + ordinary_ones == apply_ordinary(values[1], b"s", data, *limits)
    assert state(values[0]) == state(values[1])
    values[0]._check()


def test_a_run_goes_on_past_what_c_leaves_and_stops_before_a_refused_xadd() -> None:
    # A new stream (C takes nothing: no tail node), then same-fields entries (C's, when
    # built), other fields (a new node's master fields are not these: append_entry), and an
    # XADD at an ID not above the top, which the run leaves to the caller.
    commands = [
        [b"XADD", b"s", b"1-1", b"f", b"v"],
        [b"XADD", b"s", b"1-2", b"f", b"v"],
        [b"XADD", b"s", b"1-3", b"g", b"v"],
        [b"XADD", b"s", b"1-4", b"f", b"v"],
        [b"XADD", b"s", b"1-4", b"f", b"v"],
        [b"XADD", b"s", b"1-5", b"f", b"v"],
    ]
    data = b"".join(encode(argv) for argv in commands)
    positions = _xadd_positions(data, b"s")
    value = StreamValue()
    assert append_logged_run(value, b"s", data, positions, 0, 100, 4096, command_at) == (4, 4)
    assert append_logged_run(value, b"s", data, positions, 5, 100, 4096, command_at) == (6, 1)
    expected = StreamValue()
    for argv in commands:
        ordinary(expected, argv, 100, 4096)
    assert state(value) == state(expected)
