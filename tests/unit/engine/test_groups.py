"""Consumer groups: the pending entries list and the consumers' own PELs stay consistent
under every operation (ConsumerGroup._check after each step), and a large PEL stays cheap."""

from __future__ import annotations

import gc
import random

import pytest

from node.engine.groups import INVALID_ENTRIES_READ, ConsumerGroup, pending_counts
from node.engine.sorted_ids import LOAD


def make_group(*names: bytes) -> ConsumerGroup:
    g = ConsumerGroup(0)
    for name in names:
        assert g.create_consumer(name, 100) is not None
    return g


def test_new_group_has_unknown_read_counter_and_no_consumers() -> None:
    g = ConsumerGroup(5)
    assert g.last_id == 5
    assert g.entries_read == INVALID_ENTRIES_READ
    assert not g.pel and not g.consumers
    g._check()


def test_create_consumer_twice_returns_none_the_second_time() -> None:
    g = make_group(b"a")
    assert g.create_consumer(b"a", 200) is None
    c = g.consumer(b"a")
    assert c is not None and c.seen_time == 100 and c.active_time == -1


def test_deliver_puts_the_entry_in_both_pels_with_one_delivery() -> None:
    g = make_group(b"a")
    c = g.consumers[b"a"]
    nack = g.deliver(7, c, 1000)
    assert nack == (1000, 1, b"a")
    assert g.pel[7] == nack
    assert list(g.owned(c)) == [7] and c.pending == 1
    g._check()


def test_deliver_of_an_entry_pending_elsewhere_moves_it_and_restarts_its_count() -> None:
    g = make_group(b"a", b"b")
    a, b = g.consumers[b"a"], g.consumers[b"b"]
    g.deliver(7, a, 1000)
    g.redeliver(7, 1500)
    assert g.pel[7] == (1500, 2, b"a")
    g.deliver(7, b, 2000)
    assert g.pel[7] == (2000, 1, b"b")
    assert list(g.owned(a)) == [] and list(g.owned(b)) == [7]
    assert (a.pending, b.pending) == (0, 1)
    g._check()


def test_assign_changes_owner_time_and_count_and_can_create_the_entry() -> None:
    g = make_group(b"a", b"b")
    a, b = g.consumers[b"a"], g.consumers[b"b"]
    g.deliver(1, a, 10)
    g.assign(1, b, 50, 9)
    assert g.pel[1] == (50, 9, b"b")
    g.assign(2, a, 60, 1)  # XCLAIM FORCE of an ID that was not pending
    assert list(g.owned(a)) == [2] and list(g.owned(b)) == [1]
    g._check()


def test_ack_removes_from_both_pels_and_reports_missing_ids() -> None:
    g = make_group(b"a")
    a = g.consumers[b"a"]
    for i in (3, 1, 2):
        g.deliver(i, a, 10)
    assert g.ack(2) == (10, 1, b"a")
    assert g.ack(2) is None
    assert list(g.pel) == [1, 3] and list(g.owned(a)) == [1, 3] and a.pending == 2
    g._check()


def test_acks_and_claims_leave_ghosts_that_sweeps_keep_about_as_few_as_the_live_ids() -> None:
    # XACK and XCLAIM do not bisect the old owner's IDs: the ID stays there as a ghost that
    # `owned` skips and sweeps remove, so the order does not grow with the history.
    rnd = random.Random(3)
    g = make_group(b"a", b"b")
    a, b = g.consumers[b"a"], g.consumers[b"b"]
    n = 20_000
    for i in range(n):
        g.deliver(i, a, 10)
    ids = list(range(n))
    rnd.shuffle(ids)
    for i in ids[: n // 2]:
        g.ack(i)
    for i in ids[n // 2 : n // 2 + n // 4]:
        g.assign(i, b, 20, 2)  # claimed by b
    assert a.pending == n // 4 and b.pending == n // 4
    assert list(g.owned(a)) == sorted(ids[n // 2 + n // 4 :])
    assert list(g.owned(b, 0, n // 2)) == sorted(i for i in ids[n // 2 : n // 2 + n // 4] if i <= n // 2)
    assert len(a._ids) <= 2 * a.pending + 64 + 2 * LOAD
    g._check()
    # A ghost that becomes pending again for its old owner is live again.
    g.assign(ids[0], a, 30, 1)
    assert ids[0] in list(g.owned(a)) and a.pending == n // 4 + 1
    g._check()


def test_pending_range_and_bounds_are_in_id_order() -> None:
    g = make_group(b"a", b"b")
    for i, name in [(5, b"a"), (1, b"b"), (3, b"a"), (9, b"b")]:
        g.deliver(i, g.consumers[name], 10)
    assert list(g.pending_range(2, 8)) == [3, 5]
    assert g.first_pending() == 1 and g.last_pending() == 9
    assert list(pending_counts(g)) == [(b"a", 2), (b"b", 2)]


def test_delete_consumer_drops_its_pending_entries_and_counts_them() -> None:
    g = make_group(b"a", b"b")
    for i in range(10):
        g.deliver(i, g.consumers[b"a" if i % 2 else b"b"], 10)
    assert g.delete_consumer(b"a") == 5
    assert b"a" not in g.consumers
    assert list(g.pel) == [0, 2, 4, 6, 8]
    g._check()


def test_delete_consumer_owning_most_of_a_large_pel_keeps_the_rest() -> None:
    g = make_group(b"a", b"b")
    for i in range(5000):
        g.deliver(i, g.consumers[b"a" if i % 5 else b"b"], 10)
    assert g.delete_consumer(b"a") == 4000
    assert list(g.pel) == list(range(0, 5000, 5))
    g._check()


def test_sorted_consumers_follow_byte_order() -> None:
    g = make_group(b"b", b"B", b"a", b"aa", b"\xff")
    assert [c.name for c in g.sorted_consumers()] == [b"B", b"a", b"aa", b"b", b"\xff"]


def test_copy_is_independent_of_the_original() -> None:
    g = make_group(b"a")
    g.deliver(1, g.consumers[b"a"], 10)
    g.entries_read = 4
    h = g.copy()
    h._check()
    h.deliver(2, h.consumers[b"a"], 20)
    h.ack(1)
    h.consumers[b"a"].seen_time = 999
    assert list(g.pel) == [1] and list(g.owned(g.consumers[b"a"])) == [1]
    assert g.consumers[b"a"].seen_time == 100
    assert (h.last_id, h.entries_read) == (0, 4)


def test_check_catches_a_pending_entry_missing_from_its_owner() -> None:
    g = make_group(b"a")
    g.deliver(1, g.consumers[b"a"], 10)
    g.consumers[b"a"]._ids.remove(1)
    with pytest.raises(AssertionError):
        g._check()


def test_pending_entries_are_not_tracked_by_the_cyclic_gc() -> None:
    # A PEL of millions of entries must not make every full collection walk them.
    g = make_group(b"a")
    for i in range(100):
        g.deliver(i, g.consumers[b"a"], 10)
    gc.collect()
    assert not any(gc.is_tracked(nack) for nack in g.pel.values())


def test_random_operations_keep_every_invariant() -> None:
    """Seeded stress: any mix of deliveries, re-deliveries, claims, acks, consumer
    creation and deletion leaves the group PEL and the consumers' PELs mirroring each
    other (checked after every step)."""
    rng = random.Random(1234)
    g = ConsumerGroup(0)
    names = [b"c%d" % i for i in range(5)]
    for step in range(3000):
        op = rng.random()
        name = rng.choice(names)
        entry = rng.randrange(200)
        if op < 0.1:
            g.create_consumer(name, step)
        elif op < 0.15 and name in g.consumers:
            before = len(g.pel)
            removed = g.delete_consumer(name)
            assert len(g.pel) == before - removed
        elif op < 0.5:
            c = g.consumer(name) or g.create_consumer(name, step)
            assert c is not None
            g.deliver(entry, c, step)
        elif op < 0.65 and entry in g.pel:
            count = g.pel[entry][1]
            assert g.redeliver(entry, step)[1] == count + 1
        elif op < 0.8:
            c = g.consumer(name) or g.create_consumer(name, step)
            assert c is not None
            g.assign(entry, c, step, rng.randrange(5))
        else:
            g.ack(entry)
        g._check()


def test_two_hundred_thousand_pending_entries_cost_under_200_bytes_each() -> None:
    import tracemalloc

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        g = make_group(b"a")
        c = g.consumers[b"a"]
        base = 1_700_000_000_000 << 64
        now = 1_700_000_000_000
        n = 200_000
        for i in range(n):
            g.deliver(base + i, c, now)
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert used / n < 200
