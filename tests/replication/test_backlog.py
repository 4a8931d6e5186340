"""The backlog: offsets, bounded retention of whole units, the retention floor, and the PSYNC
rules (current id, replid2 up to the switch point, offsets outside the backlog refused)."""

from __future__ import annotations

import random

import pytest

from replication.backlog import BLOCK_BYTES, NO_REPLID, Backlog, new_replid


def units_of(backlog: Backlog, offset: int) -> list[bytes]:
    data, sizes = backlog.read(offset, 1 << 30)
    out, pos = [], 0
    for size in sizes:
        out.append(data[pos : pos + size])
        pos += size
    return out


def test_offsets_count_bytes_of_units() -> None:
    backlog = Backlog(1024, offset=100)
    assert backlog.append(b"abc") == 103
    assert backlog.extend(b"defgh", [2, 3]) == 108
    assert (backlog.start, backlog.end, backlog.histlen) == (100, 108, 8)
    assert units_of(backlog, 100) == [b"abc", b"de", b"fgh"]
    assert units_of(backlog, 105) == [b"fgh"]
    assert backlog.read(108, 10) == (b"", [])
    backlog._check()


def test_empty_unit_does_not_move_the_offset_and_bad_sizes_are_refused() -> None:
    backlog = Backlog(1024)
    assert backlog.append(b"") == 0
    with pytest.raises(ValueError):
        backlog.extend(b"abc", [1, 1])
    with pytest.raises(ValueError):
        backlog.extend(b"abc", [3, 0])
    assert backlog.end == 0


def test_retention_is_bounded_by_size_evicting_whole_units() -> None:
    backlog = Backlog(100)
    for i in range(50):
        backlog.append(b"%09d" % i)  # 9 bytes each
        backlog._check()
    assert backlog.end == 450
    assert backlog.histlen <= 100 and backlog.histlen == 99  # 11 whole units
    assert backlog.start == 351
    assert units_of(backlog, backlog.start)[0] == b"%09d" % 39


def test_reads_must_start_at_a_unit_boundary_held_in_the_backlog() -> None:
    backlog = Backlog(1024)
    backlog.extend(b"aaabbb", [3, 3])
    assert backlog.is_boundary(3) and backlog.is_boundary(6) and not backlog.is_boundary(4)
    with pytest.raises(ValueError):
        backlog.read(4, 10)
    with pytest.raises(ValueError):
        backlog.read(7, 10)


def test_read_respects_the_budget_but_returns_at_least_one_unit() -> None:
    backlog = Backlog(1 << 20)
    big = b"x" * 5000
    backlog.append(big)
    backlog.append(b"y" * 10)
    assert backlog.read(0, 100) == (big, [5000])
    data, sizes = backlog.read(0, 6000)
    assert sizes == [5000, 10] and data == big + b"y" * 10


def test_read_spans_blocks() -> None:
    backlog = Backlog(1 << 20)
    unit = b"z" * 1000
    for _ in range(200):  # 200 KB: several 64 KB blocks
        backlog.append(unit)
    assert len(backlog._blocks) > 2
    data, sizes = backlog.read(0, 1 << 30)
    assert len(data) == 200_000 and sizes == [1000] * 200
    data, sizes = backlog.read(60_000, 70_000)
    assert sizes == [1000] * 70 and len(data) == 70_000


def test_retention_floor_pins_units_a_replica_still_needs() -> None:
    backlog = Backlog(100)
    backlog.retain_from(0)
    for _ in range(30):
        backlog.append(b"x" * 10)
        backlog._check()
    assert backlog.start == 0 and backlog.histlen == 300
    backlog.retain_from(150)
    assert backlog.start == 150
    backlog.retain_from(None)
    assert backlog.histlen == 100
    backlog._check()


def test_memory_stays_near_the_size_for_tiny_units() -> None:
    backlog = Backlog(256 * 1024)
    for i in range(100_000):
        backlog.append(b"%020d" % i)
    # Data plus an 8-byte boundary per unit, plus at most one partly evicted block.
    assert backlog.memory_bytes() <= 256 * 1024 * (28 / 20) + BLOCK_BYTES * 1.5


def test_psync_accepts_current_replid_within_the_backlog_including_its_end() -> None:
    backlog = Backlog(100)
    for _ in range(20):
        backlog.append(b"x" * 10)
    replid = backlog.replid
    assert backlog.can_continue(replid, 200)
    assert backlog.can_continue(replid, 100)
    decision = backlog.psync(replid, 90)
    assert not decision.ok and "left the backlog (it holds 100..200)" in decision.reason
    decision = backlog.psync(replid, 201)
    assert not decision.ok and "in the future" in decision.reason
    decision = backlog.psync(replid, 105)
    assert not decision.ok and "unit boundary" in decision.reason
    assert not backlog.psync("", 200).ok
    assert "replication id mismatch" in backlog.psync(new_replid(), 200).reason


def test_psync_after_promotion_accepts_replid2_only_up_to_the_switch_offset() -> None:
    backlog = Backlog(1000)
    for _ in range(10):
        backlog.append(b"y" * 10)
    old = backlog.replid
    backlog.shift_replid()
    assert backlog.replid2 == old and backlog.second_offset == 100 and backlog.replid != old
    backlog.append(b"after")
    assert backlog.can_continue(old, 100)
    assert backlog.can_continue(old, 50)
    decision = backlog.psync(old, 105)
    assert not decision.ok and "went past the switch point 100" in decision.reason
    assert backlog.can_continue(backlog.replid, 105)
    assert not backlog.can_continue(NO_REPLID, 0)  # "no previous id" is not an id


def test_reset_starts_a_new_history_without_replid2() -> None:
    backlog = Backlog(1000)
    backlog.append(b"abc")
    backlog.shift_replid()
    replid = new_replid()
    backlog.reset(replid, 5000)
    assert (backlog.replid, backlog.replid2, backlog.second_offset) == (replid, NO_REPLID, -1)
    assert (backlog.start, backlog.end) == (5000, 5000)
    assert backlog.can_continue(replid, 5000) and not backlog.can_continue(replid, 4999)
    backlog._check()


def test_skip_to_moves_an_unrecorded_log_along_keeping_its_history() -> None:
    backlog = Backlog(1000)
    backlog.append(b"abc")
    backlog.shift_replid()
    replid, replid2 = backlog.replid, backlog.replid2
    backlog.skip_to(700)
    assert (backlog.replid, backlog.replid2, backlog.second_offset) == (replid, replid2, 3)
    assert (backlog.start, backlog.end, backlog.histlen) == (700, 700, 0)
    # Only a replica that missed nothing continues; anyone else needs a full sync.
    assert backlog.can_continue(replid, 700) and not backlog.can_continue(replid, 3)
    assert not backlog.can_continue(replid2, 3)
    with pytest.raises(ValueError, match="behind the backlog's end"):
        backlog.skip_to(699)
    backlog.append(b"more")
    assert (backlog.start, backlog.end) == (700, 704)
    backlog._check()


def test_info_uses_redis_conventions() -> None:
    backlog = Backlog(1000)
    backlog.append(b"x" * 10)
    info = backlog.info()
    assert (info.master_repl_offset, info.second_repl_offset, info.repl_backlog_first_byte_offset) == (10, -1, 1)
    backlog.shift_replid()
    assert backlog.info().second_repl_offset == 11  # Redis stores the switch offset + 1


def test_listeners_hear_appends_and_history_changes() -> None:
    events: list[object] = []

    class Listener:
        def log_appended(self, end: int) -> None:
            events.append(end)

        def history_changed(self) -> None:
            events.append("changed")

    backlog = Backlog(1000)
    backlog.add_listener(Listener())
    backlog.append(b"ab")
    backlog.extend(b"cde", [1, 2])
    backlog.shift_replid()
    backlog.reset(new_replid(), 0)
    assert events == [2, 5, "changed", "changed"]


def test_random_operations_match_a_reference_model() -> None:
    """Invariant: whatever the sequence of appends, resizes and floors, the backlog holds
    exactly the most recent whole units that fit (plus pinned ones), in order, and reads
    return them byte for byte."""
    rng = random.Random(1234)
    backlog = Backlog(4096)
    model: list[tuple[int, bytes]] = []  # (start offset, unit) of every unit ever appended
    floor: int | None = None
    for _ in range(3000):
        action = rng.random()
        if action < 0.8:
            unit = bytes([rng.randrange(256)]) * rng.choice([1, 7, 100, 1500, 70_000])
            model.append((backlog.end, unit))
            backlog.append(unit)
        elif action < 0.9:
            sizes = [rng.randint(1, 300) for _ in range(rng.randint(1, 5))]
            data = bytes(rng.randrange(256) for _ in range(sum(sizes)))
            pos = 0
            for size in sizes:
                model.append((backlog.end + pos, data[pos : pos + size]))
                pos += size
            backlog.extend(data, sizes)
        elif action < 0.95:
            floor = None if rng.random() < 0.5 else rng.randint(max(0, backlog.end - 20_000), backlog.end)
            backlog.retain_from(floor)
        else:
            backlog.resize(rng.choice([1024, 4096, 100_000]))
        backlog._check()
        held = [(start, unit) for start, unit in model if start >= backlog.start]
        if held:
            assert held[0][0] == backlog.start
            assert units_of(backlog, backlog.start) == [unit for _, unit in held]
            start, _ = rng.choice(held)
            assert backlog.is_boundary(start)
