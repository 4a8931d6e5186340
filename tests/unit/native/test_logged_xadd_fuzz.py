"""Fuzzing the C appender of logged XADDs (node/engine/_logged_xadd.c).

`xadd_block` is checked against a plain Python model of what it must find, on any bytes;
`append_run` on any arguments returns a consistent result or raises, and never reads outside
its inputs; and a replica's way of applying a log (runs in C, the rest the ordinary way)
leaves a stream exactly as the ordinary way alone, whatever the log and the stream before it
(deletions, XSETID, node limits). `make asan-fuzz` runs this under AddressSanitizer."""

from __future__ import annotations

import struct
from array import array
from typing import Any

import hiredis
import pytest
from hypothesis import given
from hypothesis import strategies as st

from node.engine import _logged_xadd
from node.engine.stream_value import StreamValue
from node.log import scan
from tests.unit.native.appender import apply_ordinary, apply_runs, ordinary, state
from tests.unit.native.logs import FUZZ, any_bytes, damaged, encode, encode_all, fenced, xadd, xadd_log

_MAX_KEYS = 64  # _logged_xadd.c MAX_BLOCK_KEYS


def _logged_form(argv: list[bytes]) -> bool:
    """`XADD|xadd key ms-seq field value ...`: each half of the ID 1-20 plain digits within
    64 bits (leading zeros allowed, as strtoull)."""
    if len(argv) < 5 or not len(argv) & 1 or argv[0] not in (b"XADD", b"xadd"):
        return False
    ms, dash, seq = argv[2].partition(b"-")
    return bool(dash) and all(0 < len(p) <= 20 and p.isdigit() and int(p) < 2**64 for p in (ms, seq))


def _model_block(data: bytes, pos: int) -> tuple[int, list[tuple[bytes, bytes]]]:
    groups: dict[bytes, list[int]] = {}
    while pos < len(data):
        end = scan._command_end(data, pos)
        if end < 0:
            break
        reader = hiredis.Reader()
        reader.feed(data, pos, end - pos)
        argv = reader.gets()
        if not _logged_form(argv) or (argv[1] not in groups and len(groups) == _MAX_KEYS):
            break
        groups.setdefault(argv[1], []).append(pos)
        pos = end
    return pos, [(key, array("q", at).tobytes()) for key, at in groups.items()]


@FUZZ
@given(any_bytes, st.data())
def test_a_block_is_what_the_model_finds(data: bytes, draw: st.DataObject) -> None:
    for pos in {0, len(data), draw.draw(st.integers(0, len(data)))}:
        with fenced(data):
            found = _logged_xadd.xadd_block(data, pos)
        assert found == _model_block(data, pos)


@FUZZ
@given(st.lists(xadd(st.sampled_from([b"k%d" % i for i in range(70)])), max_size=80))
def test_a_block_of_many_streams_is_what_the_model_finds(commands: list[list[bytes]]) -> None:
    data = b"".join(encode(c) for c in commands)
    with fenced(data):
        found = _logged_xadd.xadd_block(data, 0)
    assert found == _model_block(data, 0)


@pytest.mark.parametrize("pos", [-1, 10, 2**62])
def test_a_block_position_outside_the_data_is_an_index_error(pos: int) -> None:
    with pytest.raises(IndexError):
        _logged_xadd.xadd_block(b"*1\r\n$1\r\na", pos)


def _run_args(data: bytes, positions: bytes, index: int, names: list[bytes], data_len: int,
              base_ms: int, master_seq: int, last_key: int, last_ms: int, last_seq: int,
              lp_base: int, live: int, tombs: int, cap: int, max_entries: int) -> list[Any]:
    return [data, positions, index, b"s", names, data_len, base_ms, master_seq, last_key, last_ms, last_seq,
            lp_base, live, tombs, cap, max_entries]


_one_stream_log = xadd_log(st.just(b"s"), max_size=12).map(encode_all)
_u64 = st.one_of(st.integers(0, 50), st.integers(0, 2**64 - 1))
_counter = st.one_of(st.integers(0, 200), st.integers(0, 2**61))


@FUZZ
@given(
    st.one_of(_one_stream_log, damaged(_one_stream_log), any_bytes),
    st.one_of(st.none(), st.lists(st.integers(-(2**63), 2**63 - 1), max_size=6)),
    st.integers(0, 8),
    st.lists(st.sampled_from([b"f", b"g", b"h", b""]), max_size=4),
    st.tuples(st.integers(0, 2**32 - 1), _u64, _u64, _u64, _u64, _u64, _counter, _counter, _counter, _counter,
              _counter),
)
def test_a_run_over_any_arguments_is_consistent(data: bytes, positions: list[int] | None, index: int,
                                               names: list[bytes], numbers: tuple[int, ...]) -> None:
    if positions is None:  # the block's own positions of its first group
        groups = _logged_xadd.xadd_block(data, 0)[1]
        packed = groups[0][1] if groups else b""
    else:
        packed = array("q", positions).tobytes()
    args = _run_args(data, packed, index, names, *numbers)
    count_positions = len(packed) // 8
    if index > count_positions:
        with pytest.raises(IndexError):
            _logged_xadd.append_run(*args)
        return
    with fenced(data, packed, *names):
        stop, count, keys, offsets, values, lp, last_ms, last_seq = _logged_xadd.append_run(*args)
    assert stop - index == count and index <= stop <= count_positions
    assert len(keys) == 8 * count and len(offsets) == 4 * count
    data_len = numbers[0]
    found = array("I", offsets)
    assert list(found) == sorted(found) and all(data_len <= at <= data_len + len(values) for at in found)
    assert (count == 0) == (values == b"" and lp == 0)
    if count:
        last = struct.unpack_from("q", packed, 8 * (stop - 1))[0]
        assert scan.command_at(data, last)[2] == b"%d-%d" % (last_ms, last_seq)


@pytest.mark.parametrize(("at", "bad", "error"), [
    (0, "s", TypeError), (1, bytearray(b""), TypeError), (2, -1, OverflowError), (2, 2**63, OverflowError),
    (3, None, TypeError), (4, (b"f",), TypeError), (4, [b"f", "g"], TypeError), (5, -1, OverflowError),
    (5, 2**32, OverflowError), (6, 2**64, OverflowError), (6, 1.0, TypeError), (11, 2**62, OverflowError),
    (12, -5, OverflowError), (15, "0", TypeError),
])
def test_a_run_refuses_arguments_of_the_wrong_type_or_range(at: int, bad: object, error: type[Exception]) -> None:
    data = encode([b"XADD", b"s", b"1-2", b"f", b"v"])
    args: list[Any] = _run_args(data, array("q", [0]).tobytes(), 0, [b"f"], 0, 1, 0, 1, 1, 1, 10, 1, 0, 4096, 100)
    assert _logged_xadd.append_run(*args)[1] == 1
    args[at] = bad
    with pytest.raises(error):
        _logged_xadd.append_run(*args)
    with pytest.raises(TypeError):
        _logged_xadd.append_run(*args[:-1])


_limits = st.sampled_from([(100, 4096), (0, 0), (7, 0), (0, 300), (3, 200), (1, 0), (0, 1)])


@FUZZ
@given(xadd_log(st.sampled_from([b"s", b"s", b"s", b"t"]), max_size=60), st.data(), _limits)
def test_runs_in_c_leave_the_stream_the_ordinary_way_leaves(
    commands: list[list[bytes]], draw: st.DataObject, limits: tuple[int, int]
) -> None:
    # The stream before the log: the first commands the ordinary way, then some entries
    # deleted and maybe an XSETID (tombstones, a last ID above the last entry).
    split = draw.draw(st.integers(0, len(commands)))
    deletions = draw.draw(st.lists(st.integers(0, 30), max_size=5))
    setid = draw.draw(st.one_of(st.none(), st.integers(1, 3)))
    data = encode_all(commands[split:])
    data = draw.draw(st.one_of(st.just(data), damaged(st.just(data))))
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
    assert state(values[0]) == state(values[1])
    with fenced(data):
        fast, slow = apply_runs(values[0], b"s", data, *limits)
    assert fast + slow == apply_ordinary(values[1], b"s", data, *limits)
    assert state(values[0]) == state(values[1])
