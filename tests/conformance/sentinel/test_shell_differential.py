"""`rill sentinel` compared with Debian's redis-sentinel over the wire, RESP2 and RESP3.

Two redis-sentinels (`s0`, `s1`) and one `rill sentinel` (`x0`) watch the same redis-server
master with two replicas; each sees the two replicas and the two other sentinels, so `s0`
and `x0` stand in the same place and must answer alike: the same replies (types, field names
and order, values except the ones that measure time), the same errors for bad arguments, the
same side effects of SENTINEL SET / CONFIG SET / MONITOR / REMOVE, the same events published.
The oracle is Redis 7.0; where 7.2 (Rill's reference) answers differently, the test says so
and expects 7.2's answer from Rill.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest

from bench.procs import free_port
from tests.conformance.harness import RawConnection
from tests.conformance.sentinel.procs import Cluster, cluster, wait_until
from tests.conformance.sentinel.test_replies import _normalise
from tests.conformance.stream_support import R, parse

MASTER = "mymaster"


def _conf(master_port: int) -> Callable[[int, str], str]:
    return lambda port, d: (
        f"port {port}\nbind 127.0.0.1\ndir {d}\nsentinel monitor {MASTER} 127.0.0.1 {master_port} 2\n"
        f"sentinel down-after-milliseconds {MASTER} 2000\nsentinel failover-timeout {MASTER} 30000\n"
    )


def _fields(reply: R) -> dict[bytes, bytes]:
    if reply.kind == "%":
        return {k.value: v.value for k, v in reply.value}
    items = [x.value for x in reply.value]
    return dict(zip(items[::2], items[1::2]))


def _settled(port: int) -> bool:
    conn = RawConnection(port)
    try:
        fields = _fields(parse(conn.call("SENTINEL", "MASTER", MASTER)))
    finally:
        conn.close()
    return fields[b"num-slaves"] == b"2" and fields[b"num-other-sentinels"] == b"2"


@pytest.fixture(scope="module")
def trio() -> Iterator[Cluster]:
    with cluster() as c:
        c.node("m")
        c.node("r1", replica_of="m")
        c.node("r2", replica_of="m")
        c.sentinel("s0", _conf(c.ports["m"]))
        c.sentinel("s1", _conf(c.ports["m"]))
        c.rill_sentinel("x0", _conf(c.ports["m"]))
        for name in ("s0", "s1", "x0"):
            wait_until(lambda n=name: _settled(c.ports[n]), 40, f"{name} to see 2 replicas and 2 sentinels")
        yield c


def _shape(r: R) -> R:
    """Keys kept, every bulk value reduced to its kind: for lists whose content differs by
    construction (each sentinel lists the others)."""
    if r.kind == "%":
        return R("%", tuple((k, R(v.kind, "<v>")) for k, v in r.value))
    if r.kind == "*" and r.value is not None:
        items = r.value
        if items and items[0].value == b"name":
            return R("*", tuple(x if i % 2 == 0 else R(x.kind, "<v>") for i, x in enumerate(items)))
        return R("*", tuple(_shape(x) for x in items))
    if r.kind == "$" and r.value is not None:
        return R("$", len(r.value))
    return r


# (command, how to compare): "exact" after masking time-dependent fields, "shape" for the
# lists of sentinels and ids that differ by construction.
COMPARED: list[tuple[tuple[str, ...], str]] = [
    (("PING",), "exact"),
    (("PING", "hello"), "exact"),
    (("SENTINEL", "MASTERS"), "exact"),
    (("SENTINEL", "MASTER", MASTER), "exact"),
    (("SENTINEL", "MASTER", "nope"), "exact"),
    (("SENTINEL", "REPLICAS", MASTER), "exact"),
    (("SENTINEL", "SLAVES", MASTER), "exact"),
    (("SENTINEL", "SENTINELS", MASTER), "shape"),
    (("SENTINEL", "SENTINELS", "nope"), "exact"),
    (("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER), "exact"),
    (("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope"), "exact"),
    (("SENTINEL", "CKQUORUM", MASTER), "exact"),
    (("SENTINEL", "CKQUORUM", "nope"), "exact"),
    (("SENTINEL", "MYID"), "shape"),
    (("SENTINEL", "DEBUG"), "exact"),
    (("SENTINEL", "PENDING-SCRIPTS"), "exact"),
    (("SENTINEL", "SIMULATE-FAILURE", "HELP"), "exact"),
    (("SENTINEL", "SIMULATE-FAILURE", "bogus"), "exact"),
    (("SENTINEL", "INFO-CACHE", "nope"), "exact"),
    (("SENTINEL", "RESET", "nothing-matches-*"), "exact"),
    (("SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "127.0.0.1", "{m}", "0", "*"), "exact"),
    (("SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "127.0.0.1", "x", "0", "*"), "exact"),
    (("SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "127.0.0.1", "{m}", "x", "*"), "exact"),
    (("SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "10.9.9.9", "1", "0", "*"), "exact"),
    (("INFO", "sentinel"), "exact"),
    (("ROLE",), "exact"),
    # Argument errors: arity (checked per subcommand by the command table), unknown names.
    (("SENTINEL",), "exact"),
    (("SENTINEL", "FOO"), "exact"),
    (("SENTINEL", "MASTER"), "exact"),
    (("SENTINEL", "MASTERS", "x"), "exact"),
    (("SENTINEL", "MONITOR", "a", "127.0.0.1", "1"), "exact"),
    (("SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "127.0.0.1", "1", "0"), "exact"),
    (("SENTINEL", "SET", MASTER, "quorum"), "exact"),
    (("SENTINEL", "SET", "nope", "quorum", "2"), "exact"),
    (("SENTINEL", "SET", MASTER, "quorum", "0"), "exact"),
    (("SENTINEL", "SET", MASTER, "quorum", "x"), "exact"),
    (("SENTINEL", "SET", MASTER, "down-after-milliseconds", "-5"), "exact"),
    (("SENTINEL", "SET", MASTER, "master-reboot-down-after-period", "-1"), "exact"),
    (("SENTINEL", "SET", MASTER, "bogus", "1"), "exact"),
    (("SENTINEL", "SET", MASTER, "quorum", "2", "parallel-syncs"), "exact"),
    (("SENTINEL", "SET", MASTER, "notification-script", "/bin/true"), "exact"),
    (("SENTINEL", "SET", MASTER, "client-reconfig-script", "/bin/true"), "exact"),
    (("SENTINEL", "SET", MASTER, "rename-command", "", "x"), "exact"),
    (("SENTINEL", "SET", MASTER, "rename-command", "config"), "exact"),
    (("SENTINEL", "DEBUG", "bogus", "1"), "exact"),
    (("SENTINEL", "DEBUG", "ping-period"), "exact"),
    (("SENTINEL", "DEBUG", "ping-period", "0"), "exact"),
    (("SENTINEL", "DEBUG", "ping-period", "x"), "exact"),
    (("SENTINEL", "CONFIG", "GET", "announce-port"), "exact"),
    (("SENTINEL", "CONFIG", "GET", "resolve-hostnames"), "exact"),
    (("SENTINEL", "CONFIG", "GET", "nothing"), "exact"),
    (("SENTINEL", "CONFIG", "SET", "bogus", "1"), "exact"),
    (("SENTINEL", "CONFIG", "SET", "announce-port", "70000"), "exact"),
    (("SENTINEL", "CONFIG", "SET", "resolve-hostnames", "maybe"), "exact"),
    (("SENTINEL", "MONITOR", "other", "127.0.0.1", "1", "0"), "exact"),
    (("SENTINEL", "MONITOR", "other", "127.0.0.1", "x", "1"), "exact"),
    (("SENTINEL", "MONITOR", "other", "127.0.0.1", "1", "x"), "exact"),
    (("SENTINEL", "MONITOR", "other", "not-an-ip", "1", "1"), "exact"),
    (("SENTINEL", "MONITOR", MASTER, "127.0.0.1", "1", "1"), "exact"),
    (("SENTINEL", "MONITOR", "other", "127.0.0.1", "70000", "1"), "exact"),
    (("SENTINEL", "REMOVE", "nope"), "exact"),
    (("SENTINEL", "FAILOVER", "nope"), "exact"),
    # Commands a sentinel does not have, and its own PUBLISH.
    (("XADD", "s", "*", "f", "v"), "exact"),
    (("GET", "k"), "exact"),
    (("ECHO", "x"), "exact"),
    (("PUBLISH", "chan", "x"), "exact"),
    (("PUBLISH", "__sentinel__:hello", "not,a,hello"), "exact"),
    (("CLIENT", "SETNAME", "differential"), "exact"),
    (("CLIENT", "GETNAME"), "exact"),
    # A sentinel has no replication links: a CLIENT KILL by type counts clients only.
    (("CLIENT", "KILL", "TYPE", "master"), "exact"),
    (("CLIENT", "KILL", "TYPE", "slave"), "exact"),
    (("CLIENT", "KILL", "TYPE", "pubsub"), "exact"),
    (("CLIENT", "KILL", "ID", "999999"), "exact"),
    (("CLIENT", "KILL", "127.0.0.1:1"), "exact"),
    (("AUTH", "secret"), "exact"),
]


# Where Redis 7.2 (Rill's reference) answers differently from the 7.0 oracle: what 7.2 says.
SEVEN_TWO: list[tuple[tuple[str, ...], R]] = [
    # 7.2's command table gives SENTINEL CONFIG an arity of -4 (7.0: -3, then its own error).
    (("SENTINEL", "CONFIG", "GET"), R("-", b"ERR wrong number of arguments for 'sentinel|config' command")),
    (("SENTINEL", "CONFIG", "SET", "announce-port"), R("-", (
        b"ERR Only SENTINEL CONFIG GET <param> [<param> <param> ...]/ SET <param> <value> [<param> <value> ...] "
        b"are supported."))),
    # Several options at once (7.0 takes one): all are checked before any is applied.
    (("SENTINEL", "CONFIG", "SET", "announce-port", "0", "announce-ip"), R("-", b"ERR Missing argument 'announce-ip' value")),
    (("SENTINEL", "CONFIG", "GET", "loglevel"), R("*", (R("$", b"loglevel"), R("$", b"notice")))),
]


def _call(conn: RawConnection, args: tuple[str, ...], c: Cluster) -> R:
    return parse(conn.call(*(a.format(m=c.ports["m"]) for a in args)))


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_and_errors_match_redis_sentinel(trio: Cluster, proto: int) -> None:
    redis_conn, rill_conn = RawConnection(trio.ports["s0"]), RawConnection(trio.ports["x0"])
    try:
        if proto == 3:
            redis_conn.call("HELLO", "3")
            rill_conn.call("HELLO", "3")
        for args, how in COMPARED:
            theirs, mine = _call(redis_conn, args, trio), _call(rill_conn, args, trio)
            if how == "shape":
                theirs, mine = _shape(theirs), _shape(mine)
            else:
                theirs, mine = _normalise(theirs), _normalise(mine)
            assert mine == theirs, f"{' '.join(args)} [RESP{proto}]\n redis: {theirs}\n rill:  {mine}"
        for args, expected in SEVEN_TWO:
            mine = _call(rill_conn, args, trio)
            if proto == 3 and expected.kind == "*":
                expected = R("%", ((expected.value[0], expected.value[1]),))
            assert mine == expected, f"{' '.join(args)} [RESP{proto}]: {mine}"
    finally:
        redis_conn.close()
        rill_conn.close()


def test_hello_names_the_sentinel_mode(trio: Cluster) -> None:
    for name in ("s0", "x0"):
        conn = RawConnection(trio.ports[name])
        try:
            reply = _fields(parse(conn.call("HELLO", "3")))
        finally:
            conn.close()
        # A sentinel's HELLO has no `role` field (helloCommand leaves it out in sentinel mode).
        assert reply[b"mode"] == b"sentinel" and b"role" not in reply and reply[b"proto"] == 3, name


def test_help_is_7_2_s(trio: Cluster) -> None:
    """7.0 and 7.2 word two lines of SENTINEL HELP differently; everything else is the same."""
    replies = {}
    for name in ("s0", "x0"):
        conn = RawConnection(trio.ports[name])
        try:
            replies[name] = [x.value for x in parse(conn.call("SENTINEL", "HELP")).value]
        finally:
            conn.close()
    seven_two = {
        b"CONFIG SET <param> <value>": b"CONFIG SET param value [param value ...]",
        b"CONFIG GET <param>": b"CONFIG GET <param> [param param param ...]",
        b"    Prints this help.": b"    Print this help.",
    }
    assert replies["x0"] == [seven_two.get(line, line) for line in replies["s0"]]


class Subscriber:
    """PSUBSCRIBE * on a sentinel; collects (channel, payload) as they come."""

    def __init__(self, port: int) -> None:
        self.conn = RawConnection(port)
        self.conn.call("PSUBSCRIBE", "*")
        self.conn.sock.settimeout(0.2)

    def messages(self, seconds: float) -> list[tuple[bytes, bytes]]:
        out: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                msg = parse(self.conn.read_reply())
            except TimeoutError:
                continue
            _, _, channel, payload = (x.value for x in msg.value)
            out.append((channel, payload))
        return out

    def close(self) -> None:
        self.conn.close()


def _one(trio: Cluster, name: str, *args: str) -> bytes:
    conn = RawConnection(trio.ports[name])
    try:
        return conn.call(*args)
    finally:
        conn.close()


def _same_on_both(trio: Cluster, *args: str) -> tuple[R, R]:
    return _normalise(parse(_one(trio, "s0", *args))), _normalise(parse(_one(trio, "x0", *args)))


def test_set_monitor_and_remove_change_the_same_things_and_publish_the_same_events(trio: Cluster) -> None:
    dead = free_port()
    subs = {name: Subscriber(trio.ports[name]) for name in ("s0", "x0")}
    try:
        for args in (
            ("SENTINEL", "SET", MASTER, "quorum", "2", "parallel-syncs", "2", "auth-pass", "secret"),
            ("SENTINEL", "SET", MASTER, "failover-timeout", "7000", "bogus", "1"),
            ("SENTINEL", "SET", MASTER, "auth-pass", "", "parallel-syncs", "1", "failover-timeout", "30000"),
            ("SENTINEL", "SET", MASTER, "rename-command", "config", "config"),
            ("SENTINEL", "SET", MASTER, "master-reboot-down-after-period", "0"),
            # (auth-pass changes drop the links to the master; they come back at the next
            # ping period: SENTINEL MASTER is compared once they did, below)
            ("SENTINEL", "MONITOR", "other", "127.0.0.1", str(dead), "1"),
            ("SENTINEL", "MONITOR", "other", "127.0.0.1", str(dead), "1"),
            ("SENTINEL", "MASTER", "other"),
            ("SENTINEL", "SET", "other", "down-after-milliseconds", "5000"),
            ("SENTINEL", "FAILOVER", "other"),
            ("SENTINEL", "RESET", "oth*"),
            ("SENTINEL", "REMOVE", "other"),
            ("SENTINEL", "MASTER", "other"),
            ("SENTINEL", "CONFIG", "SET", "announce-port", "0"),
            ("SENTINEL", "FLUSHCONFIG"),
        ):
            theirs, mine = _same_on_both(trio, *args)
            assert mine == theirs, f"{' '.join(args)}\n redis: {theirs}\n rill:  {mine}"
        for name in ("s0", "x0"):
            wait_until(lambda n=name: _fields(parse(_one(trio, n, "SENTINEL", "MASTER", MASTER)))[b"flags"] == b"master",
                       10, f"{name} to reconnect to the master")
        theirs, mine = _same_on_both(trio, "SENTINEL", "MASTER", MASTER)
        assert mine == theirs, f"SENTINEL MASTER\n redis: {theirs}\n rill:  {mine}"
        events = {name: [m for m in sub.messages(1.0) if m[0] != b"__sentinel__:hello"] for name, sub in subs.items()}
        wanted = {b"+set", b"+monitor", b"-monitor", b"+reset-master"}
        assert [m for m in events["x0"] if m[0] in wanted] == [m for m in events["s0"] if m[0] in wanted]
        assert any(m[0] == b"+set" for m in events["x0"])
    finally:
        for sub in subs.values():
            sub.close()


_IP = re.compile(rb"^\d+\.\d+\.\d+\.\d+$")
_ADDR = re.compile(rb"^\d+\.\d+\.\d+\.\d+:\d+$")
_ID = re.compile(rb"^[0-9a-f]{40}$")


def _payload_shape(payload: bytes) -> list[bytes]:
    out = []
    for token in payload.split():
        if _ADDR.match(token):
            out.append(b"<addr>")
        elif _IP.match(token):
            out.append(b"<ip>")
        elif token.isdigit():
            out.append(b"<n>")
        elif _ID.match(token):
            out.append(b"<id>")
        else:
            out.append(token)
    return out


def _leader_events(trio: Cluster, leader: str) -> list[tuple[bytes, list[bytes]]]:
    """The events `leader` publishes while it runs a SENTINEL FAILOVER, up to +switch-master."""
    sub = Subscriber(trio.ports[leader])
    conn = RawConnection(trio.ports[leader])
    try:
        assert parse(conn.call("SENTINEL", "FAILOVER", MASTER)) == R("+", b"OK")
        events: list[tuple[bytes, list[bytes]]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(e[0] == b"+switch-master" for e in events):
            for channel, payload in sub.messages(0.5):
                if channel != b"__sentinel__:hello":
                    events.append((channel, _payload_shape(payload)))
        assert any(e[0] == b"+switch-master" for e in events), events
        return events[: [e[0] for e in events].index(b"+switch-master") + 1]
    finally:
        conn.close()
        sub.close()


def _settle_after_failover(trio: Cluster) -> None:
    """Until all three sentinels name the same master, see both its replicas as replicas
    with their links up, and the nodes agree (the old master converted, both replicas
    synced): a failover started then runs the same way whoever leads it."""

    def agreed() -> bool:
        views, replicas = [], []
        for name in ("s0", "s1", "x0"):
            conn = RawConnection(trio.ports[name])
            try:
                views.append(_fields(parse(conn.call("SENTINEL", "MASTER", MASTER))))
                replicas += [_fields(r) for r in parse(conn.call("SENTINEL", "REPLICAS", MASTER)).value]
            finally:
                conn.close()
        if len({(v[b"port"], v[b"config-epoch"]) for v in views}) != 1:
            return False
        if not all(v[b"num-slaves"] == b"2" and v[b"flags"] == b"master" for v in views):
            return False
        master = int(views[0][b"port"])
        if not all(r[b"flags"] == b"slave" and r[b"role-reported"] == b"slave" and r[b"master-link-status"] == b"ok"
                   and r[b"master-port"] == str(master).encode() for r in replicas):
            return False
        for node in ("m", "r1", "r2"):
            conn = RawConnection(trio.ports[node])
            try:
                info = parse(conn.call("INFO", "replication")).value
            finally:
                conn.close()
            if trio.ports[node] != master and b"master_link_status:up" not in info:
                return False
        return True

    wait_until(agreed, 90, "the sentinels and nodes to settle on the new master")


def test_a_forced_failover_publishes_redis_s_events_in_redis_s_order(trio: Cluster) -> None:
    """The same forced failover run by the Rill sentinel, then by a Redis one (each the
    leader of its own, in the same cluster): the events each leader publishes, in order, with
    their payloads' shapes."""
    _settle_after_failover(trio)
    rill = _leader_events(trio, "x0")
    _settle_after_failover(trio)
    redis_ = _leader_events(trio, "s0")
    _settle_after_failover(trio)
    assert [e[0] for e in rill] == [e[0] for e in redis_], "\n".join(map(str, [[e[0] for e in rill], [e[0] for e in redis_]]))
    assert rill == redis_
