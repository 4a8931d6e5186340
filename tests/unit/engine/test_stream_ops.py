"""Stream writes as pure functions: each one's result, the state it leaves, and the effects
that replay it (Redis 7.4's propagation, plus Rill's consumer-creation and history
effects). Also the read counter and lag rules."""

from __future__ import annotations

from typing import Any

import hiredis
import pytest

from node.engine import stream_append
from node.engine import stream_ops as ops
from node.engine.groups import INVALID_ENTRIES_READ, ConsumerGroup
from node.engine.ids import MAX_ID, MAX_MS, MAX_SEQ, format_id, make_id
from node.engine.stream_ops import TRIM_MAXLEN, TRIM_MINID, AddTrimArgs, ClaimOptions, StreamError
from node.engine.stream_value import StreamValue

NOW = 1_700_000_000_000


def I(ms: int, seq: int = 0) -> int:  # noqa: E743 - an ID literal, as tests read best
    return make_id(ms, seq)


def stream_with(*ids: int, max_entries: int = 100) -> StreamValue:
    s = StreamValue()
    for i in ids:
        s.add(i, [b"f", b"%d" % (i >> 64)], max_entries, 4096)
    return s


def group_on(s: StreamValue, name: bytes = b"g", last_id: int = 0, entries_read: int = INVALID_ENTRIES_READ) -> ConsumerGroup:
    g = ConsumerGroup(last_id, entries_read)
    s.add_group(name, g)
    return g


def xclaim_eff(key: bytes, group: bytes, consumer: bytes, i: int, t: int, n: int, last: int) -> list[bytes]:
    return [
        b"XCLAIM", key, group, consumer, b"0", format_id(i), b"TIME", b"%d" % t, b"RETRYCOUNT", b"%d" % n,
        b"FORCE", b"JUSTID", b"LASTID", format_id(last),
    ]  # fmt: skip


# -- XADD --------------------------------------------------------------------------------


def test_auto_id_uses_the_clock_millisecond_when_it_is_ahead() -> None:
    s = stream_with(I(5, 3))
    assert stream_append.next_auto_id(s, NOW) == I(NOW, 0)


def test_auto_id_increments_the_sequence_when_the_clock_is_behind() -> None:
    s = stream_with(I(NOW + 10, 3))
    assert stream_append.next_auto_id(s, NOW) == I(NOW + 10, 4)


def test_xadd_star_effect_names_the_generated_id() -> None:
    s = StreamValue()
    argv = [b"XADD", b"k", b"*", b"a", b"1"]
    effect = stream_append.xadd_plain(s, argv, -1, 0, NOW, 100, 4096)
    assert s.last_id == I(NOW)
    assert effect == [b"XADD", b"k", format_id(I(NOW)), b"a", b"1"]
    assert argv[2] == b"*", "the client's argv is left alone"
    assert s.get(I(NOW)) == [b"a", b"1"]


def test_xadd_ms_star_continues_the_sequence_of_the_same_millisecond() -> None:
    s = stream_with(I(7, 4))
    argv = [b"XADD", b"k", b"7-*", b"a", b"1"]
    args = AddTrimArgs(id_pos=2, entry_id=I(7), id_given=True, seq_given=False)
    new_id, effect = stream_append.xadd(s, argv, args, NOW, 100, 4096)
    assert new_id == I(7, 5)
    assert effect[2] == b"7-5"


def test_xadd_ms_star_in_a_new_millisecond_starts_at_zero() -> None:
    s = stream_with(I(7, 4))
    args = AddTrimArgs(id_pos=2, entry_id=I(9), id_given=True, seq_given=False)
    assert stream_append.xadd(s, [b"XADD", b"k", b"9-*", b"a", b"1"], args, NOW, 100, 4096)[0] == I(9, 0)


def test_xadd_explicit_id_not_above_the_top_is_refused() -> None:
    s = stream_with(I(7, 4))
    args = AddTrimArgs(id_pos=2, entry_id=I(7, 4), id_given=True)
    with pytest.raises(StreamError, match="equal or smaller than the target stream top item"):
        stream_append.xadd(s, [b"XADD", b"k", b"7-4", b"a", b"1"], args, NOW, 100, 4096)
    assert s.length == 1


def test_xadd_on_an_exhausted_stream_is_refused() -> None:
    s = StreamValue()
    s.last_id = MAX_ID
    with pytest.raises(StreamError, match="exhausted the last possible ID"):
        stream_append.xadd_plain(s, [b"XADD", b"k", b"*", b"a", b"1"], -1, 0, NOW, 100, 4096)


@pytest.mark.parametrize(
    ("last", "now", "expected"),
    [
        (I(NOW - 5, 3), NOW, I(NOW, 0)),  # the clock is ahead: its millisecond, seq 0
        (I(NOW, 3), NOW, I(NOW, 4)),  # same millisecond: next seq
        (I(NOW + 9, 3), NOW, I(NOW + 9, 4)),  # the clock went back: last ms reused
        (I(NOW, MAX_SEQ), NOW, I(NOW + 1, 0)),  # seq exhausted: carries into the ms
        (I(NOW, 1023), NOW, I(NOW, 1024)),  # past the formatter's small-seq table
        (I(MAX_MS - 1, MAX_SEQ), NOW, I(MAX_MS, 0)),
    ],
)
def test_xadd_star_ids_and_their_wire_form(last: int, now: int, expected: int) -> None:
    s = StreamValue()
    s.last_id = last
    effect = stream_append.xadd_plain(s, [b"XADD", b"k", b"*", b"a", b"1"], -1, 0, now, 100, 4096)
    assert s.last_id == expected
    assert (s.last_ms, s.last_seq) == (expected >> 64, expected & MAX_SEQ)
    assert effect == [b"XADD", b"k", format_id(expected), b"a", b"1"]
    s._check()


def test_xadd_plain_with_a_complete_id_propagates_the_clients_text_and_refuses_the_top() -> None:
    s = stream_with(I(7, 4))
    argv = [b"XADD", b"k", b"0007-5", b"a", b"1"]
    effect = stream_append.xadd_plain(s, argv, 7, 5, NOW, 100, 4096)
    assert s.last_id == I(7, 5)
    assert effect == argv and effect is not argv
    with pytest.raises(StreamError, match="equal or smaller than the target stream top item"):
        stream_append.xadd_plain(s, [b"XADD", b"k", b"7-5", b"a", b"1"], 7, 5, NOW, 100, 4096)
    s.last_id = MAX_ID
    with pytest.raises(StreamError, match="exhausted the last possible ID"):
        stream_append.xadd_plain(s, [b"XADD", b"k", b"9-1", b"a", b"1"], 9, 1, NOW, 100, 4096)


def test_xadd_explicit_id_with_exact_trim_is_propagated_verbatim() -> None:
    s = stream_with(I(1), I(2), I(3))
    argv = [b"XADD", b"k", b"MAXLEN", b"2", b"4-0", b"a", b"1"]
    args = AddTrimArgs(id_pos=4, entry_id=I(4), id_given=True, strategy=TRIM_MAXLEN, threshold_pos=3, maxlen=2)
    _, effect = stream_append.xadd(s, argv, args, NOW, 100, 4096)
    assert effect == argv
    assert [i for i, _ in s.range(0, MAX_ID)] == [I(3), I(4)]


def test_xadd_approximate_maxlen_is_rewritten_to_the_resulting_length() -> None:
    # Nodes of 2 entries: `~ 3` can only drop whole nodes: the first goes, 3 entries stay.
    s = stream_with(I(1), I(2), I(3), I(4), max_entries=2)
    argv = [b"XADD", b"k", b"MAXLEN", b"~", b"3", b"*", b"a", b"1"]
    args = AddTrimArgs(id_pos=5, strategy=TRIM_MAXLEN, threshold_pos=4, approx=True, maxlen=3, limit=10000)
    new_id, effect = stream_append.xadd(s, argv, args, NOW, 2, 4096)
    assert s.length == 3
    assert effect == [b"XADD", b"k", b"MAXLEN", b"=", b"3", format_id(new_id), b"a", b"1"]


def test_xadd_approximate_minid_is_rewritten_to_the_first_stored_id() -> None:
    s = stream_with(I(1), I(2), I(3), I(4), max_entries=2)
    s.delete(I(3))  # a tombstone at the head of the surviving node
    argv = [b"XADD", b"k", b"MINID", b"~", b"4", b"5-0", b"a", b"1"]
    args = AddTrimArgs(id_pos=5, entry_id=I(5), id_given=True, strategy=TRIM_MINID, threshold_pos=4,
                       approx=True, minid=I(4), limit=10000)  # fmt: skip
    _, effect = stream_append.xadd(s, argv, args, NOW, 2, 4096)
    # The deleted 3-0 still heads its node, and Redis names the first stored entry.
    assert effect[3:5] == [b"=", b"3-0"]


def test_xadd_rewrite_keeps_a_limit_argument_as_redis_does() -> None:
    s = stream_with(I(1), I(2))
    argv = [b"XADD", b"k", b"MAXLEN", b"~", b"1", b"LIMIT", b"5", b"3-0", b"a", b"1"]
    args = AddTrimArgs(id_pos=7, entry_id=I(3), id_given=True, strategy=TRIM_MAXLEN, threshold_pos=4,
                       approx=True, maxlen=1, limit=5)  # fmt: skip
    _, effect = stream_append.xadd(s, argv, args, NOW, 100, 4096)
    assert effect == [b"XADD", b"k", b"MAXLEN", b"=", b"3", b"LIMIT", b"5", b"3-0", b"a", b"1"]


# -- XTRIM, XDEL, XSETID -----------------------------------------------------------------


def test_xtrim_that_removes_nothing_has_no_effect() -> None:
    s = stream_with(I(1), I(2))
    args = AddTrimArgs(strategy=TRIM_MAXLEN, threshold_pos=3, maxlen=5)
    assert ops.xtrim(s, [b"XTRIM", b"k", b"MAXLEN", b"5"], args) == (0, [])


def test_xtrim_approximate_effect_is_exact() -> None:
    s = stream_with(*[I(i) for i in range(1, 8)], max_entries=2)
    argv = [b"XTRIM", b"k", b"MAXLEN", b"~", b"2"]
    args = AddTrimArgs(strategy=TRIM_MAXLEN, threshold_pos=4, approx=True, maxlen=2, limit=10000)
    removed, effects = ops.xtrim(s, argv, args)
    assert removed == 4 and s.length == 3
    assert effects == [[b"XTRIM", b"k", b"MAXLEN", b"=", b"3"]]


def test_xdel_propagates_only_when_something_was_deleted() -> None:
    s = stream_with(I(1), I(2))
    argv = [b"XDEL", b"k", b"1-0", b"9-0"]
    assert ops.xdel(s, argv, [I(1), I(9)]) == (1, [argv])
    assert ops.xdel(s, argv, [I(1), I(9)]) == (0, [])
    assert s.max_deleted_id == I(1)


def test_xsetid_refuses_an_id_below_the_top_entry() -> None:
    s = stream_with(I(5))
    with pytest.raises(StreamError, match="smaller than the target stream top item"):
        ops.xsetid(s, [b"XSETID", b"k", b"4-0"], I(4), -1, 0)


def test_xsetid_refuses_entries_added_below_the_length() -> None:
    s = stream_with(I(5), I(6))
    with pytest.raises(StreamError, match="entries_added specified in XSETID is smaller"):
        ops.xsetid(s, [b"XSETID", b"k", b"9-0"], I(9), 1, 0)


def test_xsetid_refuses_an_id_below_the_greatest_deleted_id() -> None:
    s = stream_with(I(5), I(6))
    s.delete(I(6))
    with pytest.raises(StreamError, match="smaller than current max_deleted_entry_id"):
        ops.xsetid(s, [b"XSETID", b"k", b"5-5"], I(5, 5), -1, 0)


def test_xsetid_sets_the_counters_and_is_silent_when_nothing_changes() -> None:
    s = stream_with(I(5))
    argv = [b"XSETID", b"k", b"9-0", b"ENTRIESADDED", b"10", b"MAXDELETEDID", b"3-0"]
    assert ops.xsetid(s, argv, I(9), 10, I(3)) == [argv]
    assert (s.last_id, s.entries_added, s.max_deleted_id) == (I(9), 10, I(3))
    assert ops.xsetid(s, argv, I(9), 10, I(3)) == []


# -- read counters and lag (Redis 7.4 rules) -----------------------------------------------


def test_lag_of_a_stream_never_written_is_zero() -> None:
    s = StreamValue()
    assert ops.group_lag(s, group_on(s)) == 0


def test_lag_of_a_group_before_the_first_entry_is_the_length() -> None:
    s = stream_with(I(1), I(2), I(3))
    assert ops.group_lag(s, group_on(s)) == 3


def test_lag_uses_a_valid_read_counter() -> None:
    s = stream_with(I(1), I(2), I(3))
    assert ops.group_lag(s, group_on(s, last_id=I(2), entries_read=2)) == 1


def test_lag_is_unknown_with_a_tombstone_after_the_groups_position() -> None:
    s = stream_with(I(1), I(2), I(3), I(4))
    s.delete(I(3))
    assert ops.group_lag(s, group_on(s, last_id=I(1), entries_read=1)) is None


def test_lag_of_a_group_at_the_last_id_is_zero_even_after_deletions() -> None:
    s = stream_with(I(1), I(2), I(3))
    s.delete(I(2))
    assert ops.group_lag(s, group_on(s, last_id=I(3))) == 0


def test_lag_of_an_emptied_stream_is_zero() -> None:
    s = stream_with(I(1), I(2))
    s.delete(I(1))
    s.delete(I(2))
    assert ops.group_lag(s, group_on(s, last_id=0)) == 0


def test_estimate_distance_of_the_first_entry_without_tombstones_is_exact() -> None:
    s = stream_with(I(1), I(2), I(3))
    s.trim_maxlen(2, False, 0)  # trimming leaves no tombstone record
    first = s.first_id()
    assert first == I(2)
    assert ops.estimate_distance(s, I(2), first) == 2
    assert ops.estimate_distance(s, I(1), first) == 1
    assert ops.estimate_distance(s, I(2, 5), first) == INVALID_ENTRIES_READ
    assert ops.estimate_distance(s, I(9), first) == INVALID_ENTRIES_READ


# -- XREADGROUP ------------------------------------------------------------------------------


def resp_entries(out: list[Any], n: int) -> Any:
    """The `n` entries read_group wrote to `out` as RESP, parsed."""
    reader = hiredis.Reader()
    reader.feed(b"*%d\r\n" % n + b"".join(out))
    return reader.gets()


def test_read_new_entries_delivers_and_propagates_claims_then_the_group_position() -> None:
    s = stream_with(I(1), I(2), I(3))
    g = group_on(s, entries_read=0)
    effects: list[list[bytes]] = []
    out: list[Any] = []
    got = ops.read_group(s, b"k", b"g", g, b"c", None, 2, False, NOW, effects, out)
    assert got == 2 and resp_entries(out, 2) == [[b"1-0", [b"f", b"1"]], [b"2-0", [b"f", b"2"]]]
    assert (g.last_id, g.entries_read) == (I(2), 2)
    assert effects == [
        xclaim_eff(b"k", b"g", b"c", I(1), NOW, 1, I(1)),
        xclaim_eff(b"k", b"g", b"c", I(2), NOW, 1, I(2)),
        [b"XGROUP", b"SETID", b"k", b"g", b"2-0", b"ENTRIESREAD", b"2"],
    ]
    g._check()


def test_read_with_nothing_new_returns_none_but_creates_the_consumer_explicitly() -> None:
    s = stream_with(I(1))
    g = group_on(s, last_id=I(1))
    effects: list[list[bytes]] = []
    assert ops.read_group(s, b"k", b"g", g, b"c", None, 0, False, NOW, effects, []) is None
    assert effects == [[b"XGROUP", b"CREATECONSUMER", b"k", b"g", b"c"]]
    effects.clear()
    assert ops.read_group(s, b"k", b"g", g, b"c", None, 0, False, NOW + 5, effects, []) is None
    assert effects == [], "a read that changes nothing replicated logs nothing"
    assert g.consumers[b"c"].seen_time == NOW + 5


def test_noack_read_creates_the_consumer_then_moves_the_group_without_pending_entries() -> None:
    s = stream_with(I(1), I(2))
    g = group_on(s)
    effects: list[list[bytes]] = []
    got = ops.read_group(s, b"k", b"g", g, b"c", None, 0, True, NOW, effects, [])
    assert got == 2
    assert not g.pel
    assert effects == [
        [b"XGROUP", b"CREATECONSUMER", b"k", b"g", b"c"],
        [b"XGROUP", b"SETID", b"k", b"g", b"2-0", b"ENTRIESREAD", b"2"],
    ]


def test_history_read_redelivers_own_entries_and_reports_deleted_ones_without_fields() -> None:
    s = stream_with(I(1), I(2), I(3))
    g = group_on(s)
    ops.read_group(s, b"k", b"g", g, b"c", None, 0, False, NOW, [], [])
    s.delete(I(2))
    effects: list[list[bytes]] = []
    got = ops.read_group(s, b"k", b"g", g, b"c", 0, 0, False, NOW + 7, effects, [])
    assert got == [(I(1), [b"f", b"1"]), (I(2), None), (I(3), [b"f", b"3"])]
    assert g.pel[I(1)] == (NOW + 7, 2, b"c")
    assert g.pel[I(2)] == (NOW, 1, b"c"), "a deleted entry keeps its delivery attributes"
    assert effects == [
        xclaim_eff(b"k", b"g", b"c", I(1), NOW + 7, 2, I(3)),
        xclaim_eff(b"k", b"g", b"c", I(3), NOW + 7, 2, I(3)),
    ]


def test_history_read_sees_only_the_consumers_own_entries_after_the_id() -> None:
    s = stream_with(I(1), I(2), I(3))
    g = group_on(s)
    ops.read_group(s, b"k", b"g", g, b"a", None, 1, False, NOW, [], [])
    ops.read_group(s, b"k", b"g", g, b"b", None, 2, False, NOW, [], [])
    got = ops.read_group(s, b"k", b"g", g, b"b", I(2), 0, False, NOW, [], [])
    assert got == [(I(3), [b"f", b"3"])]


def test_read_counter_is_estimated_again_after_a_tombstone_ahead() -> None:
    s = stream_with(I(1), I(2), I(3), I(4))
    g = group_on(s, entries_read=0)
    s.delete(I(3))
    ops.read_group(s, b"k", b"g", g, b"c", None, 1, False, NOW, [], [])
    # A tombstone after the group's position: the counter cannot be trusted any more.
    assert g.entries_read == INVALID_ENTRIES_READ
    ops.read_group(s, b"k", b"g", g, b"c", None, 0, False, NOW, [], [])
    assert (g.last_id, g.entries_read) == (I(4), 4)


# -- XCLAIM, XAUTOCLAIM ----------------------------------------------------------------------


def delivered(s: StreamValue, consumer: bytes, at: int) -> ConsumerGroup:
    g = group_on(s)
    ops.read_group(s, b"k", b"g", g, consumer, None, 0, False, at, [], [])
    return g


def test_xclaim_respects_min_idle_and_increments_the_count() -> None:
    s = stream_with(I(1), I(2))
    g = delivered(s, b"a", NOW - 100)
    g.redeliver(I(2), NOW - 10)
    claimed, effects = ops.xclaim(s, b"k", b"g", g, b"b", [I(1), I(2)], ClaimOptions(min_idle=50), NOW)
    assert claimed == [I(1)]
    assert g.pel[I(1)] == (NOW, 2, b"b")
    assert g.pel[I(2)][2] == b"a"
    assert effects == [xclaim_eff(b"k", b"g", b"b", I(1), NOW, 2, I(2))]
    g._check()


def test_xclaim_justid_keeps_the_count_and_retrycount_sets_it() -> None:
    s = stream_with(I(1), I(2))
    g = delivered(s, b"a", NOW)
    ops.xclaim(s, b"k", b"g", g, b"a", [I(1)], ClaimOptions(justid=True), NOW)
    ops.xclaim(s, b"k", b"g", g, b"a", [I(2)], ClaimOptions(retry_count=9), NOW)
    assert g.pel[I(1)][1] == 1 and g.pel[I(2)][1] == 9


def test_xclaim_force_creates_a_pending_entry_only_for_an_existing_entry() -> None:
    s = stream_with(I(1))
    g = group_on(s)
    claimed, _ = ops.xclaim(s, b"k", b"g", g, b"a", [I(1), I(5)], ClaimOptions(force=True), NOW)
    assert claimed == [I(1)]
    assert g.pel[I(1)] == (NOW, 2, b"a"), "Redis counts the forced creation as a delivery"


def test_xclaim_of_a_deleted_entry_drops_it_and_names_the_old_owner() -> None:
    s = stream_with(I(1), I(2))
    g = delivered(s, b"a", NOW - 5)
    s.delete(I(1))
    claimed, effects = ops.xclaim(s, b"k", b"g", g, b"b", [I(1)], ClaimOptions(), NOW)
    assert claimed == []
    assert I(1) not in g.pel
    assert effects == [
        [b"XGROUP", b"CREATECONSUMER", b"k", b"g", b"b"],
        xclaim_eff(b"k", b"g", b"a", I(1), NOW - 5, 1, I(2)),
    ]
    g._check()


def test_xclaim_lastid_moves_the_group_and_propagates_it_when_nothing_is_claimed() -> None:
    s = stream_with(I(1))
    g = group_on(s, entries_read=1)
    claimed, effects = ops.xclaim(s, b"k", b"g", g, b"a", [I(7)], ClaimOptions(last_id=I(5)), NOW)
    assert claimed == [] and g.last_id == I(5)
    assert effects[-1] == [b"XGROUP", b"SETID", b"k", b"g", b"5-0", b"ENTRIESREAD", b"1"]


def test_xclaim_time_in_the_future_means_now_unless_replaying() -> None:
    s = stream_with(I(1), I(2))
    g = delivered(s, b"a", NOW)
    ops.xclaim(s, b"k", b"g", g, b"a", [I(1)], ClaimOptions(delivery_time=NOW + 500), NOW)
    ops.xclaim(s, b"k", b"g", g, b"a", [I(2)], ClaimOptions(delivery_time=NOW + 500), NOW, trust_time=True)
    assert g.pel[I(1)][0] == NOW and g.pel[I(2)][0] == NOW + 500


def test_xautoclaim_pages_with_a_cursor() -> None:
    s = stream_with(I(1), I(2), I(3))
    g = delivered(s, b"a", NOW - 100)
    cursor, claimed, deleted, effects = ops.xautoclaim(s, b"k", b"g", g, b"b", 10, 0, 2, False, NOW)
    assert (cursor, claimed, deleted) == (I(3), [I(1), I(2)], [])
    assert len(effects) == 2
    cursor, claimed, _, _ = ops.xautoclaim(s, b"k", b"g", g, b"b", 10, cursor, 2, False, NOW)
    assert (cursor, claimed) == (0, [I(3)])
    assert all(nack[2] == b"b" and nack[1] == 2 for nack in g.pel.values())


def test_xautoclaim_removes_deleted_entries_and_counts_them_against_count() -> None:
    s = stream_with(I(1), I(2), I(3))
    g = delivered(s, b"a", NOW - 100)
    s.delete(I(1))
    cursor, claimed, deleted, effects = ops.xautoclaim(s, b"k", b"g", g, b"b", 0, 0, 2, True, NOW)
    assert (cursor, claimed, deleted) == (I(3), [I(2)], [I(1)])
    assert effects[0] == xclaim_eff(b"k", b"g", b"a", I(1), NOW - 100, 1, I(3))
    assert g.pel[I(2)] == (NOW, 1, b"b"), "JUSTID does not count a delivery"


def test_xautoclaim_scans_at_most_ten_times_count() -> None:
    s = stream_with(*[I(i) for i in range(1, 31)])
    g = delivered(s, b"a", NOW)
    cursor, claimed, _, effects = ops.xautoclaim(s, b"k", b"g", g, b"b", 1000, 0, 2, False, NOW)
    assert claimed == [] and cursor == I(21)
    assert effects == [[b"XGROUP", b"CREATECONSUMER", b"k", b"g", b"b"]]


# -- XACK, XGROUP --------------------------------------------------------------------------


def test_xack_propagates_only_when_it_acknowledged_something() -> None:
    s = stream_with(I(1))
    g = delivered(s, b"a", NOW)
    argv = [b"XACK", b"k", b"g", b"1-0"]
    assert ops.xack(g, argv, [I(1)]) == (1, [argv])
    assert ops.xack(g, argv, [I(1)]) == (0, [])


def test_group_create_twice_is_busygroup() -> None:
    s = StreamValue()
    ops.group_create(s, [b"XGROUP", b"CREATE", b"k", b"g", b"0"], b"g", 0, INVALID_ENTRIES_READ)
    with pytest.raises(StreamError, match="BUSYGROUP"):
        ops.group_create(s, [], b"g", 0, INVALID_ENTRIES_READ)


def test_group_setid_to_the_same_position_logs_nothing() -> None:
    s = StreamValue()
    g = group_on(s)
    argv = [b"XGROUP", b"SETID", b"k", b"g", b"0"]
    assert ops.group_setid(s, g, argv, 0, INVALID_ENTRIES_READ) == []
    assert ops.group_setid(s, g, argv, I(3), 2) == [argv]


def test_entries_read_is_clamped_to_entries_added() -> None:
    """Redis 8.2.2 (redis#14257): ENTRIESREAD past entries-added is cut down to it, so the
    lag cannot go negative (redis-py 8.1's test_xgroup_setid_fixed_max_entries_read)."""
    s = StreamValue()
    g = group_on(s)
    s.entries_added = 2
    argv = [b"XGROUP", b"SETID", b"k", b"g", b"0"]
    ops.group_setid(s, g, argv, I(1), 5)
    assert g.entries_read == 2
    ops.group_create(s, [], b"h", 0, 7)
    assert s.group(b"h").entries_read == 2


def test_destroy_and_consumer_management_report_and_log_only_changes() -> None:
    s = stream_with(I(1))
    g = delivered(s, b"a", NOW)
    assert ops.group_create_consumer(g, [b"x"], b"a", NOW) == (False, [])
    assert ops.group_create_consumer(g, [b"x"], b"b", NOW) == (True, [[b"x"]])
    assert ops.group_delete_consumer(g, [b"y"], b"a") == (1, [[b"y"]])
    assert ops.group_delete_consumer(g, [b"y"], b"a") == (0, [])
    assert ops.group_destroy(s, [b"z"], b"g") == (True, [[b"z"]])
    assert ops.group_destroy(s, [b"z"], b"g") == (False, [])
    assert s.groups is None


def test_stream_value_copy_carries_the_groups() -> None:
    s = stream_with(I(1), I(2))
    g = delivered(s, b"a", NOW)
    c = s.copy()
    c._check()
    assert type(c) is StreamValue
    cg = c.group(b"g")
    assert cg is not None and cg is not g and dict(cg.pel) == dict(g.pel)
    c.delete(I(1))
    assert s.get(I(1)) is not None
