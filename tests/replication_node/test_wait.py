"""WAIT, WAITAOF and min-replicas-to-write against real replicas: counts with 0, 1 and 2
replicas up and with one frozen, timeouts, WAIT 0 blocking until an ack, the non-blocking
form inside MULTI, replica refusals, and writes refused then accepted again as replicas come
and go."""

from __future__ import annotations

import re
import threading
import time

import pytest
import redis

from tests.conftest import Server
from tests.replication_node.nodes import info, raw_client, start_node, stopped, wait_synced, wait_until

WAIT_ON_REPLICA = (
    "WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is "
    "configured to be writable (which is not the default) writes to replicas are just local and are not "
    "propagated."
)
NOREPLICAS = "NOREPLICAS Not enough good replicas to write."


def _seconds(time_reply: list[bytes]) -> float:
    """A raw TIME reply in seconds."""
    return int(time_reply[0]) + int(time_reply[1]) / 1e6


def _timed(c: redis.Redis, *command: object) -> tuple[object, float]:
    started = time.monotonic()
    reply = c.execute_command(*command)
    return reply, time.monotonic() - started


def test_wait_counts_the_replicas_that_acknowledged_the_clients_last_write(trio: tuple[Server, Server, Server]) -> None:
    primary, a, b = trio
    with raw_client(primary) as c:
        assert c.execute_command("WAIT", 2, 0) == 2  # nothing written yet: everyone has it
        c.execute_command("XADD", "s", "*", "f", "v")
        assert c.execute_command("WAIT", 2, 0) == 2  # 0: until both acknowledged
        with stopped(b):
            c.execute_command("XADD", "s", "*", "f", "v")
            assert c.execute_command("WAIT", 1, 0) == 1
            reply, took = _timed(c, "WAIT", 2, 400)
            assert reply == 1 and took >= 0.35, "one frozen replica: the timeout answers the count"
        wait_synced(primary, a, b)
        assert c.execute_command("WAIT", 2, 5000) == 2


def test_wait_ships_units_the_batch_interval_holds_back_at_once(trio: tuple[Server, Server, Server]) -> None:
    """repl-batch-interval (and repl-busy-batch-interval, on the same path) keeps a steady
    write load's units back for up to that long; WAIT does not wait for it. Judged on the
    primary's clock: the interval would ship the held units 1 s after the first flush, which
    came after `before`, so a WAIT answered within that second was not waiting for it."""
    primary, a, b = trio
    with raw_client(primary) as c, raw_client(a) as on_a:
        c.execute_command("CONFIG", "SET", "repl-batch-interval", 1000)
        before = _seconds(c.execute_command("TIME"))
        for n in range(20):
            c.execute_command("XADD", "s", "*", "n", n)  # the first goes at once, the rest wait
        assert on_a.execute_command("XLEN", "s") < 20, "the interval held nothing back"
        assert c.execute_command("WAIT", 2, 0) == 2
        assert _seconds(c.execute_command("TIME")) - before < 1.0
        assert on_a.execute_command("XLEN", "s") == 20
    wait_synced(primary, a, b)


def test_wait_without_replicas_times_out_with_zero(started: list[Server]) -> None:
    node = start_node()
    started.append(node)
    with raw_client(node) as c:
        c.execute_command("XADD", "s", "*", "f", "v")
        assert c.execute_command("WAIT", 0, 0) == 0
        reply, took = _timed(c, "WAIT", 1, 200)
        assert reply == 0 and took >= 0.15


def test_wait_zero_blocks_until_a_replica_acknowledges(trio: tuple[Server, Server, Server]) -> None:
    primary, a, b = trio
    result: list[object] = []
    with raw_client(primary) as c, stopped(b):
        with stopped(a):
            c.execute_command("XADD", "s", "*", "f", "v")
            waiter = threading.Thread(target=lambda: result.append(c.execute_command("WAIT", 1, 0)))
            waiter.start()
            wait_until(lambda: info(primary, "clients")["blocked_clients"] == "1", "WAIT to block")
            assert not result, "WAIT 1 0 waits while no replica has the write"
        waiter.join(5)  # `a` runs again and acknowledges
        assert result == [1]


def test_wait_inside_multi_answers_at_once(trio: tuple[Server, Server, Server]) -> None:
    primary, _, b = trio
    with raw_client(primary) as c, stopped(b):
        c.execute_command("XADD", "s", "*", "f", "v")
        assert c.execute_command("WAIT", 1, 5000) == 1
        pipe = c.pipeline(transaction=True)
        pipe.execute_command("WAIT", 2, 0)  # would wait for `b` forever outside MULTI
        assert pipe.execute() == [1]


def test_wait_on_a_replica_and_bad_arguments_are_refused(trio: tuple[Server, Server, Server]) -> None:
    primary, a, _ = trio
    with raw_client(a) as c, pytest.raises(redis.ResponseError, match=f"^{re.escape(WAIT_ON_REPLICA)}$"):
        c.execute_command("WAIT", "nonsense", 0)  # the role is checked first, as in Redis
    with raw_client(primary) as c:
        with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
            c.execute_command("WAIT", "x", 0)
        with pytest.raises(redis.ResponseError, match="^timeout is negative$"):
            c.execute_command("WAIT", 1, -1)


def test_min_replicas_to_write_refuses_writes_until_enough_replicas_are_good(trio: tuple[Server, Server, Server]) -> None:
    primary, a, b = trio
    with raw_client(primary) as c:
        c.execute_command("CONFIG", "SET", "min-replicas-to-write", 2, "min-replicas-max-lag", 2)
        c.execute_command("XADD", "s", "*", "f", "v")
        with stopped(b):
            def refused() -> bool:
                try:
                    c.execute_command("XADD", "s", "*", "f", "v")
                except redis.ResponseError as exc:
                    assert str(exc) == NOREPLICAS
                    return True
                return False

            wait_until(refused, "writes to be refused with one replica frozen", timeout=10)
            assert int(info(primary)["min_slaves_good_slaves"]) == 1
            with pytest.raises(redis.ResponseError, match=NOREPLICAS):
                c.execute_command("SET", "k", "v")
            # A write in MULTI is refused when queued, which dooms the transaction.
            length = c.execute_command("XLEN", "s")  # reads go on
            pipe = c.pipeline(transaction=True)
            pipe.execute_command("XADD", "s", "*", "f", "v")
            with pytest.raises(redis.ResponseError, match=NOREPLICAS):
                pipe.execute()
            assert c.execute_command("XLEN", "s") == length

        def accepted() -> bool:
            try:
                return bool(c.execute_command("XADD", "s", "*", "f", "back"))
            except redis.ResponseError:
                return False

        wait_until(accepted, "writes to be accepted again once the replica is back")
        c.execute_command("CONFIG", "SET", "min-replicas-to-write", 0)
    wait_synced(primary, a, b)


def test_waitaof_counts_local_and_replica_fsyncs(started: list[Server]) -> None:
    primary = start_node("--appendonly", "yes", "--appendfsync", "always")
    started.append(primary)
    replica = start_node("--appendonly", "yes", replicaof=primary)
    started.append(replica)
    wait_synced(primary, replica)
    with raw_client(primary) as c:
        c.execute_command("XADD", "s", "*", "f", "v")
        assert c.execute_command("WAITAOF", 1, 1, 10_000) == [1, 1]
        with stopped(replica):
            c.execute_command("XADD", "s", "*", "f", "v")
            reply, took = _timed(c, "WAITAOF", 1, 1, 300)
            assert reply == [1, 0] and took >= 0.25
    with raw_client(replica) as c, pytest.raises(redis.ResponseError, match="^WAITAOF cannot be used with replica"):
        c.execute_command("WAITAOF", 0, 1, 0)
