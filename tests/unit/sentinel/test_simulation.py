"""Sentinels over a simulated faulty network, many seeds, invariants after every step
(tests/unit/sentinel/sim.py, invariants.py, scenarios.py).

Each seed picks the cluster (3 or 5 sentinels, 2-5 nodes, quorum, down-after, failover-timeout,
parallel-syncs) and up to three faults in a row (a process partitioned, killed and restarted,
paused, a flapping link, connection resets), then lets everything heal and settle. Runs are
deterministic: a failing seed reproduces with `run_seed(seed)`. More seeds:
`SENTINEL_SIM_SEEDS=2000 pytest tests/unit/sentinel/test_simulation.py`.

The last tests break the policy (or the nodes) on purpose and check that the invariants
notice: a checker that cannot fail proves nothing.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable

import pytest

from node.sentinel import election, fenced, selection
from node.sentinel.policy import voting
from tests.unit.sentinel import sim as sim_module
from tests.unit.sentinel.invariants import Violation
from tests.unit.sentinel.scenarios import run_seed, split_seed, sweep, sweep_chunk

SEEDS = int(os.environ.get("SENTINEL_SIM_SEEDS", "120"))
# The fenced-mode sweep (scenarios.sweep_seed); `python -m tests.unit.sentinel.scenarios sweep`
# runs 100,000.
SWEEP_SEEDS = int(os.environ.get("FENCED_SWEEP_SEEDS", "1000"))
FENCED_FAULTS = ("partition", "partition-sentinels", "kill", "pause", "flap", "reset")


def test_redis_rules_hold_over_seeded_fault_schedules() -> None:
    seen: Counter[str] = Counter()
    for seed in range(SEEDS):
        sim, checker = run_seed(seed)
        seen["selections"] += checker.selections
        seen["switches"] += sum(1 for e in sim.events if e[2] == "+switch-master")
        seen["tilts"] += sum(1 for e in sim.events if e[2] == "+tilt")
        seen["steps"] += sim.steps
    # The schedules do exercise what the invariants are about.
    assert seen["selections"] >= SEEDS // 3
    assert seen["switches"] >= SEEDS
    assert seen["tilts"] >= 1


def test_fenced_mode_loses_no_wait_acknowledged_write_under_single_faults() -> None:
    acked = promotions = 0
    for seed in range(SEEDS):
        sim, _ = run_seed(seed, fenced=True, workload=True, faults=1, kinds=FENCED_FAULTS)
        acked += len(sim.acked)
        promotions += len(sim.promotions)
    assert acked >= SEEDS * 100 and promotions >= SEEDS // 5


def test_fenced_mode_tolerates_clock_drift_within_its_bound() -> None:
    for seed in range(SEEDS // 4):
        run_seed(seed, fenced=True, workload=True, faults=1, kinds=("pause", "partition-sentinels"),
                 clock_drift=0.045, drift_permille=50)


def test_default_mode_loses_wait_acknowledged_writes_when_an_old_primary_resumes() -> None:
    """Redis's documented limit, reproduced: a paused primary resumes after its replacement
    was promoted, acknowledges writes with a replica not yet moved over, and those writes go
    when it is turned into a replica."""
    lost = 0
    for seed in range(60):
        sim, _ = run_seed(seed, workload=True, faults=1, kinds=("pause",))
        address = sim.sentinels[0].view().current_address()
        final = sim.by_addr[(address.host, address.port)]
        assert isinstance(final, sim_module.NodeProc)
        kept = {entry[1] for entry in final.log}
        lost += sum(1 for w in sim.acked if w not in kept)
    assert lost > 0


# ---------------------------------------------------------------------------- the checker can fail


def _first_violation(run: Callable[[int], object], seeds: int) -> str:
    for seed in range(seeds):
        try:
            run(seed)
        except Violation as exc:
            return str(exc)
    raise AssertionError("the invariants did not notice")


def test_invariants_notice_a_worse_replica_promoted(monkeypatch: pytest.MonkeyPatch) -> None:
    best_first = selection.promotion_key
    monkeypatch.setattr(selection, "promotion_key", lambda r: tuple(-x if isinstance(x, int) else x for x in best_first(r)))
    assert "over the better" in _first_violation(run_seed, 40)


def test_invariants_notice_two_votes_in_one_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    vote = voting.Voting.vote

    def forgetful(self: voting.Voting, master: object, epoch: int, runid: str) -> tuple[str | None, int]:
        master.leader_epoch = 0  # type: ignore[attr-defined]
        return vote(self, master, epoch, runid)  # type: ignore[arg-type]

    monkeypatch.setattr(voting.Voting, "vote", forgetful)
    assert "voted for" in _first_violation(run_seed, 40)


def test_invariants_notice_a_leader_without_a_majority(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(election, "wins", lambda votes, voters, quorum: votes >= 1)
    assert "two leaders" in _first_violation(run_seed, 80)


def test_fenced_invariants_notice_a_primary_that_ignores_its_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sim_module.NodeProc, "lease_valid", lambda self: self.role == "master" and not self.stepped_down())
    found = _first_violation(lambda s: run_seed(s, fenced=True, workload=True, faults=1, kinds=("pause",)), 80)
    assert "after epoch" in found


def test_fenced_invariants_notice_sentinels_that_do_not_wait_out_the_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fenced, "lease_wait_ms", lambda lease, drift: 0)
    found = _first_violation(
        lambda s: run_seed(s, fenced=True, workload=True, faults=1, kinds=("partition-sentinels",), lease_ms=4000), 80
    )
    assert "after epoch" in found


def test_fenced_invariants_notice_clocks_drifting_beyond_the_bound() -> None:
    """The drift bound is an assumption: with sentinels told clocks are exact while they
    drift by up to 40 %, a lease can outlive the sentinels' wait."""
    found = _first_violation(
        lambda s: run_seed(s, fenced=True, workload=True, faults=1, kinds=("partition-sentinels",), clock_drift=0.4,
                           drift_permille=0, lease_ms=4000),
        80,
    )
    assert "without acknowledged writes" in found or "after epoch" in found


def test_fenced_mode_keeps_its_guarantees_when_the_leaders_wall_clock_steps_during_the_lease_wait() -> None:
    """Two steps of the leader's wall clock, 1.2-1.7 s forward each (NTP, `date -s`, a VM's
    time resync; each under TILT's 2 s with the ticks in between), as it starts waiting out a
    3 s lease, while the old primary, cut off from the sentinels only, keeps its clients: W
    must still be waited in real time (the policy's durations come from CLOCK_BOOTTIME, which
    no step moves)."""
    for seed in range(SEEDS // 2):
        run_seed(seed, fenced=True, workload=True, faults=1, kinds=("partition-sentinels",), lease_ms=3000,
                 step_on_wait_lease=(1200, 1700), wait_lease_steps=2)


def test_fenced_invariants_notice_a_lease_wait_timed_on_the_wall_clock() -> None:
    """How the runner was wired before: the policy's durations on the wall clock, which a step
    during the lease wait cuts short."""
    found = _first_violation(
        lambda s: run_seed(s, fenced=True, workload=True, faults=1, kinds=("partition-sentinels",), lease_ms=3000,
                           step_on_wait_lease=(1200, 1700), wait_lease_steps=2, sentinel_clock="wall"),
        80,
    )
    assert "after epoch" in found


def test_fenced_mode_promotes_no_replica_that_restarted_from_an_older_aof_during_the_lease_wait() -> None:
    """The old primary, cut off from the sentinels, is replaced and, healed, turned into a
    replica: its full resync replaces its log (with the tail no majority had), and its AOF
    holds the old log until the base of the new one is written. The new primary is killed;
    as the leader starts waiting out the lease, every node whose AOF still holds an older log
    crashes and restarts from it. The leader relied on its FENCE reply: the promotion names
    that position and the node, no longer at it, refuses (SLAVEOF NO ONE EPOCH e POSITION)."""
    restarted = 0
    for seed in range(SEEDS // 3):
        sim, _ = run_seed(seed, fenced=True, workload=True, plan=("partition-sentinels", "kill"), gap=(20_000, 30_000),
                          rewrite_ms=(30_000, 60_000), restart_on_wait_lease=True)
        restarted += sim.restarts_from_old_aof
    assert restarted >= SEEDS // 6


def test_fenced_mode_brings_back_replicas_a_failover_fenced_before_aborting() -> None:
    """The chaos lab's split-majority (docs/safety.md, *Bugs the lab found in Rill*, 4): the
    master keeps ⌊N/2⌋ replicas and its clients; the sentinels, with the other replicas, fail
    over, fence the replicas they reach (a minority), cannot fence a majority and abort at
    failover-timeout; the split heals. The replicas fenced at the aborted epoch refuse the
    master's older one: the sentinels must bring them back by themselves (a re-tenure of the
    master at a newer epoch) and the whole replica set converge, G1 and G2 checked at every
    step."""
    stranded = 0
    for seed in range(SEEDS // 2):
        sim, _ = split_seed(seed)
        stranded += any(e[2] == "-failover-abort-fence-timeout" for e in sim.events) and not any(
            e[2] == "+promoted-slave" for e in sim.events)
    # The schedules do strand replicas (a failover fenced some, then aborted, nothing promoted).
    assert stranded >= SEEDS // 8


def test_fenced_mode_refuses_to_fail_over_while_the_sentinels_know_fewer_replicas_than_the_set_has() -> None:
    """The master is cut off from the sentinels, which restart from configuration files that
    miss some of its replicas (a backup, or a file older than their discovery): a majority of
    what they know may be no majority of the replica set. They refuse until they agree."""
    refusals = forgotten = 0
    for seed in range(SEEDS // 3):
        sim, _ = run_seed(seed, fenced=True, workload=True, faults=1, kinds=("stale-sentinels",))
        refusals += sum(1 for e in sim.events if e[2] == "-failover-abort-fenced-mismatch")
        forgotten += sim.forgotten
    assert refusals >= SEEDS // 6 and forgotten >= SEEDS // 3


def test_fenced_mode_refuses_to_fail_over_while_the_nodes_lease_is_longer_than_the_sentinels() -> None:
    """Nodes holding 4 s leases, sentinels told 1 s: no promotion while they disagree."""
    refusals = 0
    for seed in range(SEEDS // 4):
        sim, _ = run_seed(seed, fenced=True, workload=True, faults=1, kinds=("partition-sentinels", "kill"),
                          node_lease_ms=4000)
        assert not sim.promotions
        refusals += sum(1 for e in sim.events if e[2] == "-failover-abort-fenced-mismatch")
    assert refusals >= SEEDS // 8


def test_fenced_mode_keeps_its_guarantees_as_members_join_and_leave() -> None:
    """Nodes join the replica set (every member's fenced-replica-set-size grows, the sentinels
    learn the new replica from the master) and leave it (the sizes shrink, every sentinel is
    reset), between kills and partitions of the master."""
    changes = promotions = 0
    for seed in range(SEEDS // 3):
        sim, _ = run_seed(seed, fenced=True, workload=True, faults=3, kinds=("join", "leave", "kill", "partition-sentinels"))
        changes += sim.membership_changes
        promotions += len(sim.promotions)
    assert changes >= SEEDS // 4 and promotions >= SEEDS // 10


def test_fenced_invariants_notice_sentinels_that_ignore_what_the_nodes_say(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fenced, "disagreement", lambda master: None)
    found = _first_violation(
        lambda s: run_seed(s, fenced=True, workload=True, faults=1, kinds=("stale-sentinels",)), 80)
    assert "members fenced" in found or "without acknowledged writes" in found or "after epoch" in found


@pytest.mark.timeout(900)  # about 50 ms of CPU a seed, on two processes: minutes on a loaded machine
def test_fenced_mode_keeps_g1_and_g2_over_a_thousand_seeded_fault_schedules() -> None:
    """G1 (a promoted node holds every WAIT-majority write) and G2 (no older primary accepts a
    write or answers a WAIT once a newer one was promoted), checked as every step happens,
    over 1,000 seeds of every fault the simulator has: partitions, pauses, kills, resets,
    flapping links, wall-clock steps on any process and during the lease wait, a replica
    restarting every 0.5 s (alone, or cut off with the master), restarts from an older AOF,
    sentinels restarted from files missing replicas, members joining and leaving, a failover
    that fenced a minority before aborting (one seed in ten then checked to converge: no
    replica left refusing the master)."""
    result = sweep(range(SWEEP_SEEDS), jobs=min(2, os.cpu_count() or 1))
    assert not result["violations"], list(result["violations"].values())[:5]
    assert result["seeds"] == SWEEP_SEEDS
    # The schedules do exercise what the guarantees are about.
    for key, least in (("promotions", SWEEP_SEEDS // 2), ("wall_steps", SWEEP_SEEDS // 2),
                       ("restarts_from_old_aof", SWEEP_SEEDS // 20), ("membership_changes", SWEEP_SEEDS // 20),
                       ("forgotten_replicas", SWEEP_SEEDS // 10), ("refusals", SWEEP_SEEDS // 50),
                       ("retenures", SWEEP_SEEDS // 50),
                       ("acknowledged", SWEEP_SEEDS * 100)):
        assert result[key] >= least, (key, result)


def test_the_sweep_notices_sentinels_that_do_not_wait_out_the_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fenced, "lease_wait_ms", lambda lease, drift: 0)
    for start in range(0, 200, 20):
        violations = sweep_chunk(range(start, start + 20))["violations"]
        if violations:
            assert "after epoch" in next(iter(violations.values()))
            return
    raise AssertionError("the sweep did not notice")


def test_fenced_invariants_notice_a_lease_counted_by_run_id() -> None:
    """How nodes counted lease echoes before: by run id, so a replica restarting every 0.5 s
    on the cut-off master's side counts as several members."""
    found = _first_violation(
        lambda s: run_seed(s, fenced=True, workload=True, plan=("minority-bounce",), lease_by_run_id=True), 60)
    assert "without acknowledged writes" in found or "after epoch" in found
