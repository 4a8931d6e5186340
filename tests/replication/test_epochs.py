"""Fenced mode's pure parts: epoch histories (Kafka's truncation rule), a node's fence state
and its saves, and the primary's lease arithmetic on a fake clock."""

from __future__ import annotations

import pytest

from replication import NO_TENURE, EpochHistory, Fence, Lease

R1, R2, R3 = "1" * 40, "2" * 40, "3" * 40


def history(*pairs: tuple[int, int]) -> EpochHistory:
    return EpochHistory.from_pairs(pairs)


def test_an_epoch_history_must_be_ordered() -> None:
    with pytest.raises(ValueError):
        history((3, 10), (2, 20))
    with pytest.raises(ValueError):
        history((3, 10), (4, 5))
    with pytest.raises(ValueError):
        history((0, 0))
    assert history((3, 10), (4, 10)).last_epoch == 4  # a promotion with no write in epoch 3


def test_the_log_epoch_is_the_newest_entry_starting_at_or_before_the_end() -> None:
    h = history((3, 0), (5, 120))
    assert h.log_epoch(100) == 3
    assert h.log_epoch(119) == 3
    assert h.log_epoch(120) == 5  # the primary of 5 was promoted there: its log is in 5 at once
    assert h.log_epoch(500) == 5
    assert EpochHistory().log_epoch(100) == 0
    assert history((2, 50)).log_epoch(10) == 0


def test_end_of_an_epoch_is_where_the_next_one_starts() -> None:
    h = history((3, 40), (5, 120), (8, 300))
    assert h.end_of(0, 400) == 40
    assert h.end_of(3, 400) == 120
    assert h.end_of(5, 400) == 300
    assert h.end_of(8, 400) == 400
    assert h.end_of(4, 400) is None  # a tenure this history never had: that log diverged


def test_a_replica_continues_only_within_its_epoch() -> None:
    primary = history((3, 0), (5, 120))
    assert primary.can_continue(3, 100, 200)  # behind: continues
    assert primary.can_continue(3, 120, 200)  # exactly at the switch
    assert not primary.can_continue(3, 130, 200)  # wrote past the switch under the old primary
    assert primary.can_continue(5, 150, 200)
    assert not primary.can_continue(4, 100, 200)  # a failed tenure


def test_truncation_keeps_a_promotion_with_no_write_yet() -> None:
    h = history((3, 0), (5, 120), (7, 200))
    assert h.truncated(150) == history((3, 0), (5, 120))
    assert h.truncated(200) == h


class Saves:
    def __init__(self) -> None:
        self.states: list[tuple[int, int, str, list[tuple[int, int]]]] = []

    def __call__(self, fence: Fence) -> None:
        self.states.append((fence.fence_epoch, fence.tenure, fence.replid, fence.history.pairs()))


def test_a_fence_only_rises_and_every_change_is_saved_first() -> None:
    saves = Saves()
    fence = Fence(R1, save=saves)
    assert fence.leads()  # a cluster that never failed over: the configured primary leads epoch 0
    assert fence.raise_to(4)
    assert not fence.raise_to(3)
    assert not fence.raise_to(4)
    assert fence.fence_epoch == 4
    assert not fence.leads()  # fenced by a newer epoch than the one it leads
    assert saves.states == [(4, 0, R1, [])]


def test_a_change_whose_save_fails_is_not_made() -> None:
    """The save comes first: memory never promises what the file does not (a full disk, EIO)."""
    def failing(fence: Fence) -> None:
        raise OSError(28, "No space left on device")

    fence = Fence("a" * 40, histories={"a" * 40: EpochHistory.from_pairs([(1, 0)])}, save=failing)
    before = (fence.fence_epoch, fence.tenure, fence.replid, fence.histories)
    with pytest.raises(OSError):
        fence.raise_to(4)
    with pytest.raises(OSError):
        fence.follow(2, "b" * 40, EpochHistory.from_pairs([(2, 5)]))
    with pytest.raises(OSError):
        fence.promote(3, 10, "c" * 40)
    with pytest.raises(OSError):
        fence.rename("d" * 40)
    assert (fence.fence_epoch, fence.tenure, fence.replid, fence.histories) == before
    # Stepping down (withdrawing a promise) is made anyway; the failure is still raised.
    with pytest.raises(OSError):
        fence.step_down()
    assert fence.tenure == NO_TENURE


def test_following_a_primary_adopts_its_history_and_ends_any_tenure() -> None:
    saves = Saves()
    fence = Fence(R1, fence_epoch=2, tenure=2, histories={R1: history((2, 0))}, save=saves)
    fence.follow(5, R2, history((2, 0), (5, 80)))
    assert (fence.fence_epoch, fence.tenure, fence.replid, fence.epoch) == (5, NO_TENURE, R2, 5)
    assert fence.log_epoch(70) == 2 and fence.log_epoch(80) == 5
    fence.follow(5, R2, history((2, 0), (5, 80)))  # the same primary again: nothing to save
    assert len(saves.states) == 1
    with pytest.raises(ValueError):
        fence.follow(4, R3, history((4, 0)))  # older than the promise


def test_promotion_needs_an_epoch_at_least_the_fence_and_newer_than_the_log() -> None:
    fence = Fence(R1, fence_epoch=5, tenure=NO_TENURE, histories={R1: history((3, 0))})
    assert fence.may_promote(4, 100) is not None
    assert fence.may_promote(5, 100) is None
    fence.promote(5, 100, R2)
    assert (fence.tenure, fence.epoch, fence.fence_epoch) == (5, 5, 5)
    assert fence.leads()
    assert fence.history == history((3, 0), (5, 100))
    assert fence.may_promote(5, 100) is not None  # never twice per epoch
    with pytest.raises(ValueError):
        fence.promote(5, 120, R3)


def test_a_restart_finds_the_history_of_the_log_it_loaded() -> None:
    fence = Fence(R1, histories={R1: history((3, 0))})
    fence.follow(5, R2, history((3, 0), (5, 100)))
    # The AOF on disk still holds R1's log (its rewrite after the full sync never ran).
    fence.restore(R1, 140)
    assert fence.epoch == 3 and fence.log_epoch(140) == 3
    # A log that lost its tail: entries past its end go.
    fence.restore(R2, 90)
    assert fence.history == history((3, 0))
    fence.restore("4" * 40, 10)
    assert fence.history == EpochHistory() and fence.epoch == 0


def test_only_recent_histories_are_kept() -> None:
    fence = Fence(R1)
    for i in range(40):
        fence.follow(i + 1, f"{i:040x}", history((i + 1, i)))
    assert len(fence.histories) == 16
    assert next(iter(fence.histories)) == f"{39:040x}"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000_000

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1e9)


def test_a_lease_needs_echoes_from_the_majority_and_lapses_after_the_duration() -> None:
    clock = FakeClock()
    lease = Lease(needed=2, duration=1.0, clock_ns=clock)  # five nodes: the primary + 2 replicas
    lease.restart(7)
    assert not lease.holds()
    first = lease.stamp()
    assert lease.echo("a", first, 7)
    assert not lease.holds()  # one replica is not a majority of five
    clock.advance(0.4)
    second = lease.stamp()
    assert lease.echo("b", second, 7)
    assert lease.holds()
    # The lease runs from the older of the two newest stamps: the first one.
    clock.advance(0.59)
    assert lease.holds()
    clock.advance(0.02)
    assert not lease.holds()
    assert lease.echo("a", lease.stamp(), 7)
    assert lease.holds()
    assert lease.remaining() == pytest.approx(0.39)  # b's stamp (at 0.4 s) is now the older of the two


def test_echoes_of_another_tenure_or_of_stamps_never_sent_do_not_count() -> None:
    clock = FakeClock()
    lease = Lease(needed=1, duration=1.0, clock_ns=clock)
    lease.restart(3)
    stamp = lease.stamp()
    assert lease.echo("a", stamp, 2)  # a session of an older tenure: ignored
    assert not lease.holds()
    assert not lease.echo("a", stamp + 1, 3)  # never issued: a lying replica
    assert not lease.holds()
    assert lease.echo("a", stamp, 3) and lease.holds()
    lease.restart(4)  # promoted again: nothing carries over
    assert not lease.holds()


def test_a_single_node_set_always_holds_its_lease() -> None:
    assert Lease(needed=0, duration=1.0).holds()
