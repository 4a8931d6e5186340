"""Sentinel's replies compared with Debian's redis-sentinel, RESP2 and RESP3.

Three redis-sentinels watch a redis-server master with two replicas. Beside them, the policy
(node.sentinel.policy) takes the place of the first one — its id, its port, the same master,
the same two peer sentinels — and watches the same nodes: its PING and INFO go to the real
nodes (its hellos do not, so the real sentinels never learn about it). Then each reply of the
real sentinel is compared with node.sentinel.replies applied to the policy's state, encoded
by the node's RESP encoder: same types (map or flat array, bulk or status, integer, null),
same field names in the same order, same values — except the ones that measure time or the
replication offset, which must only be integers.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from node.sentinel import replies
from node.sentinel.messages import Closed, Connect, Connected, Reply, RespError, Send, Tick, Value
from node.sentinel.policy import Sentinel, SentinelError
from node.server.resp import encode_one
from tests.conformance.harness import RawConnection
from tests.conformance.sentinel.procs import Cluster, cluster, wait_until, watched_master
from tests.conformance.stream_support import R, parse

VOLATILE = {
    b"last-ping-sent", b"last-ok-ping-reply", b"last-ping-reply", b"info-refresh", b"role-reported-time",
    b"last-hello-message", b"slave-repl-offset", b"link-pending-commands", b"s-down-time", b"o-down-time",
}


def now_ms() -> int:
    return int(time.time() * 1000)


def _value(raw: bytes) -> Value:
    """A raw reply as the policy's reply values."""
    def convert(r: R) -> Any:
        if r.value is None:
            return None
        if r.kind == "+":
            return r.value.decode()
        if r.kind == "-":
            return RespError(r.value.decode())
        if r.kind == "*":
            return [convert(x) for x in r.value]
        return r.value
    return convert(parse(raw))


class Mirror:
    """The policy watching the real nodes as the real sentinel `s0` does."""

    def __init__(self, c: Cluster, myid: str, peers: list[tuple[str, int, str]]) -> None:
        self.c = c
        self.nodes = {c.ports[n] for n in ("m", "r1", "r2")}
        self.policy = Sentinel(myid, now=now_ms(), rng=random.Random(1), port=c.ports["s0"])
        master = self.policy.monitor("mymaster", "127.0.0.1", c.ports["m"], 2, now=now_ms(), announce=False)
        master.down_after_period = 2000
        for ip, port, runid in peers:
            self.policy.add_known_sentinel(master, ip, port, runid)
        self.conns: dict[int, Connect] = {}
        self.raw: dict[int, RawConnection] = {}

    def run(self, seconds: float, until: Callable[[], bool] = lambda: True, timeout: float = 30.0) -> None:
        """Steps the policy for at least `seconds`, and on until `until()` holds."""
        start = time.monotonic()
        while time.monotonic() < start + seconds or not until():
            assert time.monotonic() < start + timeout, "the mirrored sentinel never got there"
            self.apply(self.policy.step(Tick(now_ms())))
            time.sleep(0.1)

    def apply(self, actions: list[Any]) -> None:
        for action in actions:
            if isinstance(action, Connect):
                self.conns[action.conn] = action
                if action.port in self.nodes and not action.pubsub:
                    self.raw[action.conn] = RawConnection(action.port)
                self.apply(self.policy.step(Connected(now_ms(), action.conn, "127.0.0.1")))
            elif isinstance(action, Send):
                self.apply(self.policy.step(Reply(now_ms(), action.conn, action.request, self.answer(action))))

    def answer(self, send: Send) -> Value:
        name = send.argv[0].upper()
        if name == "SUBSCRIBE":
            return [b"subscribe", send.argv[1].encode(), 1]
        if name == "PUBLISH":
            return 0  # our hellos stay with us
        if send.conn in self.raw and name in ("PING", "INFO"):
            return _value(self.raw[send.conn].call(*send.argv))
        if name == "PING":
            return "PONG"
        if name == "SENTINEL":
            return [0, b"*", 0]
        return "OK"

    def close(self) -> None:
        for conn, raw in self.raw.items():
            raw.close()
            self.policy.step(Closed(now_ms(), conn))


NAME = R("$", b"name")
AN_INTEGER = R("$", "<integer>")


def _masked(value: R) -> R:
    assert value.kind == "$" and value.value.lstrip(b"-").isdigit(), value
    return AN_INTEGER


def _normalise(r: R) -> R:
    """Lists of instances sorted by name; volatile numbers reduced to their type."""
    if r.kind == "%":
        return R("%", tuple((k, _masked(v) if k.value in VOLATILE else _normalise(v)) for k, v in r.value))
    if r.kind == "*" and r.value is not None:
        items = [_normalise(x) for x in r.value]
        if items and items[0] == NAME:  # a RESP2 instance: field, value, … from "name"
            for i in range(0, len(items) - 1, 2):
                if items[i].value in VOLATILE:
                    items[i + 1] = _masked(r.value[i + 1])
            return R("*", tuple(items))
        if items and all(_instance_name(x) is not None for x in items):
            items.sort(key=lambda x: _instance_name(x) or b"")
        return R("*", tuple(items))
    return r


def _instance_name(r: R) -> bytes | None:
    if r.kind == "%" and r.value and r.value[0][0] == NAME:
        return bytes(r.value[0][1].value)
    if r.kind == "*" and r.value and len(r.value) > 1 and r.value[0] == NAME:
        return bytes(r.value[1].value)
    return None


@pytest.fixture(scope="module")
def watched() -> Iterator[tuple[Cluster, Mirror]]:
    with cluster() as c:
        watched_master(c, down_after=2000)
        client = redis.Redis(port=c.ports["s0"], decode_responses=True)
        try:
            def ready() -> bool:
                info = client.execute_command("SENTINEL", "MASTER", "mymaster")
                fields = dict(zip(info[::2], info[1::2])) if isinstance(info, list) else info
                return fields["num-slaves"] == "2" and fields["num-other-sentinels"] == "2"
            wait_until(ready, 30, "the sentinel to see two replicas and two sentinels")
            myid = client.execute_command("SENTINEL", "MYID")
            peers = client.execute_command("SENTINEL", "SENTINELS", "mymaster")
        finally:
            client.close()
        peer_list = []
        for p in peers:
            fields = dict(zip(p[::2], p[1::2])) if isinstance(p, list) else p
            peer_list.append((fields["ip"], int(fields["port"]), fields["runid"]))
        mirror = Mirror(c, myid, peer_list)

        def discovered() -> bool:  # what the real sentinel was waited for above
            master = mirror.policy.get_master("mymaster")
            return len(master.slaves) == 2 and len(master.sentinels) == 2

        mirror.run(2.5, until=discovered)
        yield c, mirror
        mirror.close()


def ours(mirror: Mirror, args: tuple[str, ...]) -> Any:
    s = mirror.policy
    now = now_ms()
    cmd = [a.upper() for a in args]
    try:
        if cmd == ["SENTINEL", "MASTERS"]:
            return replies.masters(s, now)
        if cmd[:2] == ["SENTINEL", "MASTER"]:
            return replies.master(s, args[2], now)
        if cmd[:2] in (["SENTINEL", "REPLICAS"], ["SENTINEL", "SLAVES"]):
            return replies.replicas(s, args[2], now)
        if cmd[:2] == ["SENTINEL", "SENTINELS"]:
            return replies.sentinels(s, args[2], now)
        if cmd[:2] == ["SENTINEL", "GET-MASTER-ADDR-BY-NAME"]:
            return replies.get_master_addr_by_name(s, args[2])
        if cmd[:2] == ["SENTINEL", "IS-MASTER-DOWN-BY-ADDR"]:
            return s.is_master_down_by_addr(args[2], int(args[3]), int(args[4]), args[5], now=now)
        if cmd[:2] == ["SENTINEL", "CKQUORUM"]:
            return replies.ckquorum(s, args[2])
        if cmd == ["SENTINEL", "MYID"]:
            return replies.myid(s)
        if cmd == ["SENTINEL", "DEBUG"]:
            return replies.debug(s)
        if cmd[:2] == ["SENTINEL", "INFO-CACHE"]:
            return replies.info_cache(s, list(args[2:]), now)
        if cmd == ["INFO", "SENTINEL"]:
            return replies.info_section(s, now).encode()
        if cmd == ["ROLE"]:
            return replies.role(s)
    except SentinelError as exc:
        from node.commands.reply import ReplyError
        return ReplyError(exc.message)
    raise AssertionError(args)


COMMANDS = [
    ("SENTINEL", "MASTERS"),
    ("SENTINEL", "MASTER", "mymaster"),
    ("SENTINEL", "MASTER", "nope"),
    ("SENTINEL", "REPLICAS", "mymaster"),
    ("SENTINEL", "SLAVES", "mymaster"),
    ("SENTINEL", "SENTINELS", "mymaster"),
    ("SENTINEL", "REPLICAS", "nope"),
    ("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"),
    ("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope"),
    ("SENTINEL", "CKQUORUM", "mymaster"),
    ("SENTINEL", "CKQUORUM", "nope"),
    ("SENTINEL", "MYID"),
    ("SENTINEL", "DEBUG"),
    ("INFO", "sentinel"),
    ("ROLE",),
]


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_match_redis_sentinel(watched: tuple[Cluster, Mirror], proto: int) -> None:
    c, mirror = watched
    conn = RawConnection(c.ports["s0"])
    try:
        if proto == 3:
            conn.call("HELLO", "3")
        commands = COMMANDS + [("SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "127.0.0.1", str(c.ports["m"]), "0", "*")]
        for args in commands:
            theirs = _normalise(parse(conn.call(*args)))
            mine = _normalise(parse(encode_one(ours(mirror, args), proto)))
            assert mine == theirs, f"{' '.join(args)} [RESP{proto}]\n redis: {theirs}\n rill:  {mine}"
    finally:
        conn.close()


@pytest.mark.parametrize("proto", [2, 3])
def test_info_cache_has_redis_s_shape(watched: tuple[Cluster, Mirror], proto: int) -> None:
    c, mirror = watched
    conn = RawConnection(c.ports["s0"])
    try:
        if proto == 3:
            conn.call("HELLO", "3")
        for args in (("SENTINEL", "INFO-CACHE", "mymaster"), ("SENTINEL", "INFO-CACHE", "nope", "mymaster")):
            theirs = parse(conn.call(*args))
            mine = parse(encode_one(ours(mirror, args), proto))

            def shape(r: R) -> list[tuple[str, str]]:
                assert r.kind == "*" and len(r.value) == 2 and r.value[0] == R("$", b"mymaster")
                out = []
                for entry in r.value[1].value:
                    age, info = entry.value
                    assert age.kind == ":" and info.kind == "$" and info.value.startswith(b"# Server")
                    out.append((age.kind, info.kind))
                return out

            assert shape(mine) == shape(theirs)
    finally:
        conn.close()
