"""The server core in sentinel mode (what `rill sentinel` is built on) compared with Debian's
redis-sentinel (7.0): the commands a sentinel shares with a node, the unknown-command error
for every other one, HELLO's map, Pub/Sub framing and its RESP2 restrictions, and INFO's
sections, byte for byte over raw sockets, RESP2 and RESP3. Also: redis-py 8's handshake (HELLO
3, CLIENT SETINFO, CLIENT MAINT_NOTIFICATIONS) against the core, and the server-side publish
hook reaching subscribers.

Where 7.0 and 7.2 differ the test pins 7.2 (CLIENT SETINFO exists since 7.2).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import redis

from node.commands.context import ClientSession
from node.server.core import ServerCore
from node.server.sentinel_mode import sentinel_commands
from tests.conformance.harness import RawConnection
from tests.conformance.sentinel.procs import cluster
from tests.server_core import RunningCore, running_core


def _with_sentinel_section(core: ServerCore) -> None:
    core.info_sections.add("sentinel", "Sentinel", lambda: [("sentinel_masters", 0)])


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[int, RunningCore]]:
    with cluster() as c, running_core(sentinel_commands(), mode="sentinel", setup=_with_sentinel_section) as rc:
        port = c.sentinel("s", lambda p, d: f"port {p}\nbind 127.0.0.1\ndir {d}\n")
        yield port, rc


def _pair(servers: tuple[int, RunningCore], proto: int) -> tuple[RawConnection, RawConnection]:
    oracle, rill = RawConnection(servers[0]), RawConnection(servers[1].port)
    if proto == 3:
        oracle.call("HELLO", "3")
        rill.call("HELLO", "3")
    return oracle, rill


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request: pytest.FixtureRequest) -> int:
    return int(request.param)


# Commands a node has and a sentinel does not: unknown there, with Redis's text.
NOT_IN_SENTINEL = [
    ("GET", "x"), ("SET", "x", "1"), ("XADD", "s", "*", "a", "b"), ("SELECT", "1"), ("MULTI",), ("EXEC",),
    ("QUIT",), ("ECHO", "a"), ("CONFIG", "GET", "port"), ("PUBSUB", "CHANNELS"), ("RESET",), ("SSUBSCRIBE", "c"),
    ("SPUBLISH", "c", "m"), ("MONITOR",), ("WAIT", "0", "0"), ("DBSIZE",), ("FLUSHALL",), ("TIME",),
]


@pytest.mark.parametrize("cmd", NOT_IN_SENTINEL, ids=lambda c: " ".join(c))
def test_a_command_a_sentinel_lacks_is_unknown_with_redis_text(servers: tuple[int, RunningCore], cmd: tuple[str, ...]) -> None:
    oracle, rill = _pair(servers, 2)
    assert rill.call(*cmd) == oracle.call(*cmd)


SHARED = [
    ("PING",), ("PING", "hello"), ("PING", "a", "b"), ("CLIENT", "NO-TOUCH", "on"), ("CLIENT", "MAINT_NOTIFICATIONS", "on"),
    ("CLIENT", "GETNAME"), ("CLIENT", "SETNAME", "a b"), ("CLIENT", "SETNAME", "sentinel-x"), ("CLIENT", "GETNAME"),
    ("CLIENT", "NOPE"), ("CLIENT",), ("AUTH", "x"), ("AUTH", "a", "b", "c"), ("HELLO", "4"), ("HELLO", "x"),
    ("COMMAND", "INFO", "get"), ("COMMAND", "INFO", "nope"), ("COMMAND", "GETKEYS", "get", "x"),
    ("SUBSCRIBE",), ("UNSUBSCRIBE",), ("PUNSUBSCRIBE",), ("UNSUBSCRIBE", "a", "b"), ("SHUTDOWN", "NOPE"),
    ("INFO", "memory"), ("INFO", "commandstats"), ("INFO", "keyspace"), ("INFO", "nosuchsection"),
]


@pytest.mark.parametrize("cmd", SHARED, ids=lambda c: " ".join(c))
def test_shared_commands_reply_as_redis_sentinel(servers: tuple[int, RunningCore], proto: int, cmd: tuple[str, ...]) -> None:
    oracle, rill = _pair(servers, proto)
    assert rill.call(*cmd) == oracle.call(*cmd)


def _without_version_and_id(reply: bytes) -> bytes:
    reply = re.sub(rb"\$5\r\n7\.\d\.\d+\r\n|\$6\r\n7\.\d\.\d+\r\n", b"<version>", reply)
    return re.sub(rb"id\r\n:\d+\r\n", b"id\r\n:<id>\r\n", reply)


@pytest.mark.parametrize("hello", [("HELLO", "3"), ("HELLO", "2"), ("HELLO",), ("HELLO", "3", "SETNAME", "n")])
def test_hello_says_sentinel_mode_and_has_no_role(servers: tuple[int, RunningCore], hello: tuple[str, ...]) -> None:
    oracle, rill = _pair(servers, 2)
    theirs, ours = oracle.call(*hello), rill.call(*hello)
    assert b"sentinel" in ours and b"role" not in ours
    assert _without_version_and_id(ours) == _without_version_and_id(theirs)


def test_subscribed_resp2_connection_is_restricted_as_on_redis_sentinel(servers: tuple[int, RunningCore]) -> None:
    oracle, rill = _pair(servers, 2)
    steps = [("SUBSCRIBE", "a", "b"), ("PSUBSCRIBE", "x*"), ("PING",), ("PING", "z"), ("CLIENT", "LIST"),
             ("GET", "k"), ("INFO",), ("UNSUBSCRIBE",), ("PUNSUBSCRIBE", "x*", "y*"), ("PING",)]
    for cmd in steps:
        oracle.send(*cmd)
        rill.send(*cmd)
    # SUBSCRIBE a b answers with two frames, UNSUBSCRIBE (all) with two, PUNSUBSCRIBE with two.
    frames = 2 + 1 + 1 + 1 + 1 + 1 + 1 + 2 + 2 + 1
    theirs = [oracle.read_reply() for _ in range(frames)]
    ours = [rill.read_reply() for _ in range(frames)]
    # UNSUBSCRIBE without names goes through the client's channels in hash order on Redis:
    # the same channels, the same counts.
    assert _names_and_counts(ours[8:10]) == _names_and_counts(theirs[8:10])
    assert ours[:8] + ours[10:] == theirs[:8] + theirs[10:]


def _names_and_counts(frames: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """The names and, in order, the counts of (un)subscribe confirmations."""
    names = sorted(frame.split(b"\r\n")[4] for frame in frames)
    return names, [frame.split(b"\r\n")[5] for frame in frames]


def test_info_has_redis_sentinels_sections_and_fields(servers: tuple[int, RunningCore]) -> None:
    oracle, rill = _pair(servers, 2)
    for args in [(), ("default",), ("all",), ("everything",), ("server", "cpu"), ("sentinel",), ("SERVER",)]:
        theirs = oracle.call("INFO", *args).decode()
        ours = rill.call("INFO", *args).decode()
        titles = re.findall(r"^# (\w+)", theirs, re.M)
        assert re.findall(r"^# (\w+)", ours, re.M) == titles, args
        fields = set(re.findall(r"^(\w+):", theirs, re.M)) - {"sentinel_tilt", "sentinel_tilt_since_seconds",
                                                                  "sentinel_running_scripts", "sentinel_scripts_queue_length",
                                                                  "sentinel_simulate_failure_flags"}
        assert fields <= set(re.findall(r"^(\w+):", ours, re.M)), args
    assert "redis_mode:sentinel" in rill.call("INFO", "server").decode()


def test_client_setinfo_is_accepted_as_redis_7_2_does(servers: tuple[int, RunningCore]) -> None:
    _, rill = _pair(servers, 2)
    assert rill.call("CLIENT", "SETINFO", "LIB-NAME", "redis-py") == b"+OK\r\n"
    assert b"lib-name=redis-py" in rill.call("CLIENT", "INFO")


def test_redis_py_8_connects_with_resp3_and_its_handshake(servers: tuple[int, RunningCore]) -> None:
    client = redis.Redis(host="127.0.0.1", port=servers[1].port, protocol=3)
    try:
        assert client.ping() is True
        assert client.client_info()["lib-name"] == "redis-py"
        assert client.info("server")["redis_mode"] == "sentinel"
    finally:
        client.close()


def test_the_server_side_publish_hook_reaches_subscribers(servers: tuple[int, RunningCore]) -> None:
    _, rc = servers
    sub2, sub3 = RawConnection(rc.port), RawConnection(rc.port)
    sub3.call("HELLO", "3")
    assert sub2.call("SUBSCRIBE", "+sdown") == b"*3\r\n$9\r\nsubscribe\r\n$6\r\n+sdown\r\n:1\r\n"
    assert sub3.call("PSUBSCRIBE", "*") == b">3\r\n$10\r\npsubscribe\r\n$1\r\n*\r\n:1\r\n"
    receivers = rc.call(lambda: rc.core.pubsub.publish(b"+sdown", b"master mymaster 127.0.0.1 6379"))
    assert receivers == 2
    assert sub2.read_reply() == b"*3\r\n$7\r\nmessage\r\n$6\r\n+sdown\r\n$30\r\nmaster mymaster 127.0.0.1 6379\r\n"
    assert sub3.read_reply() == (
        b">4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$6\r\n+sdown\r\n$30\r\nmaster mymaster 127.0.0.1 6379\r\n"
    )


def test_shutdown_hands_its_flags_to_the_owner_and_blocks_the_caller() -> None:
    calls: list[tuple[int, frozenset[str]]] = []

    def on_shutdown(session: ClientSession | None, flags: frozenset[str]) -> None:
        calls.append((session.id if session else 0, flags))

    with running_core(sentinel_commands(), mode="sentinel", on_shutdown=on_shutdown) as rc:
        conn = RawConnection(rc.port, timeout=0.5)
        my_id = int(conn.call("CLIENT", "ID")[1:-2])
        conn.send("SHUTDOWN", "NOSAVE")
        with pytest.raises(TimeoutError):
            conn.read_reply()  # as in Redis, the caller gets no reply: its connection closes with the server
        assert rc.call(lambda: list(calls)) == [(my_id, frozenset({"nosave"}))]
