"""`rill sentinel` with real processes: Rill sentinels failing over redis-server nodes and Rill
nodes, Rill and Redis sentinels agreeing on one failover, and redis-py's Sentinel client
(sync and asyncio) following the primary across a SIGKILL and a SIGSTOP; the old primary,
back, ends up a replica of the new one. (Debian's redis-sentinel managing Rill nodes is
tests/sentinel_interop/'s.)

Each test starts a primary with two replicas and three sentinels (quorum 2,
down-after-milliseconds 1000) on free loopback ports, and stops everything it started.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable

import pytest
import redis
import redis.asyncio
import redis.asyncio.sentinel
import redis.sentinel

from tests.conformance.sentinel.procs import Cluster, cluster, wait_until

DOWN_AFTER = 1000
# Short, so that a split vote is retried soon (the next attempt waits twice this).
FAILOVER_TIMEOUT = 3000
NODES = ("m", "r1", "r2")
# The clients' socket timeout: what a paused primary costs a request before the client asks
# the sentinels again (long enough for a loaded machine not to time out a healthy node).
TIMEOUT = 2.0
RETRIED = (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError)
# Bounds, not expectations: a failover here takes seconds, but a sentinel starved of CPU for
# 2 s enters TILT and does nothing for 30 s (as Redis's does), and a split vote waits
# 2 x failover-timeout before the next attempt.
SETTLE_S, AGREE_S, FOLLOW_S, DEMOTE_S = 60, 120, 60, 120


def sentinel_conf(master_port: int) -> Callable[[int, str], str]:
    def conf(port: int, d: str) -> str:
        return (
            f"port {port}\nbind 127.0.0.1\ndir {d}\nlogfile {d}/sentinel.log\n"
            f"sentinel monitor mymaster 127.0.0.1 {master_port} 2\n"
            f"sentinel down-after-milliseconds mymaster {DOWN_AFTER}\n"
            f"sentinel failover-timeout mymaster {FAILOVER_TIMEOUT}\n"
        )

    return conf


def start(c: Cluster, kinds: tuple[str, ...], nodes: str = "redis") -> list[str]:
    """The nodes (redis-server or Rill) and one sentinel of each kind; returns the sentinels'
    names once every one sees both replicas and the other sentinels."""
    c.node("m", kind=nodes)
    c.node("r1", replica_of="m", kind=nodes)
    c.node("r2", replica_of="m", kind=nodes)
    names = []
    for i, kind in enumerate(kinds):
        name = f"{kind}{i}"
        c.sentinel(name, sentinel_conf(c.ports["m"]), kind=kind)
        names.append(name)
    for name in names:
        wait_until(lambda n=name: settled(c, n, len(names)), SETTLE_S, f"{name} to discover the replicas and sentinels")
    return names


def master_fields(c: Cluster, sentinel: str) -> dict[str, str]:
    client = redis.Redis(port=c.ports[sentinel], decode_responses=True, socket_timeout=2)
    try:
        reply = client.execute_command("SENTINEL", "MASTER", "mymaster")
    finally:
        client.close()
    return dict(zip(reply[::2], reply[1::2])) if isinstance(reply, list) else dict(reply)


def settled(c: Cluster, sentinel: str, sentinels: int) -> bool:
    fields = master_fields(c, sentinel)
    return fields["num-slaves"] == "2" and fields["num-other-sentinels"] == str(sentinels - 1)


def node_named(c: Cluster, port: int) -> str:
    return next(n for n in NODES if c.ports[n] == port)


def wait_for_new_master(c: Cluster, sentinels: list[str], old: str) -> str:
    """Until every sentinel names the same master, not `old`, with the same config epoch."""

    def agreed() -> str | None:
        views = [master_fields(c, s) for s in sentinels]
        ports = {int(v["port"]) for v in views}
        epochs = {v["config-epoch"] for v in views}
        if len(ports) == 1 and len(epochs) == 1 and ports != {c.ports[old]}:
            return node_named(c, ports.pop())
        return None

    result: str = wait_until(agreed, AGREE_S, "the sentinels to agree on a new master")
    return result


def role(c: Cluster, node: str) -> list[object]:
    client = redis.Redis(port=c.ports[node], socket_timeout=2)
    try:
        return list(client.execute_command("ROLE"))
    finally:
        client.close()


def replica_of(c: Cluster, node: str, master: str) -> bool:
    try:
        r = role(c, node)
    except redis.RedisError:
        return False
    return r[0] == b"slave" and int(r[2]) == c.ports[master] and r[3] == b"connected"


def explained(c: Cluster, sentinels: list[str]) -> str:
    """What the sentinels logged that explains a slow failover (TILT, aborted elections)."""
    lines = []
    for s in sentinels:
        path = os.path.join(c.dirs[s], "sentinel.log")
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                lines += [f"{s}: {x.rstrip()}" for x in f if "tilt" in x or "-failover-abort" in x]
    return "\n".join(lines) or "(no TILT, no aborted election)"


def check_failover(c: Cluster, sentinels: list[str], fault: str) -> None:
    try:
        _check_failover(c, sentinels, fault)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{explained(c, sentinels)}") from None


def _check_failover(c: Cluster, sentinels: list[str], fault: str) -> None:
    primary = redis.Redis(port=c.ports["m"])
    primary.xadd("s", {"before": "1"})
    assert primary.execute_command("WAIT", 2, 5000) == 2  # on both replicas before the fault
    primary.close()
    if fault == "kill":
        c.kill("m")
    else:
        c.pause("m")
    new = wait_for_new_master(c, sentinels, "m")
    assert new in ("r1", "r2")
    other = "r2" if new == "r1" else "r1"
    assert role(c, new)[0] == b"master"
    client = redis.Redis(port=c.ports[new])
    assert client.xlen("s") == 1
    client.xadd("s", {"after": "1"})
    client.close()
    wait_until(lambda: replica_of(c, other, new), FOLLOW_S, f"{other} to follow {new}")
    # The old primary comes back and is turned into a replica of the new one.
    if fault == "kill":
        c.restart("m")
    else:
        c.resume("m")
    wait_until(lambda: replica_of(c, "m", new), DEMOTE_S, f"the old primary to become a replica of {new}")


@pytest.mark.parametrize("fault", ["kill", "stop"])
@pytest.mark.parametrize("nodes", ["redis", "rill"])
def test_rill_sentinels_fail_over(nodes: str, fault: str) -> None:
    with cluster() as c:
        sentinels = start(c, ("rill", "rill", "rill"), nodes)
        check_failover(c, sentinels, fault)


@pytest.mark.parametrize("kinds", [("rill", "rill", "redis"), ("rill", "redis", "redis")])
def test_rill_and_redis_sentinels_agree_on_one_failover(kinds: tuple[str, ...]) -> None:
    with cluster() as c:
        sentinels = start(c, kinds)
        check_failover(c, sentinels, "kill")
        # Each sentinel learned the others across the failover: nobody was forgotten.
        for s in sentinels:
            assert master_fields(c, s)["num-other-sentinels"] == "2"


def _retried(call: Callable[[], object], deadline: float) -> object:
    """What an application does around a failover: retry until the client reaches the
    (new) primary."""
    while True:
        try:
            return call()
        except RETRIED:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.parametrize("fault", ["kill", "stop"])
@pytest.mark.parametrize("nodes", ["redis", "rill"])
def test_redis_py_sentinel_client_follows_the_failover(nodes: str, fault: str) -> None:
    with cluster() as c:
        sentinels = start(c, ("rill", "rill", "rill"), nodes)
        addresses = [("127.0.0.1", c.ports[s]) for s in sentinels]
        client = redis.sentinel.Sentinel(addresses, socket_timeout=TIMEOUT)
        master = client.master_for("mymaster", socket_timeout=TIMEOUT)
        replica = client.slave_for("mymaster", socket_timeout=TIMEOUT)
        assert client.discover_master("mymaster") == ("127.0.0.1", c.ports["m"])
        master.xadd("s", {"n": "1"})
        wait_until(lambda: replica.xlen("s") == 1, 10, "a replica to have the entry")
        if fault == "kill":
            c.kill("m")
        else:
            c.pause("m")
        _retried(lambda: master.xadd("s", {"n": "2"}), time.monotonic() + AGREE_S)
        new = wait_for_new_master(c, sentinels, "m")
        assert client.discover_master("mymaster") == ("127.0.0.1", c.ports[new])
        assert _retried(lambda: master.xlen("s"), time.monotonic() + 10) == 2
        wait_until(lambda: _retried(lambda: replica.xlen("s"), time.monotonic() + 10) == 2, 30,
                   "a replica of the new primary to have both entries")
        master.close()
        replica.close()
        if fault == "stop":
            c.resume("m")


@pytest.mark.parametrize("fault", ["kill", "stop"])
def test_redis_py_asyncio_sentinel_client_follows_the_failover(fault: str) -> None:
    with cluster() as c:
        sentinels = start(c, ("rill", "rill", "rill"))
        addresses = [("127.0.0.1", c.ports[s]) for s in sentinels]

        async def scenario() -> None:
            client = redis.asyncio.sentinel.Sentinel(addresses, socket_timeout=TIMEOUT)
            master = client.master_for("mymaster", socket_timeout=TIMEOUT)
            replica = client.slave_for("mymaster", socket_timeout=TIMEOUT)
            async def retried(call: Callable[[], Awaitable[object]], seconds: float) -> object:
                deadline = time.monotonic() + seconds
                while True:
                    try:
                        return await call()
                    except RETRIED:
                        if time.monotonic() > deadline:
                            raise
                        await asyncio.sleep(0.1)

            await master.xadd("s", {"n": "1"})
            deadline = time.monotonic() + 10
            while await retried(lambda: replica.xlen("s"), 10) != 1:
                assert time.monotonic() < deadline, "no replica has the entry"
                await asyncio.sleep(0.05)
            if fault == "kill":
                c.kill("m")
            else:
                c.pause("m")
            await retried(lambda: master.xadd("s", {"n": "2"}), AGREE_S)
            host, port = await client.discover_master("mymaster")
            assert port in (c.ports["r1"], c.ports["r2"])
            assert await retried(lambda: master.xlen("s"), 10) == 2
            await master.aclose()
            await replica.aclose()

        asyncio.run(scenario())
