"""Idempotent production in the pure engine: `IdmpState` (what a stream remembers, for how long,
how many per producer) and `idmp_ops` (XADD IDMP/IDMPAUTO, XCFGSET, XIDMPRECORD and their
effects). Time is passed in; an iid's age runs from its entry ID's millisecond."""

from __future__ import annotations

import pytest

from node.engine import idmp_ops
from node.engine.idmp import IdmpState, auto_iid
from node.engine.ids import format_id, make_id
from node.engine.stream_ops import TRIM_MAXLEN, AddTrimArgs, StreamError
from node.engine.stream_value import StreamValue

T0 = 1_700_000_000_000


def at(ms: int, seq: int = 0) -> int:
    return make_id(ms, seq)


def filled(state: IdmpState, pid: bytes, n: int, start_ms: int = T0, prefix: bytes = b"req-") -> list[int]:
    """Record iids req-1..req-n for `pid`, one millisecond apart; returns their entry IDs."""
    ids = []
    for i in range(1, n + 1):
        entry_id = at(start_ms + i)
        state.record(pid, prefix + b"%d" % i, entry_id)
        ids.append(entry_id)
    state._check()
    return ids


# -- IdmpState ----------------------------------------------------------------------------


def test_producers_are_isolated() -> None:
    state = IdmpState()
    state.record(b"p1", b"req-123", at(T0, 0))
    assert state.lookup(b"p1", b"req-123", T0) == at(T0, 0)
    assert state.lookup(b"p2", b"req-123", T0) is None
    state.record(b"p2", b"req-123", at(T0, 1))
    assert state.lookup(b"p1", b"req-123", T0) == at(T0, 0)
    assert state.lookup(b"p2", b"req-123", T0) == at(T0, 1)
    assert state.tracked(T0) == (2, 2)


def test_maxsize_forgets_the_oldest_iids_of_that_producer_only() -> None:
    state = IdmpState(maxsize=3)
    p1 = filled(state, b"p1", 3)
    filled(state, b"p2", 3, start_ms=T0 + 10)
    state.record(b"p1", b"req-4", at(T0 + 20))
    assert state.lookup(b"p1", b"req-1", T0 + 20) is None
    assert [state.lookup(b"p1", b"req-%d" % i, T0 + 20) for i in (2, 3)] == p1[1:]
    assert all(state.lookup(b"p2", b"req-%d" % i, T0 + 20) is not None for i in (1, 2, 3))
    assert state.tracked(T0 + 20) == (2, 6)
    state._check()


def test_maxsize_wraparound_keeps_the_last_entries() -> None:
    # Redis: "XCFGSET IDMP-MAXSIZE wraparound keeps last 8 entries".
    state = IdmpState(maxsize=8)
    ids = filled(state, b"p1", 100)
    for i in range(1, 101):
        expected = ids[i - 1] if i >= 93 else None
        assert state.lookup(b"p1", b"req-%d" % i, T0 + 200) == expected


def test_a_lookup_does_not_refresh_an_iids_place() -> None:
    # Redis: "XIDMP set evicts entries when MAXSIZE is reached": req-2, although answered as
    # a duplicate, goes before req-3.
    state = IdmpState(maxsize=3)
    filled(state, b"p1", 3)
    for i in (1, 2, 3):
        assert state.lookup(b"p1", b"req-%d" % i, T0 + 10) is not None
    state.record(b"p1", b"req-4", at(T0 + 11))
    state.record(b"p1", b"req-1", at(T0 + 12))
    assert state.lookup(b"p1", b"req-2", T0 + 12) is None
    assert state.lookup(b"p1", b"req-3", T0 + 12) is not None
    assert list(state.producers[b"p1"]) == [b"req-3", b"req-4", b"req-1"]


def test_an_iid_is_forgotten_duration_seconds_after_its_entrys_millisecond() -> None:
    state = IdmpState(duration=1)
    state.record(b"p1", b"req-1", at(T0))
    assert state.lookup(b"p1", b"req-1", T0 + 999) == at(T0)
    assert state.lookup(b"p1", b"req-1", T0 + 1000) is None
    assert state.tracked(T0 + 999) == (1, 1)
    assert state.tracked(T0 + 1000) == (0, 0)
    # Nothing is removed by looking: the lookup's clock decides nothing for replicas.
    assert state.find(b"p1", b"req-1") == at(T0)


def test_a_record_drops_what_expired_at_its_entrys_millisecond() -> None:
    state = IdmpState(duration=10)
    filled(state, b"p1", 3)  # T0+1 .. T0+3
    filled(state, b"idle", 1, start_ms=T0 + 3)  # T0+4
    filled(state, b"p2", 1, start_ms=T0 + 9000)  # T0+9001
    # At T0+10_002 p1's first two are 10 s old; the idle producer's only iid is not yet.
    state.record(b"p1", b"req-9", at(T0 + 10_002))
    assert list(state.producers[b"p1"]) == [b"req-3", b"req-9"]
    assert b"idle" in state.producers
    # A record by another producer drops a producer whose newest iid expired, whole.
    state.record(b"p2", b"req-2", at(T0 + 10_004))
    assert b"idle" not in state.producers
    assert list(state.producers[b"p1"]) == [b"req-3", b"req-9"]  # not swept: its newest is live
    state._check()


def test_an_expired_iid_may_be_recorded_again() -> None:
    state = IdmpState(duration=1)
    state.record(b"p1", b"req-1", at(T0))
    state.record(b"p1", b"req-1", at(T0 + 2500))
    assert state.lookup(b"p1", b"req-1", T0 + 2500) == at(T0 + 2500)
    assert state.added == 2
    assert state.tracked(T0 + 2500) == (1, 1)


def test_configure_forgets_everything_when_a_value_changes_and_nothing_otherwise() -> None:
    state = IdmpState()
    filled(state, b"p1", 2)
    state.duplicates = 4
    assert not state.configure(100, 100)
    assert state.tracked(T0) == (1, 2)
    assert state.configure(60, 100)
    assert (state.duration, state.maxsize, state.tracked(T0), state.added, state.duplicates) == (60, 100, (0, 0), 2, 4)
    filled(state, b"p1", 1)
    assert state.configure(60, 5)
    assert state.producers == {}


def test_records_out_of_entry_order_keep_every_fifo_ordered() -> None:
    """XIDMPRECORD may name any entry: the FIFOs stay ordered by entry ID, so expiry and
    MAXSIZE still drop the oldest."""
    state = IdmpState(maxsize=3)
    state.record(b"p1", b"c", at(T0 + 30))
    state.record(b"p2", b"x", at(T0 + 40))
    state.record(b"p1", b"a", at(T0 + 10))
    state.record(b"p3", b"old", at(T0 + 5))
    state._check()
    assert list(state.producers) == [b"p3", b"p1", b"p2"]
    assert list(state.producers[b"p1"]) == [b"a", b"c"]
    state.record(b"p1", b"b", at(T0 + 20))
    state.record(b"p1", b"d", at(T0 + 50))
    assert list(state.producers[b"p1"]) == [b"b", b"c", b"d"]
    assert list(state.producers) == [b"p3", b"p2", b"p1"]
    state._check()


def test_copy_is_independent() -> None:
    state = IdmpState(duration=5, maxsize=7)
    filled(state, b"p1", 2)
    clone = state.copy()
    state.record(b"p1", b"req-3", at(T0 + 5))
    state.configure(6, 7)
    assert (clone.duration, list(clone.producers[b"p1"]), clone.added) == (5, [b"req-1", b"req-2"], 2)


def test_auto_iid_ignores_pair_order_but_not_names_values_or_repeats() -> None:
    argv = [b"XADD", b"s", b"*", b"field1", b"a", b"field2", b"b", b"field3", b"c"]
    reordered = [b"XADD", b"s", b"*", b"field2", b"b", b"field3", b"c", b"field1", b"a"]
    assert auto_iid(argv, 3) == auto_iid(reordered, 3)
    assert len(auto_iid(argv, 3)) == 16
    one = [b"f", b"v"]
    assert auto_iid([b"field1", b"value"], 0) != auto_iid([b"field2", b"value"], 0)
    assert auto_iid(one, 0) != auto_iid([b"f", b"w"], 0)
    assert auto_iid([b"f", b""], 0) != auto_iid([b"f", b"value"], 0)
    assert auto_iid([b"f", b"\x00\x01\x02\xff"], 0) == auto_iid([b"f", b"\x00\x01\x02\xff"], 0)
    # Redis XORs per-pair hashes, so repeated pairs cancel out; Rill's do not.
    assert auto_iid(one * 2, 0) != auto_iid([b"g", b"w"] * 2, 0)
    # A field/value boundary is part of the pair.
    assert auto_iid([b"ab", b"c"], 0) != auto_iid([b"a", b"bc"], 0)


# -- idmp_ops -----------------------------------------------------------------------------


def xadd_args(argv: list[bytes], replay_id: int = 0) -> AddTrimArgs:
    """The parsed form of `XADD key IDMP|IDMPAUTO ... [MAXLEN n] <*|id> fields` (no parser here)."""
    args = AddTrimArgs()
    i = 2
    while True:
        word = argv[i]
        if word == b"IDMP":
            args.idmp_pid, args.idmp_iid = argv[i + 1], argv[i + 2]
            i += 3
        elif word == b"IDMPAUTO":
            args.idmp_pid = argv[i + 1]
            i += 2
        elif word == b"MAXLEN":
            args.strategy = TRIM_MAXLEN
            i += 1
            if argv[i] == b"=":
                i += 1
            args.maxlen = int(argv[i])
            args.threshold_pos = i
            i += 1
        else:
            break
    args.id_pos = i
    if argv[i] != b"*":
        args.id_given = True
        args.entry_id = replay_id
    return args


def run_xadd(value: StreamValue, now: int, *argv: bytes, replay_id: int = 0) -> tuple[int, bool, list[bytes]]:
    args_list = [b"XADD", b"s", *argv]
    return idmp_ops.xadd_idmp(value, args_list, xadd_args(args_list, replay_id), now, 100, 4096, replay_id != 0)


def test_a_duplicate_answers_the_original_id_adds_and_trims_nothing_and_is_logged() -> None:
    s = StreamValue()
    first, added, effect = run_xadd(s, T0, b"IDMP", b"p1", b"payment-abc", b"*", b"amount", b"100")
    assert added and first == at(T0)
    assert effect == [b"XADD", b"s", b"IDMP", b"p1", b"payment-abc", format_id(first), b"amount", b"100"]
    run_xadd(s, T0 + 1, b"IDMP", b"p1", b"other", b"*", b"amount", b"300")
    again, added, effect = run_xadd(s, T0 + 2, b"IDMP", b"p1", b"payment-abc", b"MAXLEN", b"1", b"*", b"amount", b"200")
    assert (again, added) == (first, False)
    assert (s.length, s.get(first)) == (2, [b"amount", b"100"])
    assert effect == [b"XADD", b"s", b"IDMP", b"p1", b"payment-abc", format_id(first), b"amount", b"200"]
    assert s.idmp is not None and (s.idmp.added, s.idmp.duplicates) == (2, 1)


def test_trimming_and_deletion_leave_the_map_alone() -> None:
    s = StreamValue()
    first, _, _ = run_xadd(s, T0, b"IDMP", b"p1", b"a", b"*", b"f", b"v")
    _, _, effect = run_xadd(s, T0 + 1, b"IDMP", b"p1", b"b", b"MAXLEN", b"0", b"*", b"f", b"v")
    assert s.length == 0
    # The trim is logged exact, before the generated ID.
    assert effect == [b"XADD", b"s", b"IDMP", b"p1", b"b", b"MAXLEN", b"=", b"0", format_id(at(T0 + 1)), b"f", b"v"]
    assert run_xadd(s, T0 + 2, b"IDMP", b"p1", b"a", b"*", b"f", b"v")[:2] == (first, False)


def test_idmpauto_logs_the_iid_it_computed() -> None:
    s = StreamValue()
    entry_id, _, effect = run_xadd(s, T0, b"IDMPAUTO", b"p2", b"*", b"a", b"1", b"b", b"2")
    assert effect == [b"XADD", b"s", b"IDMP", b"p2", auto_iid([b"a", b"1", b"b", b"2"], 0), format_id(entry_id),
                      b"a", b"1", b"b", b"2"]
    assert run_xadd(s, T0 + 5, b"IDMPAUTO", b"p2", b"*", b"b", b"2", b"a", b"1")[:2] == (entry_id, False)


def test_the_logged_forms_replay_to_the_same_decisions_whatever_the_replicas_clock() -> None:
    primary = StreamValue()
    log = idmp_ops.xcfgset(primary, b"s", 1, -1)
    replies = []
    for now, iid in ((T0, b"a"), (T0 + 500, b"a"), (T0 + 1500, b"b"), (T0 + 1600, b"a")):
        entry_id, added, effect = run_xadd(primary, now, b"IDMP", b"p", iid, b"*", b"f", b"v")
        replies.append((entry_id, added))
        log.append(effect)
    assert replies == [(at(T0), True), (at(T0), False), (at(T0 + 1500), True), (at(T0 + 1600), True)]
    replica = StreamValue()
    for effect in log:
        if effect[0] == b"XCFGSET":
            idmp_ops.xcfgset(replica, b"s", int(effect[3]), int(effect[5]))
            continue
        ms, seq = effect[5].split(b"-")
        # The replica's clock is far behind: it must not matter.
        run_xadd(replica, 0, *effect[2:], replay_id=at(int(ms), int(seq)))
    assert replica.length == primary.length == 3
    assert replica.idmp is not None and primary.idmp is not None
    assert list(replica.idmp.producers[b"p"].items()) == list(primary.idmp.producers[b"p"].items())
    assert list(primary.idmp.producers[b"p"]) == [b"b", b"a"]
    assert (replica.idmp.added, replica.idmp.duplicates) == (primary.idmp.added, primary.idmp.duplicates) == (3, 1)


def test_a_replayed_duplicate_counts_only_when_the_map_names_that_entry() -> None:
    s = StreamValue()
    first, _, _ = run_xadd(s, T0, b"IDMP", b"p", b"a", b"*", b"f", b"v")
    assert run_xadd(s, 0, b"IDMP", b"p", b"a", format_id(first), b"f", b"v", replay_id=first)[:2] == (first, False)
    assert s.idmp is not None and s.idmp.duplicates == 1
    # A log that names another entry for a remembered iid is an add: here it is refused
    # (the ID is not above the last one), which makes a diverged replica stop.
    with pytest.raises(StreamError):
        run_xadd(s, 0, b"IDMP", b"p", b"a", format_id(at(T0 - 5)), b"f", b"v", replay_id=at(T0 - 5))


def test_xcfgset_keeps_the_other_value_and_logs_both_only_on_a_change() -> None:
    s = StreamValue()
    assert idmp_ops.xcfgset(s, b"s", 100, -1) == []
    assert s.idmp is None
    assert idmp_ops.xcfgset(s, b"s", -1, 50) == [[b"XCFGSET", b"s", b"IDMP-DURATION", b"100", b"IDMP-MAXSIZE", b"50"]]
    assert idmp_ops.xcfgset(s, b"s", 600, -1) == [[b"XCFGSET", b"s", b"IDMP-DURATION", b"600", b"IDMP-MAXSIZE", b"50"]]
    assert s.idmp is not None and (s.idmp.duration, s.idmp.maxsize) == (600, 50)


def test_a_new_stream_takes_non_default_settings_with_an_effect() -> None:
    s = StreamValue()
    assert idmp_ops.new_stream_settings(s, b"k", 100, 100) == [] and s.idmp is None
    assert idmp_ops.new_stream_settings(s, b"k", 7, 9) == [[b"XCFGSET", b"k", b"IDMP-DURATION", b"7", b"IDMP-MAXSIZE", b"9"]]
    assert s.idmp is not None and (s.idmp.duration, s.idmp.maxsize) == (7, 9)


def test_xidmprecord_from_a_client_needs_a_live_entry_and_no_other_mapping() -> None:
    s = StreamValue()
    s.add(at(T0), [b"f", b"v"])
    s.add(at(T0 + 1), [b"f", b"w"])
    argv = [b"XIDMPRECORD", b"s", b"p", b"i", format_id(at(T0))]
    with pytest.raises(StreamError):
        idmp_ops.xidmprecord(s, argv, b"p", b"i", at(T0 + 7), T0, replay=False)
    assert idmp_ops.xidmprecord(s, argv, b"p", b"i", at(T0), T0, replay=False) == [argv]
    assert idmp_ops.xidmprecord(s, argv, b"p", b"i", at(T0), T0, replay=False) == []  # already so
    with pytest.raises(StreamError):
        idmp_ops.xidmprecord(s, argv, b"p", b"i", at(T0 + 1), T0, replay=False)
    assert s.idmp is not None and s.idmp.added == 1
    # The log may name an entry that is gone (trimmed by the XADD that created the stream).
    s.delete(at(T0 + 1))
    assert idmp_ops.xidmprecord(s, argv, b"p", b"j", at(T0 + 1), T0, replay=True) == [argv]
