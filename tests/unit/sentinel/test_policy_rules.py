"""Each of Sentinel's rules on its own, with the policy driven by hand (tests/unit/sentinel/
driver.py): timings, payloads and decisions as Redis 7.2's sentinel.c has them."""

from __future__ import annotations

import random
from collections.abc import Callable

from node.sentinel import selection
from node.sentinel.instance import FAILOVER_NONE, FAILOVER_RECONF_SLAVES, S_DOWN
from node.sentinel.messages import Closed, FlushConfig, Log, Message, RespError, Send
from node.sentinel.policy import Sentinel, lease_wait_ms
from node.sentinel.timings import HELLO_CHANNEL, Timings
from tests.unit.sentinel.driver import MASTER, MYID, Driver, info_master, info_replica

RUN_A = "1" * 40
RUN_B = "2" * 40


def pong(d: Driver) -> None:
    d.answer_all(None, "PING", "PONG")
    d.discard()


def pong_all_but_master(d: Driver) -> None:
    for send in d.sent(None, "PING"):
        if d.target(send) != MASTER:
            d.answer(send, "PONG")
    d.discard()


# ---------------------------------------------------------------------------- SDOWN


def test_sdown_comes_after_down_after_milliseconds_without_a_valid_ping_reply() -> None:
    d = Driver(down_after=5000)
    d.run(5000, answer=lambda d: d.discard())
    assert "+sdown" not in d.types()
    d.tick(100)
    assert d.messages("+sdown") == ["master mymaster 10.0.0.1 6379"]
    assert d.master.flags & S_DOWN


def test_pong_loading_and_masterdown_replies_keep_an_instance_up_other_errors_do_not() -> None:
    for reply, down in (("PONG", False), (RespError("LOADING Redis is loading"), False),
                        (RespError("MASTERDOWN Link with MASTER is down"), False), (RespError("ERR nope"), True)):
        d = Driver(down_after=2000)
        d.run(10_000, answer=lambda d, r=reply: (d.answer_all(None, "PING", r), d.discard()))
        assert ("+sdown" in d.types()) is down, reply


def test_an_instance_that_answers_again_leaves_sdown() -> None:
    d = Driver(down_after=1000)
    d.run(1500, answer=lambda d: d.discard())
    assert "+sdown" in d.types()
    d.run(1000, answer=pong)
    assert d.messages("-sdown") == ["master mymaster 10.0.0.1 6379"]


def test_pings_go_out_every_second_or_every_down_after_if_shorter() -> None:
    d = Driver(down_after=10_000)
    d.run(200, answer=pong)
    first = len([a for a in d.actions if getattr(a, "argv", ("",))[0] == "PING"])
    d.run(3000, answer=pong)
    pings = len([a for a in d.actions if getattr(a, "argv", ("",))[0] == "PING"]) - first
    assert 2 <= pings <= 4  # one per second
    d = Driver(down_after=400)
    d.run(200, answer=pong)
    first = len([a for a in d.actions if getattr(a, "argv", ("",))[0] == "PING"])
    d.run(3000, answer=pong)
    pings = len([a for a in d.actions if getattr(a, "argv", ("",))[0] == "PING"]) - first
    assert pings >= 6  # every 400 ms


# ---------------------------------------------------------------------------- ODOWN


def test_odown_needs_the_quorum_of_sentinels_saying_down() -> None:
    d = Driver(quorum=3, down_after=1000)
    d.add_sentinel(1)
    d.add_sentinel(2)
    d.run(1500, answer=pong_all_but_master)
    assert "+sdown" in d.types() and "+odown" not in d.types()
    asks = d.sent(None, "SENTINEL")
    assert asks and asks[0].argv == ("SENTINEL", "is-master-down-by-addr", "10.0.0.1", "6379", "0", "*")
    d.answer(asks[0], [1, b"*", 0])
    d.tick()
    assert "+odown" not in d.types()  # 2 of 3
    for send in d.sent(None, "SENTINEL"):
        d.answer(send, [1, b"*", 0])
    d.tick()
    assert d.messages("+odown") == ["master mymaster 10.0.0.1 6379 #quorum 3/3"]


def test_down_answers_older_than_five_seconds_no_longer_count() -> None:
    d = Driver(quorum=2, down_after=1000, failover_timeout=1000)
    d.add_sentinel(1)
    d.run(1500, answer=pong_all_but_master)
    d.answer_all(None, "SENTINEL", [1, b"*", 0])
    d.tick()
    assert "+odown" in d.types()
    d.run(6000, answer=lambda d: (pong_all_but_master(d), d.pending.clear()))
    assert "-odown" in d.types()


# ---------------------------------------------------------------------------- votes


def test_a_sentinel_votes_once_per_epoch_and_persists_the_vote_before_answering() -> None:
    d = Driver()
    b, c = "b" * 40, "c" * 40
    assert d.s.is_master_down_by_addr("10.0.0.1", 6379, 5, b, now=d.now) == [0, b.encode(), 5]
    actions = d.s.take_actions()
    assert any(isinstance(a, FlushConfig) for a in actions)
    assert [e.message for e in actions if getattr(e, "type", "") == "+vote-for-leader"] == [f"{b} 5"]
    assert d.s.is_master_down_by_addr("10.0.0.1", 6379, 5, c, now=d.now) == [0, b.encode(), 5]
    assert d.s.is_master_down_by_addr("10.0.0.1", 6379, 4, c, now=d.now) == [0, b.encode(), 5]
    assert d.s.is_master_down_by_addr("10.0.0.1", 6379, 6, c, now=d.now) == [0, c.encode(), 6]
    assert d.s.current_epoch == 6
    assert d.s.is_master_down_by_addr("10.0.0.1", 6379, 7, "*", now=d.now) == [0, b"*", 0]
    assert d.s.is_master_down_by_addr("10.0.0.2", 6379, 8, c, now=d.now) == [0, b"*", 0]


def test_is_master_down_answers_down_only_for_an_sdown_master_and_never_in_tilt() -> None:
    d = Driver(down_after=1000)
    d.run(1500, answer=lambda d: d.discard())
    assert d.s.is_master_down_by_addr("10.0.0.1", 6379, 0, "*", now=d.now)[0] == 1
    d.tick(5000)  # a timer jump
    assert d.s.tilt
    assert d.s.is_master_down_by_addr("10.0.0.1", 6379, 0, "*", now=d.now)[0] == 0


def test_a_vote_for_another_sentinel_delays_our_own_failover() -> None:
    d = Driver(failover_timeout=60_000)
    d.s.is_master_down_by_addr("10.0.0.1", 6379, 1, "b" * 40, now=d.now)
    assert d.now <= d.master.failover_start_time < d.now + 1000


# ---------------------------------------------------------------------------- election


def _odown_with(d: Driver, sentinels: int) -> None:
    for i in range(1, sentinels + 1):
        d.add_sentinel(i)
    d.run(1500, answer=pong_all_but_master)
    d.answer_all(None, "SENTINEL", [1, b"*", 0])
    d.tick()
    assert "+try-failover" in d.types()


def test_the_leader_needs_a_majority_of_all_known_sentinels() -> None:
    d = Driver(quorum=2, down_after=1000)
    _odown_with(d, 4)  # five sentinels: three votes needed
    votes = d.sent(None, "SENTINEL")
    assert all(v.argv[-1] == MYID and v.argv[-2] == "1" for v in votes)
    d.answer(votes[0], [1, MYID.encode(), 1])
    d.tick()
    assert "+elected-leader" not in d.types()
    d.answer(votes[1], [1, MYID.encode(), 1])
    d.tick()
    assert "+elected-leader" in d.types()


def test_the_leader_needs_at_least_the_quorum_even_with_a_majority() -> None:
    d = Driver(quorum=3, down_after=1000)
    d.add_sentinel(1)
    d.add_sentinel(2)
    d.run(1500, answer=pong_all_but_master)
    d.answer_all(None, "SENTINEL", [1, b"*", 0])
    d.tick()
    asks = d.sent(None, "SENTINEL")
    d.answer(asks[0], [1, MYID.encode(), 1])  # 2 of 3 voters: a majority, not the quorum
    d.answer(asks[1], [1, b"9" * 40, 1])
    d.run(3000, answer=pong_all_but_master)
    assert "+elected-leader" not in d.types()


def test_an_unelected_candidate_aborts_after_the_election_timeout_and_waits_twice_the_failover_timeout() -> None:
    d = Driver(quorum=2, down_after=1000, failover_timeout=6000)
    _odown_with(d, 2)
    start = d.master.failover_start_time

    def down_but_no_votes(d: Driver) -> None:
        pong_all_but_master(d)
        d.answer_all(None, "SENTINEL", [1, b"9" * 40, 1])

    d.run(5000, answer=down_but_no_votes)
    assert "-failover-abort-not-elected" not in d.types()
    d.run(3000, answer=down_but_no_votes)  # min(10 s, failover-timeout) after the start time
    assert d.messages("-failover-abort-not-elected") == ["master mymaster 10.0.0.1 6379"]
    assert d.master.failover_state == FAILOVER_NONE
    tries = d.types().count("+try-failover")
    d.run(start + 12_000 - d.now - 200, answer=down_but_no_votes)
    assert d.types().count("+try-failover") == tries
    d.run(1500, answer=down_but_no_votes)
    assert d.types().count("+try-failover") == tries + 1


# ---------------------------------------------------------------------------- replica selection


def _replica(s: Sentinel, master, host: str, *, priority: int = 100, offset: int = 0, runid: str | None = None):  # type: ignore[no-untyped-def]
    r = s.add_known_replica(master, host, 6379)
    r.link.disconnected = False
    r.link.last_avail_time = s.now
    r.info_refresh = s.now
    r.slave_priority = priority
    r.slave_repl_offset = offset
    r.runid = runid
    return r


def test_selection_orders_by_priority_then_offset_then_run_id() -> None:
    s = Sentinel(MYID, now=100_000, rng=random.Random(0))
    m = s.monitor("m", *MASTER, 1, now=100_000, announce=False)
    _replica(s, m, "10.0.1.1", priority=100, offset=500, runid="b" * 40)
    _replica(s, m, "10.0.1.2", priority=10, offset=1, runid="c" * 40)
    _replica(s, m, "10.0.1.3", priority=10, offset=2, runid="d" * 40)
    _replica(s, m, "10.0.1.4", priority=10, offset=2, runid="A" * 40)
    _replica(s, m, "10.0.1.5", priority=10, offset=2, runid=None)
    chosen = selection.select_replica(m, s.now, s.timings)
    assert chosen is not None and chosen.addr.host == "10.0.1.4"  # run ids compare without case
    order = sorted(m.slaves.values(), key=selection.promotion_key)
    assert [r.addr.host for r in order] == ["10.0.1.4", "10.0.1.3", "10.0.1.5", "10.0.1.2", "10.0.1.1"]


def test_selection_excludes_down_disconnected_stale_and_priority_zero_replicas() -> None:
    now = 1_000_000
    s = Sentinel(MYID, now=now, rng=random.Random(0))
    m = s.monitor("m", *MASTER, 1, now=now, announce=False)
    m.down_after_period = 1000
    cases = {}
    cases["priority 0"] = _replica(s, m, "10.0.1.1", priority=0, offset=9)
    cases["down"] = _replica(s, m, "10.0.1.2", offset=9)
    cases["down"].flags |= S_DOWN
    cases["disconnected"] = _replica(s, m, "10.0.1.3", offset=9)
    cases["disconnected"].link.disconnected = True
    cases["ping reply too old"] = _replica(s, m, "10.0.1.4", offset=9)
    cases["ping reply too old"].link.last_avail_time = now - 5001
    cases["info too old"] = _replica(s, m, "10.0.1.5", offset=9)
    cases["info too old"].info_refresh = now - 30_001
    cases["master link down too long"] = _replica(s, m, "10.0.1.6", offset=9)
    cases["master link down too long"].master_link_down_time = 10_001
    good = _replica(s, m, "10.0.1.7", offset=1)
    for reason, r in cases.items():
        assert selection.exclusion(r, m, now, s.timings) == reason
    assert selection.select_replica(m, now, s.timings) is good
    # While the master is SDOWN, INFO must be fresher (it comes every second) and the link
    # may have been down for as long as the master plus 10 x down-after.
    m.flags |= S_DOWN
    m.s_down_since_time = now - 20_000
    cases["master link down too long"].master_link_down_time = 29_000
    assert selection.exclusion(cases["master link down too long"], m, now, s.timings) is None
    good.info_refresh = now - 5001
    assert selection.exclusion(good, m, now, s.timings) == "info too old"


# ---------------------------------------------------------------------------- TILT


def test_a_timer_jump_enters_tilt_which_suspends_acting_for_thirty_seconds() -> None:
    d = Driver(down_after=1000)
    d.tick(100)
    d.tick(2500)  # more than TILT-TRIGGER since the last run
    assert d.messages("+tilt") == ["#tilt mode entered"]
    d.run(29_000, answer=lambda d: d.discard())
    assert "+sdown" not in d.types()  # the master never answered, but nothing is decided in TILT
    d.run(1500, answer=lambda d: d.discard())
    assert d.messages("-tilt") == ["#tilt mode exited"]
    assert "+sdown" in d.types()


def test_a_clock_going_backwards_enters_tilt() -> None:
    d = Driver()
    d.tick(100)
    d.tick(-50)
    assert d.types().count("+tilt") == 1


def test_the_wall_clock_jumping_back_or_forward_enters_tilt_as_in_redis_and_moves_no_timer() -> None:
    """Redis's timers run on mstime(), so it enters TILT when that jumps. Here they run on the
    monotonic clock (a step cannot shorten one), yet a wall-clock jump still enters TILT."""
    for step, tilts in ((-150, 1), (2500, 1), (1500, 0), (-50, 0)):
        d = Driver(down_after=1000)
        d.tick(100)
        d.step_wall(step)
        d.tick(100)
        assert d.types().count("+tilt") == tilts, step
    # A step forward under TILT-TRIGGER changes no duration: SDOWN still takes down-after.
    d = Driver(down_after=5000)
    d.run(3000, answer=lambda d: d.discard())
    d.step_wall(1900)
    d.run(1900, answer=lambda d: d.discard())
    assert "+sdown" not in d.types()
    d.run(200, answer=lambda d: d.discard())
    assert "+sdown" in d.types()


def test_a_late_timer_enters_tilt_whatever_the_wall_clock_says() -> None:
    d = Driver()
    d.tick(100)
    d.step_wall(-2400)  # the wall clock stepped back by as much as the timer was late
    d.tick(2500)
    assert d.types().count("+tilt") == 1


# ---------------------------------------------------------------------------- hello


def test_hello_payload_is_published_on_the_hello_channel_every_two_seconds() -> None:
    d = Driver()
    d.run(2200, answer=pong)
    publishes = [a for a in d.actions if getattr(a, "argv", ("",))[0] == "PUBLISH"]
    assert publishes
    assert publishes[0].argv == ("PUBLISH", HELLO_CHANNEL, f"10.9.9.9,26379,{MYID},0,mymaster,10.0.0.1,6379,0")
    d.s.announce_ip, d.s.announce_port = "1.2.3.4", 5555
    before = len(publishes)
    d.run(2200, answer=pong)
    publishes = [a for a in d.actions if getattr(a, "argv", ("",))[0] == "PUBLISH"]
    assert len(publishes) == before + 1
    assert publishes[-1].argv[2] == f"1.2.3.4,5555,{MYID},0,mymaster,10.0.0.1,6379,0"


def test_a_hello_from_an_unknown_sentinel_adds_it() -> None:
    d = Driver()
    d.s.receive_hello(f"10.0.2.9,26379,{'9' * 40},0,mymaster,10.0.0.1,6379,0", now=d.now)
    d.record(d.s.take_actions())
    assert d.messages("+sentinel") == [f"sentinel {'9' * 40} 10.0.2.9 26379 @ mymaster 10.0.0.1 6379"]
    assert d.flushed()
    assert list(d.master.sentinels) == ["9" * 40]


def test_a_hello_with_a_newer_config_epoch_switches_the_master() -> None:
    d = Driver()
    d.add_replica(5)
    d.s.receive_hello(f"10.0.2.9,26379,{'9' * 40},7,mymaster,10.0.1.5,6379,3", now=d.now)
    d.record(d.s.take_actions())
    assert d.types() == ["+sentinel", "+new-epoch", "+config-update-from", "+switch-master", "+slave"]
    assert d.messages("+switch-master") == ["mymaster 10.0.0.1 6379 10.0.1.5 6379"]
    assert d.messages("+slave") == ["slave 10.0.0.1:6379 10.0.0.1 6379 @ mymaster 10.0.1.5 6379"]
    assert d.master.config_epoch == 3 and d.s.current_epoch == 7
    # The same epoch again changes nothing; an older one neither.
    d.events.clear()
    d.s.receive_hello(f"10.0.2.9,26379,{'9' * 40},7,mymaster,10.0.0.1,6379,3", now=d.now)
    d.s.receive_hello(f"10.0.2.9,26379,{'9' * 40},7,mymaster,10.0.0.1,6379,2", now=d.now)
    d.record(d.s.take_actions())
    assert d.types() == []


def test_our_own_hello_on_the_channel_is_ignored_and_malformed_ones_too() -> None:
    d = Driver()
    d.tick()
    pubsub = next(c for c in d.conns.values() if c.pubsub)
    for payload in (f"10.9.9.9,26379,{MYID},0,mymaster,10.0.0.1,6379,0", "1,2,3", "a,b,c,d,e,f,g,h,i"):
        d.record(d.s.step(Message(d.now, pubsub.conn, HELLO_CHANNEL.encode(), payload.encode())))
    assert d.master.sentinels == {} and d.types() == []


# ---------------------------------------------------------------------------- INFO


def test_replicas_are_discovered_from_the_masters_info_and_reboots_noticed() -> None:
    d = Driver()
    d.tick()
    d.answer_all(MASTER, "INFO", info_master(RUN_A, [("10.0.1.1", 6379, 10), ("10.0.1.2", 6380, 10)]))
    assert d.messages("+slave") == [
        "slave 10.0.1.1:6379 10.0.1.1 6379 @ mymaster 10.0.0.1 6379",
        "slave 10.0.1.2:6380 10.0.1.2 6380 @ mymaster 10.0.0.1 6379",
    ]
    assert d.master.runid == RUN_A
    d.run(10_100, answer=pong)
    d.answer_all(MASTER, "INFO", info_master(RUN_B, [("10.0.1.1", 6379, 10)]))
    assert d.messages("+reboot") == ["master mymaster 10.0.0.1 6379"]


def test_a_returning_old_master_is_converted_after_the_master_looked_sane_for_a_while() -> None:
    d = Driver()
    old = d.add_replica(9)
    old_addr = ("10.0.1.9", 6379)

    def answer(d: Driver) -> None:
        pong(d)
        d.answer_all(MASTER, "INFO", info_master(RUN_A))
        d.answer_all(old_addr, "INFO", info_master(RUN_B))

    d.run(7000, answer=answer)
    assert "+convert-to-slave" not in d.types()
    d.run(10_000, answer=answer)  # INFO comes every 10 s; the role must be reported 8 s
    assert d.messages("+convert-to-slave") == ["slave 10.0.1.9:6379 10.0.1.9 6379 @ mymaster 10.0.0.1 6379"]
    block = [a.argv for a in d.actions if getattr(a, "conn", None) == old.link.cc and getattr(a, "argv", ("",))[0] in ("MULTI", "SLAVEOF", "CONFIG", "CLIENT", "EXEC")]
    assert block[-6:] == [
        ("MULTI",), ("SLAVEOF", "10.0.0.1", "6379"), ("CONFIG", "REWRITE"),
        ("CLIENT", "KILL", "TYPE", "normal"), ("CLIENT", "KILL", "TYPE", "pubsub"), ("EXEC",),
    ]


# ---------------------------------------------------------------------------- failover


def _failover_to(d: Driver, replicas: dict[tuple[str, int], bytes], fenced: tuple[int, int, str] | None = None) -> None:
    def answer(d: Driver) -> None:
        pong(d)
        d.answer_all(MASTER, "INFO", info_master(RUN_A, [(h, p, 10) for h, p in replicas], fenced=fenced))
        for addr, info in replicas.items():
            d.answer_all(addr, "INFO", info)

    d.run(1000, answer=answer)
    d.s.failover("mymaster", now=d.now)
    d.record(d.s.take_actions())


def test_manual_failover_promotes_with_the_multi_block_and_renamed_commands() -> None:
    d = Driver()
    d.master.renamed_commands["SLAVEOF"] = "GUESSME"
    _failover_to(d, {("10.0.1.1", 6379): info_replica("3" * 40, offset=5), ("10.0.1.2", 6379): info_replica("4" * 40, offset=7)})
    d.run(300, answer=lambda d: None)
    assert d.messages("+selected-slave") == ["slave 10.0.1.2:6379 10.0.1.2 6379 @ mymaster 10.0.0.1 6379"]
    block = [s.argv for s in d.sent(("10.0.1.2", 6379)) if s.argv[0] != "PING" and s.argv[0] != "INFO"]
    assert block == [
        ("MULTI",), ("GUESSME", "NO", "ONE"), ("CONFIG", "REWRITE"),
        ("CLIENT", "KILL", "TYPE", "normal"), ("CLIENT", "KILL", "TYPE", "pubsub"), ("EXEC",),
    ]
    assert "+failover-state-wait-promotion" in d.types()


def test_failover_runs_to_switch_master_reconfiguring_replicas_one_at_a_time() -> None:
    d = Driver()
    new, other = ("10.0.1.2", 6379), ("10.0.1.1", 6379)
    infos = {other: info_replica("3" * 40, offset=5), new: info_replica("4" * 40, offset=7)}
    _failover_to(d, infos)
    d.run(300, answer=lambda d: d.discard())
    infos[new] = info_master("4" * 40)

    def answer(d: Driver) -> None:
        pong(d)
        d.discard()
        for addr, info in infos.items():
            d.answer_all(addr, "INFO", info)
        d.answer_all(MASTER, "INFO", info_master(RUN_A))

    d.run(1500, answer=answer)
    assert "+promoted-slave" in d.types() and d.master.config_epoch == 1
    assert d.master.failover_state == FAILOVER_RECONF_SLAVES
    assert d.messages("+slave-reconf-sent") == ["slave 10.0.1.1:6379 10.0.1.1 6379 @ mymaster 10.0.0.1 6379"]
    infos[other] = info_replica("3" * 40, new, link_up=False, down_since=1)
    d.run(1500, answer=answer)
    assert "+slave-reconf-inprog" in d.types() and "+slave-reconf-done" not in d.types()
    infos[other] = info_replica("3" * 40, new)
    d.run(1500, answer=answer)
    order = [t for t in d.types() if t in ("+slave-reconf-done", "+failover-end", "+switch-master")]
    assert order == ["+slave-reconf-done", "+failover-end", "+switch-master"]
    assert d.messages("+switch-master") == ["mymaster 10.0.0.1 6379 10.0.1.2 6379"]
    assert (d.master.addr.host, d.master.addr.port) == new
    assert sorted(d.master.slaves) == ["10.0.0.1:6379", "10.0.1.1:6379"]


def test_a_promotion_not_seen_within_the_failover_timeout_aborts() -> None:
    d = Driver(failover_timeout=3000)
    _failover_to(d, {("10.0.1.1", 6379): info_replica("3" * 40)})
    d.run(3500, answer=lambda d: (pong(d), d.answer_all(("10.0.1.1", 6379), "INFO", info_replica("3" * 40))))
    assert d.messages("-failover-abort-slave-timeout") == ["master mymaster 10.0.0.1 6379"]
    assert d.master.failover_state == FAILOVER_NONE and d.master.promoted_slave is None


def test_failover_without_a_good_replica_is_refused() -> None:
    d = Driver()
    d.run(500, answer=pong)
    try:
        d.s.failover("mymaster", now=d.now)
    except Exception as exc:
        assert getattr(exc, "message", "") == "NOGOODSLAVE No suitable replica to promote"
    else:
        raise AssertionError("no error")


def test_a_lost_connection_marks_the_link_disconnected_and_reconnects_a_second_later() -> None:
    d = Driver()
    d.tick()
    cmd = next(c for c in d.conns.values() if not c.pubsub)
    d.record(d.s.step(Closed(d.now, cmd.conn)))
    assert d.master.link.disconnected and "disconnected" in d.master.flag_names()
    d.tick(500)
    assert not [c for c in d.conns.values() if not c.pubsub and c.conn != cmd.conn]
    d.tick(600)
    assert [c for c in d.conns.values() if not c.pubsub and c.conn != cmd.conn]


# ---------------------------------------------------------------------------- fenced mode


def node_id(host: str) -> str:
    """The node id the fenced node at `host` reports (INFO, FENCE)."""
    return host.replace(".", "").rjust(40, "e")


def fence_reply(d: Driver, send: Send, epoch: int, log_epoch: int, offset: int) -> list[object]:
    return [epoch, log_epoch, offset, node_id(d.target(send)[0]).encode()]


def _fenced(d: Driver, offsets: dict[str, tuple[int, int]], priority: dict[str, int] | None = None, *,
            size: int | None = None, lease: int = 1000, node_ids: dict[str, str] | None = None,
            reach_fence: bool = True) -> None:
    """A fenced failover started by hand over replicas at these hosts, every node reporting
    fenced-replica-set-size `size` (default: the master and these replicas) and lease `lease`."""
    d.master.fenced = True
    d.master.lease_ms = 1000
    priority = priority or {}
    size = size if size is not None else 1 + len(offsets)
    ids = node_ids or {}
    infos = {(h, 6379): info_replica(h.replace(".", "").ljust(40, "0"), offset=1, priority=priority.get(h, 100),
                                     fenced=(size, lease, ids.get(h, node_id(h)))) for h in offsets}
    _failover_to(d, infos, fenced=(size, lease, node_id(MASTER[0])))
    d.tick()
    if not reach_fence:
        return
    assert d.types()[-1] in ("+failover-state-fence", "+fenced")
    fences = d.sent(None, "FENCE")
    assert sorted(d.target(f)[0] for f in fences) == sorted(offsets)
    assert all(f.argv == ("FENCE", "1") for f in fences)


def test_fenced_mode_waits_for_a_majority_then_the_lease_then_promotes_the_highest_epoch_and_offset() -> None:
    d = Driver()
    _fenced(d, {"10.0.1.1": (0, 10), "10.0.1.2": (0, 12)})
    fences = d.sent(None, "FENCE")
    first = next(f for f in fences if d.target(f)[0] == "10.0.1.1")
    d.answer(first, fence_reply(d, first, 1, 0, 10))
    d.tick()
    assert "+failover-state-wait-lease" not in d.types()  # 1 of the 2 replicas needed (3 nodes)
    second = next(f for f in fences if d.target(f)[0] == "10.0.1.2")
    d.answer(second, fence_reply(d, second, 1, 0, 12))
    d.tick()
    assert d.messages("+failover-state-wait-lease") == ["master mymaster 10.0.0.1 6379 2/3"]
    waited = lease_wait_ms(1000, 50)
    assert waited == 1106
    d.run(waited - 200, answer=lambda d: None)
    assert "+selected-slave" not in d.types()
    d.run(300, answer=lambda d: None)
    assert d.messages("+selected-slave") == ["slave 10.0.1.2:6379 10.0.1.2 6379 @ mymaster 10.0.0.1 6379"]
    d.tick()
    # The promotion names the position the leader relied on (the replica's FENCE reply): a
    # node that restarted from an older AOF since refuses it.
    assert ("SLAVEOF", "NO", "ONE", "EPOCH", "1", "POSITION", "0", "12") in [s.argv for s in d.sent(("10.0.1.2", 6379))]


def test_fenced_mode_refuses_to_promote_past_a_better_replica_it_cannot_promote() -> None:
    d = Driver()
    _fenced(d, {"10.0.1.1": (0, 10), "10.0.1.2": (0, 12)}, priority={"10.0.1.2": 0})
    for f in d.sent(None, "FENCE"):
        d.answer(f, fence_reply(d, f, 1, 0, 12 if d.target(f)[0] == "10.0.1.2" else 10))
    d.run(1500, answer=lambda d: None)
    assert "-failover-abort-no-good-slave" in d.types()


def test_fenced_mode_ignores_replies_fenced_by_a_newer_epoch_and_times_out() -> None:
    d = Driver(failover_timeout=3000)
    _fenced(d, {"10.0.1.1": (0, 10), "10.0.1.2": (0, 12)})
    for f in d.sent(None, "FENCE"):
        d.answer(f, fence_reply(d, f, 2, 0, 10))
    d.run(3500, answer=lambda d: None)
    assert "+failover-state-wait-lease" not in d.types()
    assert "-failover-abort-fence-timeout" in d.types()


def _refused(d: Driver, reason: str) -> None:
    """The leader refused to fence-fail-over: an abort event naming the reason, a log line,
    and not one FENCE sent."""
    assert d.messages("-failover-abort-fenced-mismatch") == [f"master mymaster 10.0.0.1 6379 {reason}"]
    assert any(isinstance(a, Log) and reason in a.text for a in d.actions)
    assert not d.sent(None, "FENCE") and "+failover-state-fence" not in d.types()
    assert d.master.failover_state == FAILOVER_NONE


def test_a_fenced_failover_is_refused_while_the_nodes_count_more_members_than_the_sentinel_knows() -> None:
    """After SENTINEL RESET, or restarted from a stale file, a sentinel may know fewer
    replicas than the replica set has: its majority would not be one."""
    d = Driver()
    _fenced(d, {"10.0.1.1": (0, 10), "10.0.1.2": (0, 12)}, size=5, reach_fence=False)
    _refused(d, "the nodes say fenced-replica-set-size 5, this sentinel knows 3 members "
                "(the master and 2 replicas; SENTINEL RESET and the master's INFO can teach it the others)")


def test_a_fenced_failover_is_refused_while_a_node_has_another_lease() -> None:
    d = Driver()
    _fenced(d, {"10.0.1.1": (0, 10), "10.0.1.2": (0, 12)}, lease=5000, reach_fence=False)
    _refused(d, "10.0.0.1:6379 has fenced-lease-milliseconds 5000, this sentinel waits out 1000")


def test_a_fenced_failover_is_refused_while_a_node_is_not_in_fenced_mode() -> None:
    d = Driver()
    d.master.fenced = True
    infos = {("10.0.1.1", 6379): info_replica("3" * 40, offset=5, fenced=(3, 1000, node_id("10.0.1.1"))),
             ("10.0.1.2", 6379): info_replica("4" * 40, offset=7)}
    _failover_to(d, infos, fenced=(3, 1000, node_id(MASTER[0])))
    d.tick()
    _refused(d, "10.0.1.2:6379 reports no fenced mode in INFO")


def test_a_node_known_under_two_addresses_is_one_member_and_counts_once_when_fenced() -> None:
    """Two replica entries with one node id (one node the sentinel learned under two
    addresses): three members, and its two FENCE replies are one of the two needed."""
    d = Driver()
    same = node_id("10.0.1.2")
    _fenced(d, {"10.0.1.1": (0, 10), "10.0.1.2": (0, 12), "10.0.1.3": (0, 12)}, size=3,
            node_ids={"10.0.1.3": same})
    for f in d.sent(None, "FENCE"):
        if d.target(f)[0] != "10.0.1.1":
            d.answer(f, [1, 0, 12, same.encode()])
    d.tick()
    assert "+failover-state-wait-lease" not in d.types()  # one member of the two needed
    d.answer(next(f for f in d.sent(None, "FENCE") if d.target(f)[0] == "10.0.1.1"),
             [1, 0, 10, node_id("10.0.1.1").encode()])
    d.tick()
    assert d.messages("+failover-state-wait-lease") == ["master mymaster 10.0.0.1 6379 2/3"]


STRANDED = ("10.0.1.1", 6379)  # fenced at epoch 2 by a failover that then aborted
FOLLOWING = ("10.0.1.2", 6379)


def _stranded(d: Driver, *, fenced: bool, master_epochs: tuple[int, int, int] = (0, 0, 0)) -> Callable[[Driver], None]:
    """A healthy master of epoch 0 (one sentinel, quorum 1) with a replica following it and
    one fenced at epoch 2 that refuses it; returns the answerer that keeps it so."""
    d.master.fenced = fenced
    d.master.quorum = 1

    def answer(d: Driver) -> None:
        pong(d)
        d.answer_all(MASTER, "INFO", info_master(RUN_A, [(FOLLOWING[0], 6379, 40)], fenced=(3, 1000, node_id(MASTER[0])),
                                                 epochs=master_epochs))
        d.answer_all(STRANDED, "INFO", info_replica("3" * 40, offset=30, link_up=False, down_since=5,
                                                    fenced=(3, 1000, node_id(STRANDED[0])), epochs=(2, 0, 0)))
        d.answer_all(FOLLOWING, "INFO", info_replica("4" * 40, offset=40, fenced=(3, 1000, node_id(FOLLOWING[0]))))

    d.add_replica(1)
    d.add_replica(2)
    return answer


def test_fenced_mode_re_tenures_a_healthy_master_whose_replicas_an_aborted_failover_fenced() -> None:
    """docs/safety.md, bug 4: a replica fenced at epoch 2 by a failover that aborted refuses
    the master of epoch 0 for good. Once that has lasted as long as a failover could take
    (2 x failover-timeout + the lease wait), the sentinel is elected for a new epoch, fences
    the replicas, then the master (last, once its reply completes a majority), waits the
    lease out and gives the master the new epoch at the position of its FENCE reply, without
    killing its clients; the master's INFO showing it leads that epoch ends the re-tenure."""
    d = Driver(failover_timeout=3000)
    answer = _stranded(d, fenced=True)
    for _ in range(30):
        if "+fenced-stranded" in d.types():
            break
        d.run(100, answer=answer)
    assert d.messages("+fenced-stranded") == [
        "master mymaster 10.0.0.1 6379 replicas fenced above the master's epoch 0: 10.0.1.1:6379@2"]
    d.run(2 * 3000 + lease_wait_ms(1000, 50) - 200, answer=answer)
    assert "+try-fenced-retenure" not in d.types()
    d.run(1500, answer=answer)
    assert "+try-failover" not in d.types()
    assert d.types()[-4:] == ["+try-fenced-retenure", "+vote-for-leader", "+elected-leader", "+failover-state-fence"]
    epoch = d.master.failover_epoch
    assert epoch == 1 and d.master.retenure
    fences = d.sent(None, "FENCE")
    assert sorted(d.target(f) for f in fences) == [STRANDED, FOLLOWING]  # not the master yet
    stranded = next(f for f in fences if d.target(f) == STRANDED)
    d.answer(stranded, fence_reply(d, stranded, 2, 0, 30))  # fenced newer: does not count
    following = next(f for f in fences if d.target(f) == FOLLOWING)
    d.answer(following, fence_reply(d, following, epoch, 0, 40))
    d.tick()
    [master_fence] = d.sent(MASTER, "FENCE")
    assert master_fence.argv == ("FENCE", str(epoch))
    d.answer(master_fence, fence_reply(d, master_fence, epoch, 0, 45))
    d.tick()
    assert d.messages("+failover-state-wait-lease") == ["master mymaster 10.0.0.1 6379 2/3"]
    d.run(lease_wait_ms(1000, 50) + 200, answer=lambda d: None)
    assert d.messages("+fenced-retenure") == [f"master mymaster 10.0.0.1 6379 epoch {epoch} position 0 45"]
    block = [s.argv for s in d.sent(MASTER) if s.argv[0] not in ("PING", "INFO", "PUBLISH")]
    assert block == [("MULTI",), ("SLAVEOF", "NO", "ONE", "EPOCH", str(epoch), "POSITION", "0", "45"),
                     ("CONFIG", "REWRITE"), ("EXEC",)]
    d.discard()
    # Still its old epoch: not over.
    d.run(1100, answer=answer)
    assert "+fenced-retenure-end" not in d.types()
    d.run(1100, answer=lambda d: d.answer_all(MASTER, "INFO", info_master(
        RUN_A, [], fenced=(3, 1000, node_id(MASTER[0])), epochs=(epoch, epoch, epoch))))
    assert d.messages("+fenced-retenure-end") == [f"master mymaster 10.0.0.1 6379 epoch {epoch}"]
    assert d.master.config_epoch == epoch and d.master.failover_state == FAILOVER_NONE and not d.master.retenure


def test_a_re_tenure_that_fences_no_majority_leaves_the_master_unfenced() -> None:
    d = Driver(failover_timeout=3000)
    answer = _stranded(d, fenced=True)
    d.run(2000 + 2 * 3000 + lease_wait_ms(1000, 50) + 200, answer=answer)
    assert "+failover-state-fence" in d.types()
    d.pending = [p for p in d.pending if p.argv[0] != "FENCE"]  # never answered
    d.run(3500, answer=lambda d: d.discard())
    assert "-failover-abort-fence-timeout" in d.types()
    assert not any(a.argv[0] == "FENCE" for a in d.actions if isinstance(a, Send) and d.target(a) == MASTER)


def test_a_re_tenure_promotes_a_replica_that_holds_more_than_the_master() -> None:
    """The master is a candidate, not a given: a fenced replica whose log is further (a newer
    epoch's) is promoted as in any failover, so no majority write of that epoch is lost."""
    d = Driver(failover_timeout=3000)
    answer = _stranded(d, fenced=True)
    d.run(2000 + 2 * 3000 + lease_wait_ms(1000, 50) + 200, answer=answer)
    epoch = d.master.failover_epoch
    for f in d.sent(None, "FENCE"):
        d.answer(f, fence_reply(d, f, epoch, 2, 31) if d.target(f) == STRANDED else fence_reply(d, f, epoch, 0, 40))
    d.tick()
    for f in d.sent(MASTER, "FENCE"):
        d.answer(f, fence_reply(d, f, epoch, 0, 45))
    d.run(lease_wait_ms(1000, 50) + 300, answer=lambda d: None)
    assert d.messages("+selected-slave") == ["slave 10.0.1.1:6379 10.0.1.1 6379 @ mymaster 10.0.0.1 6379"]
    assert "+fenced-retenure" not in d.types()
    assert ("SLAVEOF", "NO", "ONE", "EPOCH", str(epoch), "POSITION", "2", "31") in [s.argv for s in d.sent(STRANDED)]


def test_default_mode_never_re_tenures() -> None:
    """Redis's behaviour stays: a healthy master is left alone whatever its replicas say."""
    d = Driver(failover_timeout=3000)
    answer = _stranded(d, fenced=False)
    d.run(30_000, answer=answer)
    assert not {"+fenced-stranded", "+try-fenced-retenure", "+try-failover"} & set(d.types())
    assert not any(isinstance(a, Send) and a.argv[0] == "FENCE" for a in d.actions)


def test_lease_wait_covers_the_lease_on_the_slowest_and_fastest_clocks() -> None:
    for lease in (1, 100, 999, 5000):
        for drift in (0, 10, 50, 200):
            wait = lease_wait_ms(lease, drift)
            rho = drift / 1000
            # Waiting `wait` on a clock running (1 + rho) fast is at least the lease measured on
            # a clock running (1 - rho) slow.
            assert wait / (1 + rho) >= lease / (1 - rho) - 1e-9


def test_timings_list_in_sentinel_debug_order() -> None:
    assert [name for name, _ in Timings().debug_fields()] == [
        "INFO-PERIOD", "PING-PERIOD", "ASK-PERIOD", "PUBLISH-PERIOD", "DEFAULT-DOWN-AFTER",
        "DEFAULT-FAILOVER-TIMEOUT", "TILT-TRIGGER", "TILT-PERIOD", "SLAVE-RECONF-TIMEOUT",
        "MIN-LINK-RECONNECT-PERIOD", "ELECTION-TIMEOUT", "SCRIPT-MAX-RUNTIME", "SCRIPT-RETRY-DELAY",
    ]


def test_votes_of_a_later_epoch_do_not_elect_a_candidate_of_an_earlier_one() -> None:
    """Redis counts the votes of its current epoch (redis/redis#2230): a candidate of epoch 1
    whose current epoch moved to 2 could win with votes of epoch 2 while another sentinel won
    epoch 1 — two leaders promoting under config epoch 1. Only the failover's epoch counts."""
    d = Driver(quorum=2, down_after=1000)
    _odown_with(d, 4)
    assert d.master.failover_epoch == 1
    d.answer_all(None, "SENTINEL", [1, b"x" * 40, 1])  # epoch 1 went to another sentinel
    d.tick()
    d.s.receive_hello(f"10.0.2.1,26379,{'1' * 40},2,mymaster,10.0.0.1,6379,0", now=d.now)
    d.record(d.s.take_actions())
    assert d.s.current_epoch == 2
    d.run(1100, answer=pong_all_but_master)
    asks = d.sent(None, "SENTINEL")
    assert asks and all(a.argv[4] == "1" and a.argv[5] == MYID for a in asks)  # asked in its own epoch
    for ask in asks:
        d.answer(ask, [1, MYID.encode(), 2])  # votes of epoch 2, as Redis voters could give
    d.run(12_000, answer=pong_all_but_master)
    assert "+elected-leader" not in d.types()
    assert "-failover-abort-not-elected" in d.types()


def test_a_failover_cannot_end_while_the_promoted_replica_is_down() -> None:
    """Redis's one unbounded wait (sentinelFailoverDetectEnd returns early while the promoted
    replica is SDOWN, before looking at failover-timeout): only its return, or a newer
    configuration from another sentinel, ends the failover."""
    d = Driver(down_after=1000, failover_timeout=6000)
    new, other = ("10.0.1.2", 6379), ("10.0.1.1", 6379)
    infos = {other: info_replica("3" * 40, offset=5), new: info_replica("4" * 40, offset=7)}
    _failover_to(d, infos)
    d.run(300, answer=lambda d: d.discard())
    infos[new] = info_master("4" * 40)
    promoted_up = True

    def answer(d: Driver) -> None:
        for send in d.sent(None, "PING"):
            if d.target(send) != new or promoted_up:
                d.answer(send, "PONG")
        d.discard()
        for addr, info in infos.items():
            if addr != new or promoted_up:
                d.answer_all(addr, "INFO", info)
        d.answer_all(MASTER, "INFO", info_master(RUN_A))

    d.run(1500, answer=answer)
    assert d.master.failover_state == FAILOVER_RECONF_SLAVES
    promoted_up = False
    d.run(30_000, answer=answer)  # far past failover-timeout
    assert d.master.promoted_slave is not None and d.master.promoted_slave.flags & S_DOWN
    assert d.master.failover_state == FAILOVER_RECONF_SLAVES and "+failover-end" not in d.types()
    promoted_up = True
    d.run(2000, answer=answer)
    assert "+failover-end-for-timeout" in d.types() and "+switch-master" in d.types()
