"""Unit and property tests of node.engine.ids and node.engine.stream.

Node-boundary and trim expectations marked "redis-server 7.0.15" were measured on the
oracle with the same commands (XADD ids 1-0, 2-0, ... and XINFO STREAM radix-tree-keys).
"""

from __future__ import annotations

from typing import Any

import hiredis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from node.engine.ids import (
    MAX_ID,
    MAX_MS,
    MAX_SEQ,
    MIN_ID,
    _parse_id_slow,
    decr_id,
    format_id,
    format_parts,
    id_ms,
    id_seq,
    incr_id,
    make_id,
    parse_id,
    parse_id_parts,
)
from node.engine.listpack_size import lp_str_size
from node.engine.stream import Stream

FV = [b"f", b"v"]


def mk(ms: int, seq: int = 0) -> int:
    return make_id(ms, seq)


def filled(n: int, max_entries: int = 100, max_bytes: int = 4096, fields: list[bytes] | None = None) -> Stream:
    """Stream with ids 1-0 .. n-0."""
    s = Stream()
    for i in range(1, n + 1):
        s.add(mk(i), fields if fields is not None else [b"f", b"%d" % i], max_entries, max_bytes)
    s._check()
    return s


def ids_of(s: Stream) -> list[int]:
    return [i for i, _ in s.iter_all()]


# ---------------------------------------------------------------------------------------
# ids
# ---------------------------------------------------------------------------------------


def test_id_packing_orders_like_redis_and_roundtrips() -> None:
    assert MAX_MS == MAX_SEQ == 2**64 - 1 and MIN_ID == 0 and MAX_ID == 2**128 - 1
    i = make_id(1526919030474, 55)
    assert (id_ms(i), id_seq(i)) == (1526919030474, 55)
    assert make_id(1, MAX_SEQ) < make_id(2, 0)
    assert make_id(MAX_MS, MAX_SEQ) == MAX_ID


@pytest.mark.parametrize(
    ("i", "text"),
    [
        (make_id(1526919030474, 55), b"1526919030474-55"),
        (0, b"0-0"),
        (MAX_ID, b"18446744073709551615-18446744073709551615"),
    ],
)
def test_format_id(i: int, text: bytes) -> None:
    assert format_id(i) == text
    assert parse_id(text, 0) == i


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"0", make_id(0, 7)),
        (b"5", make_id(5, 7)),
        (b"1526919030474-55", make_id(1526919030474, 55)),
        (b"18446744073709551615", make_id(MAX_MS, 7)),
        (b"1-18446744073709551615", make_id(1, MAX_SEQ)),
        # string2ull falls back to strtoull(): leading zeros, '+', whitespace are accepted
        # and '-' negates modulo 2**64 (all checked on redis-server 7.0.15 with XADD).
        (b"01", make_id(1, 7)),
        (b"00", make_id(0, 7)),
        (b"+1", make_id(1, 7)),
        (b" 1", make_id(1, 7)),
        (b"\t\n1", make_id(1, 7)),
        (b"1-01", make_id(1, 1)),
        (b"1-+5", make_id(1, 5)),
        (b"1- 5", make_id(1, 5)),
        (b"1-\x0b5", make_id(1, 5)),
        (b"1--0", make_id(1, 0)),
        (b"1-  -0", make_id(1, 0)),
        (b"0- -1", make_id(0, MAX_SEQ)),
        (b"1--05", make_id(1, 2**64 - 5)),
        # C strings end at the first NUL.
        (b"1\x00abc", make_id(1, 7)),
        (b"1-2\x00x", make_id(1, 2)),
        (b"0" * 126 + b"1", make_id(1, 7)),
    ],
)
def test_parse_id_accepts_what_redis_accepts(raw: bytes, expected: int) -> None:
    assert parse_id(raw, 7) == expected


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"-",
        b"+",
        b"*",
        b"$",
        b">",
        b"1-",
        b"-1",
        b"-0",
        b" -1",
        b"1--1",
        b"1-2-3",
        b"1 ",
        b"1-2 ",
        b"0x1",
        b"1.5",
        b"abc",
        b"1-+",
        b"+-1",
        b"1-\x00",
        b"\x001",
        b"18446744073709551616",
        b"1-18446744073709551616",
        b"99999999999999999999",
        b"0" * 127 + b"1",  # longer than Redis's 128-byte buffer
        b"\xd9\xa1",  # non-ASCII digits are not digits to strtoull
    ],
)
def test_parse_id_rejects_what_redis_rejects(raw: bytes) -> None:
    assert parse_id(raw, 0) is None


_ID_BYTES = st.sampled_from(list(b"0123456789-+ *\0x9"))


@settings(max_examples=2000)
@given(st.lists(_ID_BYTES, max_size=45).map(bytes) | st.tuples(st.integers(0, 2**65), st.integers(0, 2**65)).map(
    lambda p: b"%d-%d" % p
))
def test_parse_id_fast_path_agrees_with_the_strtoull_rules(raw: bytes) -> None:
    # The byte loop handles plain digits; everything else falls to the strtoull model.
    for missing in (0, MAX_SEQ):
        assert parse_id(raw, missing) == _parse_id_slow(raw, missing)
    # parse_id_parts takes `digits-digits` only (XADD's form without options), or declines.
    parts = parse_id_parts(raw)
    if parts != (-1, -1):
        assert make_id(*parts) == _parse_id_slow(raw, 0)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"1526919030474-55", (1526919030474, 55)),
        (b"0-0", (0, 0)),
        (b"007-01", (7, 1)),
        (b"9" * 18 + b"-" + b"9" * 18, (10**18 - 1, 10**18 - 1)),
        # Past 18 digits, or any other form, parse_id's full rules decide.
        (b"1" * 19 + b"-1", (-1, -1)),
        (b"1-" + b"1" * 19, (-1, -1)),
        (b"5", (-1, -1)),
        (b"5-", (-1, -1)),
        (b"-5", (-1, -1)),
        (b"5-*", (-1, -1)),
        (b"+5-1", (-1, -1)),
        (b"5-1\x00", (-1, -1)),
        (b"MAXLEN", (-1, -1)),
    ],
)
def test_parse_id_parts_takes_plain_ids_only(raw: bytes, expected: tuple[int, int]) -> None:
    assert parse_id_parts(raw) == expected


@given(st.lists(st.tuples(st.integers(0, MAX_MS), st.integers(0, MAX_SEQ) | st.integers(0, 1100)), max_size=8))
def test_format_parts_agrees_with_format_id(ids: list[tuple[int, int]]) -> None:
    # Runs of the same millisecond go through its cached prefix; a new one replaces it.
    for ms, seq in ids + ids:
        assert format_parts(ms, seq) == format_id(make_id(ms, seq))


def test_incr_and_decr_id_carry_and_stop_at_the_edges() -> None:
    assert incr_id(make_id(1, 5)) == make_id(1, 6)
    assert incr_id(make_id(1, MAX_SEQ)) == make_id(2, 0)
    assert incr_id(MAX_ID) is None
    assert decr_id(make_id(2, 0)) == make_id(1, MAX_SEQ)
    assert decr_id(make_id(1, 6)) == make_id(1, 5)
    assert decr_id(0) is None
    assert decr_id(1) == 0


# ---------------------------------------------------------------------------------------
# Stream basics
# ---------------------------------------------------------------------------------------


def test_empty_stream() -> None:
    s = Stream()
    s._check()
    assert (s.length, s.last_id, s.max_deleted_id, s.entries_added) == (0, 0, 0, 0)
    assert s.first_id() == 0 and s.last_live_id() == 0
    assert s.range(MIN_ID, MAX_ID) == [] and s.range(MIN_ID, MAX_ID, rev=True) == []
    assert list(s.iter_range(MIN_ID, MAX_ID)) == [] and list(s.iter_all()) == []
    assert s.get(mk(1)) is None and not s.contains(mk(1))
    assert s.delete(mk(1)) is False
    assert s.trim_maxlen(0, False, 0) == 0 and s.trim_minid(MAX_ID, False, 0) == 0
    assert s.node_count() == 0
    assert s.memory_bytes() > 0


def test_add_updates_counters_and_get_returns_fields() -> None:
    s = Stream()
    s.add(mk(5, 1), [b"a", b"1", b"b", b"2"])
    s.add(mk(5, 2), [b"a", b"3", b"b", b"4"])
    s._check()
    assert (s.length, s.last_id, s.entries_added) == (2, mk(5, 2), 2)
    assert s.get(mk(5, 1)) == [b"a", b"1", b"b", b"2"]
    assert s.get(mk(5, 2)) == [b"a", b"3", b"b", b"4"]
    assert s.get(mk(5, 3)) is None and s.get(mk(5, 0)) is None and s.get(mk(4)) is None
    assert s.contains(mk(5, 2)) and not s.contains(mk(6))
    assert s.first_id() == mk(5, 1) and s.last_live_id() == mk(5, 2)
    got = s.get(mk(5, 1))
    assert got is not None and all(type(x) is bytes for x in got)


def test_add_accepts_any_sequence_of_fields() -> None:
    s = Stream()
    s.add(mk(1), (b"f", b"v"))
    s.add(mk(2), [b"f", b"w"])
    s._check()
    assert s.range(MIN_ID, MAX_ID) == [(mk(1), [b"f", b"v"]), (mk(2), [b"f", b"w"])]


def test_entries_whose_fields_differ_from_the_master_fields() -> None:
    s = Stream()
    shapes = [
        [b"f", b"1"],
        [b"g", b"2"],
        [b"f", b"3", b"g", b"4"],
        [b"f", b"5"],
        [b"g", b"6", b"f", b"7"],
        [b"f", b"f", b"f", b"f"],  # repeated field names are kept as given
        [b"", b""],
    ]
    for i, fields in enumerate(shapes, 1):
        s.add(mk(i), fields)
    s._check()
    assert s.node_count() == 1
    assert s.range(MIN_ID, MAX_ID) == [(mk(i), f) for i, f in enumerate(shapes, 1)]
    assert [e[1] for e in s.range(MIN_ID, MAX_ID, rev=True)] == shapes[::-1]


@pytest.mark.parametrize("size", [0, 1, 127, 128, 255, 256, 16383, 16384, 70000, 300000])
def test_values_of_any_size_roundtrip_in_tail_and_sealed_nodes(size: int) -> None:
    big = bytes(range(256)) * (size // 256) + bytes(size % 256)
    s = Stream()
    s.add(mk(1), [b"f", big], 2, 0)
    s.add(mk(2), [b"other", big, b"f", b"x"], 2, 0)  # own fields, in the tail
    s.add(mk(3), [b"f", big], 2, 0)  # seals the first node
    s._check()
    assert s.get(mk(1)) == [b"f", big]
    assert s.get(mk(2)) == [b"other", big, b"f", b"x"]
    assert s.get(mk(3)) == [b"f", big]
    assert [i for i, _ in s.range(MIN_ID, MAX_ID)] == [mk(1), mk(2), mk(3)]
    assert s.range(MIN_ID, MAX_ID)[2] == (mk(3), [b"f", big])


def test_huge_fields_and_many_fields() -> None:
    fields = []
    for i in range(200):
        fields += [b"field-%d" % i, b"v" * i]
    s = Stream()
    s.add(mk(1), fields)
    s.add(mk(2), fields)
    s.add(mk(3), [b"x" * 200, b"y"])
    s._check()
    assert s.get(mk(2)) == fields
    assert s.get(mk(3)) == [b"x" * 200, b"y"]


# ---------------------------------------------------------------------------------------
# Node boundaries (Redis streamAppendItem)
# ---------------------------------------------------------------------------------------


def test_a_node_holds_max_entries_entries() -> None:
    assert filled(100).node_count() == 1
    assert filled(101).node_count() == 2
    s = filled(10, max_entries=3)
    assert s.node_count() == 4
    assert filled(500, max_entries=0, max_bytes=0).node_count() == 1


def test_deleted_entries_count_towards_max_entries() -> None:
    # redis-server 7.0.15: 5 entries, XDEL 2 of them, node-max-entries 5, XADD -> 2 nodes.
    s = filled(5)
    s.delete(mk(2))
    s.delete(mk(3))
    s.add(mk(6), FV, 5)
    s._check()
    assert s.node_count() == 2


@pytest.mark.parametrize(
    ("value", "max_bytes", "per_node"),
    [
        # All measured on redis-server 7.0.15 with stream-node-max-entries 100.
        (b"1234567890123", 200, 10),  # stored as a listpack integer
        (b"abcdefghijklm", 200, 8),  # same length, stored as a string
        (b"-5", 200, 17),
        (b"x" * 1000, 4096, 4),
        (b"x" * 70000, 4096, 1),
    ],
)
def test_node_byte_limit_matches_redis_listpack_sizes(value: bytes, max_bytes: int, per_node: int) -> None:
    s = Stream()
    counts = []
    for i in range(1, 41):
        s.add(mk(i), [b"f", value], 100, max_bytes)
        counts.append(s.node_count())
    s._check()
    assert counts == [(i - 1) // per_node + 1 for i in range(1, 41)]


@pytest.mark.parametrize(
    ("value", "size"),
    [
        # listpack.c: integers 7-bit / 13 / 16 / 24 / 32 / 64-bit, strings with a 1, 2 or
        # 5 byte header, plus a 1..5 byte backlen; canonical int64 strings are integers.
        (b"0", 2),
        (b"127", 2),
        (b"128", 3),
        (b"4095", 3),
        (b"4096", 4),
        (b"-4096", 3),
        (b"-4097", 4),
        (b"32767", 4),
        (b"32768", 5),
        (b"-32769", 5),
        (b"8388607", 5),
        (b"8388608", 6),
        (b"2147483647", 6),
        (b"-2147483648", 6),
        (b"2147483648", 10),
        (b"9223372036854775807", 10),
        (b"-9223372036854775808", 10),
        (b"9223372036854775808", 21),  # beyond int64: a 19-byte string
        (b"00", 4),
        (b"-0", 4),
        (b"+1", 4),
        (b"", 2),
        (b"v" * 62, 64),
        (b"v" * 63, 65),
        (b"v" * 64, 67),
        (b"v" * 125, 128),
        (b"v" * 126, 130),
        (b"v" * 4095, 4099),
        (b"v" * 4096, 4103),
        (b"v" * 16378, 16386),
    ],
)
def test_listpack_element_sizes(value: bytes, size: int) -> None:
    assert lp_str_size(value) == size


def test_count_element_growth_moves_the_byte_split_like_redis() -> None:
    # redis-server 7.0.15, node-max-entries 0, 399 entries {f: v}: radix-tree-keys is 8, 7
    # and 5 for node-max-bytes 600, 700 and 1000 (the count element grows at 128 entries).
    for max_bytes, nodes in [(600, 8), (700, 7), (1000, 5)]:
        assert filled(399, max_entries=0, max_bytes=max_bytes, fields=FV).node_count() == nodes


def test_zero_max_bytes_means_the_listpack_cap() -> None:
    # redis-server 7.0.15: 250 entries of 300-byte values, max-bytes 0, max-entries 100 -> 3.
    s = filled(250, max_bytes=0, fields=[b"f", b"v" * 300])
    assert s.node_count() == 3


def test_ids_far_apart_share_a_node_like_redis() -> None:
    # IDs that do not fit the compact 32+32-bit packing switch the node to absolute IDs
    # instead of opening a node, so boundaries stay Redis's.
    ids = [mk(1), mk(1, 2**32), mk(1, 2**32 + 1), mk(2**33), mk(2**33, MAX_SEQ), mk(MAX_MS, 0), mk(MAX_MS, MAX_SEQ)]
    s = Stream()
    for i in ids:
        s.add(i, FV)
    s._check()
    assert s.node_count() == 1
    assert ids_of(s) == ids
    assert s.range(mk(1, 5), mk(2**33, 1)) == [(i, FV) for i in ids[1:4]]
    assert s.range(mk(1, 5), mk(2**33, 1), rev=True) == [(i, FV) for i in ids[1:4][::-1]]
    assert s.get(mk(MAX_MS, MAX_SEQ)) == FV and s.get(mk(MAX_MS, 1)) is None
    assert s.delete(mk(2**33, MAX_SEQ)) and s.get(mk(2**33, MAX_SEQ)) is None
    s._check()
    assert s.last_live_id() == MAX_ID and s.first_id() == mk(1)


def test_first_entry_with_huge_seq_and_bounds_beyond_32_bits() -> None:
    s = Stream()
    s.add(mk(7, MAX_SEQ - 1), FV)
    s.add(mk(7, MAX_SEQ), FV)
    s.add(mk(8, 0), FV)
    s._check()
    assert ids_of(s) == [mk(7, MAX_SEQ - 1), mk(7, MAX_SEQ), mk(8, 0)]
    t = Stream()
    t.add(mk(7, 1), FV)
    t.add(mk(7, 2), FV)
    t.add(mk(9, 0), FV)
    # Bounds with seq >= 2**32 on a compact node.
    assert [i for i, _ in t.range(mk(7, 2**40), MAX_ID)] == [mk(9, 0)]
    assert [i for i, _ in t.range(MIN_ID, mk(7, 2**40))] == [mk(7, 1), mk(7, 2)]
    assert [i for i, _ in t.range(mk(2**40), MAX_ID)] == []


# ---------------------------------------------------------------------------------------
# range / iter_range
# ---------------------------------------------------------------------------------------


def test_range_bounds_are_inclusive_and_count_limits() -> None:
    s = filled(250, max_entries=7)
    every = [mk(i) for i in range(1, 251)]
    assert [i for i, _ in s.range(MIN_ID, MAX_ID)] == every
    assert [i for i, _ in s.range(mk(10), mk(20))] == every[9:20]
    assert [i for i, _ in s.range(mk(10, 1), mk(20, 0))] == every[10:20]
    assert [i for i, _ in s.range(mk(10), mk(20), count=3)] == every[9:12]
    assert [i for i, _ in s.range(mk(10), mk(20), rev=True)] == every[9:20][::-1]
    assert [i for i, _ in s.range(mk(10), mk(20), count=3, rev=True)] == [mk(20), mk(19), mk(18)]
    assert [i for i, _ in s.range(mk(7), mk(8))] == [mk(7), mk(8)]  # across a node boundary
    assert [i for i, _ in s.range(mk(8), mk(8))] == [mk(8)]
    assert s.range(mk(20), mk(10)) == [] and s.range(mk(20), mk(10), rev=True) == []
    assert s.range(mk(300), MAX_ID) == [] and s.range(MIN_ID, mk(0, 5)) == []
    assert s.range(MIN_ID, MAX_ID, count=1, rev=True) == [(mk(250), [b"f", b"250"])]
    assert s.range(mk(5), mk(5)) == [(mk(5), [b"f", b"5"])]


def test_range_skips_deleted_entries_in_both_directions() -> None:
    s = filled(30, max_entries=4)
    for i in (1, 2, 5, 6, 7, 8, 13, 30):
        assert s.delete(mk(i))
    s._check()
    live = [mk(i) for i in range(1, 31) if i not in (1, 2, 5, 6, 7, 8, 13, 30)]
    assert [i for i, _ in s.range(MIN_ID, MAX_ID)] == live
    assert [i for i, _ in s.range(MIN_ID, MAX_ID, rev=True)] == live[::-1]
    assert [i for i, _ in s.range(mk(5), mk(12), count=2)] == [mk(9), mk(10)]
    assert [i for i, _ in s.range(mk(1), mk(13), count=2, rev=True)] == [mk(12), mk(11)]


def test_iter_range_matches_range() -> None:
    s = filled(120, max_entries=9)
    for lo, hi in [(MIN_ID, MAX_ID), (mk(9), mk(10)), (mk(50, 1), mk(77)), (mk(121), MAX_ID)]:
        for rev in (False, True):
            assert list(s.iter_range(lo, hi, rev)) == s.range(lo, hi, 0, rev)


def test_reading_the_growing_tail_returns_bytes() -> None:
    s = Stream()
    s.add(mk(1), [b"a", b"x" * 70000])  # tail bytearray above the snapshot threshold
    s.add(mk(2), [b"a", b"y"])
    for _, fields in s.range(MIN_ID, MAX_ID) + list(s.iter_all()):
        assert all(type(x) is bytes for x in fields)


# ---------------------------------------------------------------------------------------
# delete
# ---------------------------------------------------------------------------------------


def test_delete_first_middle_last_and_missing() -> None:
    s = filled(10, max_entries=5)
    assert s.delete(mk(1)) and s.first_id() == mk(2)
    assert s.delete(mk(10)) and s.last_live_id() == mk(9) and s.last_id == mk(10)
    assert s.delete(mk(5))
    assert not s.delete(mk(5)) and not s.delete(mk(11)) and not s.delete(mk(3, 1)) and not s.delete(0)
    s._check()
    assert s.length == 7
    assert s.max_deleted_id == mk(10)
    assert s.delete(mk(2)) and s.max_deleted_id == mk(10)  # only ever grows
    assert s.entries_added == 10


def test_deleting_every_entry_of_a_node_removes_it() -> None:
    s = filled(10, max_entries=5)
    for i in range(6, 11):
        s.delete(mk(i))
    s._check()
    assert s.node_count() == 1 and s.last_live_id() == mk(5)
    # The new tail was sealed; it is full, so the next add opens a node.
    s.add(mk(11), FV, 5)
    s._check()
    assert s.node_count() == 2
    for i in range(1, 6):
        s.delete(mk(i))
    s._check()
    assert s.node_count() == 1 and s.first_id() == mk(11)
    s.delete(mk(11))
    assert s.node_count() == 0 and s.length == 0 and s.first_id() == 0


def test_appending_to_a_sealed_node_that_became_the_tail() -> None:
    s = filled(5, max_entries=5)
    s.add(mk(6), FV, 5)
    s.delete(mk(6))  # the 6-0 node goes; the sealed 1..5 node is the tail again
    s.add(mk(7), FV, 10)  # room under the new limit: appended to the sealed node
    s._check()
    assert s.node_count() == 1 and ids_of(s) == [mk(i) for i in (1, 2, 3, 4, 5, 7)]


# ---------------------------------------------------------------------------------------
# trim (Redis streamTrim)
# ---------------------------------------------------------------------------------------


def test_trim_maxlen_exact_removes_whole_nodes_then_tombstones_the_first() -> None:
    s = filled(100, max_entries=10)
    assert s.trim_maxlen(35, False, 0) == 65
    s._check()
    assert s.length == 35 and s.first_id() == mk(66)
    assert s.node_count() == 4  # 61..70 keeps 5 tombstones
    assert s.max_deleted_id == 0  # streamTrim does not touch max_deleted_entry_id
    assert s.trim_maxlen(35, False, 0) == 0
    assert s.trim_maxlen(0, False, 0) == 35 and s.node_count() == 0 and s.length == 0
    assert s.last_id == mk(100) and s.entries_added == 100


def test_trim_approx_removes_only_whole_nodes_and_honours_limit() -> None:
    # redis-server 7.0.15, node-max-entries 10, 100 entries:
    # MAXLEN ~ 35 -> 60 removed, 4 nodes; then MAXLEN ~ 0 LIMIT 20 -> 20 removed, 2 nodes;
    # MINID ~ 75-0 -> 0; MAXLEN 5 -> 15 removed, first entry 96-0.
    s = filled(100, max_entries=10)
    assert s.trim_maxlen(35, True, 1000) == 60
    assert (s.length, s.node_count()) == (40, 4)
    assert s.trim_maxlen(0, True, 20) == 20
    assert (s.length, s.node_count()) == (20, 2)
    assert s.trim_minid(mk(75), True, 1000) == 0
    assert s.trim_maxlen(5, False, 0) == 15
    s._check()
    assert (s.length, s.node_count(), s.first_id()) == (5, 1, mk(96))


def test_trim_limit_stops_before_a_node_that_would_exceed_it() -> None:
    s = filled(100, max_entries=10)
    assert s.trim_maxlen(0, True, 25) == 20
    assert s.trim_minid(mk(100), True, 9) == 0
    assert s.trim_minid(mk(100), True, 10) == 10
    s._check()


def test_trim_minid_exact_and_approx() -> None:
    s = filled(100, max_entries=10)
    assert s.trim_minid(mk(25), True, 0) == 20
    assert s.first_id() == mk(21)
    assert s.trim_minid(mk(25), False, 0) == 4
    s._check()
    assert s.first_id() == mk(25) and s.length == 76
    assert s.trim_minid(mk(25), False, 0) == 0
    assert s.trim_minid(MAX_ID, False, 0) == 76 and s.node_count() == 0


def test_trim_minid_keeps_a_node_left_with_only_tombstones_like_redis() -> None:
    # redis-server 7.0.15: XADD 1-0 2-0 3-0; XDEL 3-0; XTRIM MINID = 3-0 -> 2 removed,
    # length 0, radix-tree-keys 1; a later XADD 4-0 lands in that same node.
    s = filled(3)
    s.delete(mk(3))
    assert s.trim_minid(mk(3), False, 0) == 2
    s._check()
    assert (s.length, s.node_count(), s.first_id(), s.last_live_id()) == (0, 1, 0, 0)
    assert s.range(MIN_ID, MAX_ID) == []
    assert not s.delete(mk(3)) and not s.delete(mk(1))
    s.add(mk(5), FV)
    s._check()
    assert s.node_count() == 1 and s.range(MIN_ID, MAX_ID) == [(mk(5), FV)]
    assert s.first_id() == mk(5)
    # The empty node goes on the next trim that reaches it.
    t = filled(3)
    t.delete(mk(3))
    t.trim_minid(mk(3), False, 0)
    assert t.trim_minid(mk(4), False, 0) == 0 and t.node_count() == 0


def test_trim_maxlen_counts_only_live_entries() -> None:
    s = filled(20, max_entries=10)
    for i in range(1, 9):
        s.delete(mk(i))
    # Node 1 has 2 live entries; removing it keeps length 10 >= 10.
    assert s.trim_maxlen(10, True, 0) == 2
    s._check()
    assert s.node_count() == 1 and s.length == 10


def test_add_after_xsetid_below_stored_tombstones() -> None:
    # redis-server 7.0.15: XADD 1-0 2-0 3-0; XDEL 3-0; XSETID 2-0 is accepted (it checks the
    # last live ID) and XADD 3-0 then succeeds.  Rill drops the stale tombstone first.
    s = filled(3)
    s.delete(mk(3))
    s.last_id = mk(2)
    s._check()
    s.add(mk(3), [b"f", b"w"])
    s._check()
    assert s.range(MIN_ID, MAX_ID) == [(mk(1), [b"f", b"1"]), (mk(2), [b"f", b"2"]), (mk(3), [b"f", b"w"])]
    assert s.get(mk(3)) == [b"f", b"w"] and s.node_count() == 1
    assert s.max_deleted_id == mk(3)
    s.delete(mk(3))
    s.last_id = mk(2)
    s.add(mk(2, 5), FV)
    s._check()
    assert ids_of(s) == [mk(1), mk(2), mk(2, 5)]
    assert [i for i, _ in s.range(MIN_ID, MAX_ID, rev=True)] == [mk(2, 5), mk(2), mk(1)]


def test_add_after_xsetid_on_a_tombstone_only_head_node() -> None:
    s = filled(3)
    s.delete(mk(3))
    s.trim_minid(mk(3), False, 0)
    s.last_id = mk(0, 1)  # XSETID on an empty stream is not checked against anything
    s.add(mk(1), FV)
    s._check()
    assert s.range(MIN_ID, MAX_ID) == [(mk(1), FV)] and s.node_count() == 1


# ---------------------------------------------------------------------------------------
# copy, memory, _check
# ---------------------------------------------------------------------------------------


def test_copy_is_independent() -> None:
    s = filled(30, max_entries=7)
    c = s.copy()
    c._check()
    assert list(c.iter_all()) == list(s.iter_all())
    c.delete(mk(3))
    c.add(mk(31), FV)
    c.trim_maxlen(10, False, 0)
    s._check()
    c._check()
    assert s.length == 30 and s.get(mk(3)) == [b"f", b"3"] and not s.contains(mk(31))
    s.add(mk(31), [b"g", b"h"])
    assert c.get(mk(31)) == FV


def test_memory_bytes_grows_with_content() -> None:
    small = filled(10).memory_bytes()
    big = filled(1000).memory_bytes()
    assert small < big < 1000 * 64


def test_check_detects_corruption() -> None:
    s = filled(10)
    s.length += 1
    with pytest.raises(AssertionError):
        s._check()


# ---------------------------------------------------------------------------------------
# Model-based test
# ---------------------------------------------------------------------------------------

_VALUES = st.one_of(
    st.sampled_from([b"", b"v", b"0", b"-1", b"127", b"128", b"12345", b"9223372036854775807", b"007"]),
    st.binary(max_size=20),
    st.integers(min_value=60, max_value=3000).map(lambda n: b"z" * n),
)
_SHAPES = [[b"f"], [b"a", b"b"], [b"user_id", b"event", b"page", b"ts"], [b"g"]]


class StreamVersusModel(RuleBasedStateMachine):
    """Stream behaves like a sorted dict id -> fields for add/delete/range/trim, and keeps
    all its invariants after every step.  Approximate trims remove a prefix (oldest
    entries), never more than the exact trim would, and never more than LIMIT."""

    def __init__(self) -> None:
        super().__init__()
        self.s = Stream()
        self.model: dict[int, list[bytes]] = {}
        self.max_entries = 4
        self.max_bytes = 200

    def live(self) -> list[int]:
        return sorted(self.model)

    @rule(
        ms_step=st.sampled_from([0, 1, 1, 3, 2**32, 2**33 + 5]),
        seq=st.sampled_from([0, 1, 7, 2**32, MAX_SEQ]),
        shape=st.sampled_from(_SHAPES),
        values=st.lists(_VALUES, min_size=4, max_size=4),
        max_entries=st.sampled_from([0, 1, 3, 4, 100]),
        max_bytes=st.sampled_from([0, 60, 200, 4096]),
    )
    def add(
        self, ms_step: int, seq: int, shape: list[bytes], values: list[bytes], max_entries: int, max_bytes: int
    ) -> None:
        last = self.s.last_id
        ms = id_ms(last) + ms_step
        entry_id = make_id(ms, seq) if ms_step else make_id(ms, id_seq(last) + 1) if id_seq(last) < MAX_SEQ else 0
        if entry_id <= last or ms > MAX_MS:
            return
        fields = [x for pair in zip(shape, values, strict=False) for x in pair]
        self.s.add(entry_id, fields, max_entries, max_bytes)
        self.model[entry_id] = fields

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def delete_existing(self, data: st.DataObject) -> None:
        victim = data.draw(st.sampled_from(self.live()))
        assert self.s.delete(victim)
        del self.model[victim]
        assert self.s.max_deleted_id >= victim
        assert self.s.get(victim) is None

    @rule(ms=st.integers(0, 2**34), seq=st.sampled_from([0, 1, MAX_SEQ]))
    def delete_any(self, ms: int, seq: int) -> None:
        entry_id = make_id(ms, seq)
        before = self.s.max_deleted_id
        assert self.s.delete(entry_id) == (entry_id in self.model)
        if self.model.pop(entry_id, None) is None:
            assert self.s.max_deleted_id == before

    @rule(back=st.integers(0, 12), approx=st.booleans(), limit=st.sampled_from([0, 0, 2, 5, 30]))
    def trim_maxlen(self, back: int, approx: bool, limit: int) -> None:
        live = self.live()
        maxlen = max(0, len(live) - back)
        removed = self.s.trim_maxlen(maxlen, approx, limit if approx else 0)
        exact = max(0, len(live) - maxlen)
        if approx:
            assert removed <= exact and (not limit or removed <= limit)
        else:
            assert removed == exact
        for i in live[:removed]:
            del self.model[i]

    @rule(pick=st.integers(0, 40), approx=st.booleans(), limit=st.sampled_from([0, 0, 2, 5, 30]))
    def trim_minid(self, pick: int, approx: bool, limit: int) -> None:
        live = self.live()
        minid = live[pick] if pick < len(live) else self.s.last_id + 1
        deleted_before = self.s.max_deleted_id
        removed = self.s.trim_minid(minid, approx, limit if approx else 0)
        exact = sum(1 for i in live if i < minid)
        if approx:
            assert removed <= exact and (not limit or removed <= limit)
        else:
            assert removed == exact
        for i in live[:removed]:
            del self.model[i]
        assert self.s.max_deleted_id == deleted_before

    @precondition(lambda self: self.model)
    @rule()
    def delete_newest_then_setid(self) -> None:
        # Leaves a tombstone above last_id, which the next add must get past.
        newest = max(self.model)
        assert self.s.delete(newest)
        del self.model[newest]
        self.s.last_id = self.s.last_live_id()

    @rule(frac=st.floats(0, 1))
    def setid(self, frac: float) -> None:
        # XSETID may move last_id anywhere down to the last live entry.
        low = self.s.last_live_id()
        self.s.last_id = low + int((self.s.last_id - low) * frac)

    @rule(a=st.integers(0, 40), b=st.integers(0, 40), count=st.integers(0, 5), rev=st.booleans())
    def read_range(self, a: int, b: int, count: int, rev: bool) -> None:
        live = self.live()
        bounds = [*live, self.s.last_id + 1]
        start, end = bounds[min(a, len(bounds) - 1)], bounds[min(b, len(bounds) - 1)]
        if a % 3 == 1:
            start = max(0, start - 1)
        expected = [(i, self.model[i]) for i in live if start <= i <= end]
        if rev:
            expected.reverse()
        if count:
            expected = expected[:count]
        assert self.s.range(start, end, count, rev) == expected
        # The same range written as RESP straight from the nodes (XRANGE/XREAD replies).
        out: list[Any] = []
        ids: list[int] = []
        n = self.s.range_resp(start, end, count, rev, out, ids)
        reader = hiredis.Reader()
        reader.feed(b"*%d\r\n" % n + b"".join(out))
        assert reader.gets() == [[format_id(i), fields] for i, fields in expected]
        assert ids == [i for i, _ in expected]

    @invariant()
    def consistent(self) -> None:
        self.s._check()
        # The memory estimate kept up to date step by step equals the one summed afresh.
        kept = self.s.memory_estimate()
        self.s.forget_memory_estimate()
        assert self.s.memory_estimate() == kept
        live = self.live()
        assert self.s.length == len(live)
        assert ids_of(self.s) == live
        assert self.s.first_id() == (live[0] if live else 0)
        assert self.s.last_live_id() == (live[-1] if live else 0)
        for i in live[:3] + live[-3:]:
            assert self.s.get(i) == self.model[i]


StreamVersusModel.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=50,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestStreamVersusModel = StreamVersusModel.TestCase
