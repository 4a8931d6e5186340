"""Property test: random histories of the Redis 8 stream writes and Rill's dead letters, run
in-process through the real command layer, replay to the same state.

The commands: XDELEX and XACKDEL with every policy, XADD/XTRIM trims with KEEPREF, DELREF or
ACKED (`=` and `~`), XREADGROUP with CLAIM (COUNT, NOACK), XNACK (every mode, RETRYCOUNT,
FORCE, repeated IDs), XCLAIM, XAUTOCLAIM, XACK, RILL.XDEADLETTER SET/UNSET, plus plain
XADD/XREADGROUP/XDEL/XGROUP SETID and clock ticks. Replies are not modelled here (the Redis
8.2.3 differential suite and the command tests pin them); what is checked is the state:

1. after every step every stream passes `_check()` (entries, every group's PEL, consumers,
   NACK zone and time index agree);
2. after every step a replica that applied, flagged as a log replay, every effect so far
   has the same DEBUG DIGEST (which covers PELs, NACK-zone order and dead-letter policies)
   and the same group state, NACK-zone order included;
3. after every step a snapshot of the node, loaded into a fresh keyspace, has the same
   digest and group state (snapshots are also the AOF rewrite's base);
4. at the end all effects replayed at once on a fresh node give the same digest.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from node.engine.digest import digest_keyspace
from node.engine.keyspace import Keyspace
from node.engine.stream_value import StreamValue
from node.persistence.snapshot import SnapshotMeta, load_snapshot, write_snapshot
from tests.model.test_stream_history import Node, fmt, mk

KEYS = [b"s1", b"s2"]
DEAD = b"dead"
GROUPS = [b"g1", b"g2"]
CONSUMERS = [b"alice", b"bob"]
REPLICA_LAG_MS = 3000
POLICIES = [[], [b"KEEPREF"], [b"DELREF"], [b"ACKED"]]


def group_state(keyspace: Keyspace) -> dict[bytes, Any]:
    """Everything about groups a replica or a snapshot must reproduce, NACK order included."""
    out: dict[bytes, Any] = {}
    for key, value in keyspace.dbs[0].items():
        if type(value) is not StreamValue:
            continue
        out[key] = (
            value.last_id, value.entries_added, value.max_deleted_id, value.length,
            {
                name: (g.last_id, g.entries_read, dict(g.pel), sorted(g.consumers), list(g.nacked), g.dead_letter)
                for name, g in (value.groups or {}).items()
            },
        )  # fmt: skip
    return out


class Redis8History(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.clock = [1_700_000_000_000]
        self.node = Node(self.clock)
        self.replica = Node(self.clock, lag=REPLICA_LAG_MS, replay=True)
        self.applied = 0
        self.next_ms = 1
        for key in KEYS:
            for _ in range(4):
                self.add(key)
            self.run(b"XGROUP", b"CREATE", key, b"g1", b"0")
            self.run(b"XGROUP", b"CREATE", key, b"g2", b"0")

    def run(self, *argv: bytes) -> Any:
        return self.node.run(*argv)

    def add(self, key: bytes, *options: bytes) -> Any:
        self.next_ms += 1
        return self.run(b"XADD", key, *options, fmt(mk(self.next_ms, 0)), b"f", b"v%d" % self.next_ms)

    def some_ids(self, data: st.DataObject) -> list[bytes]:
        n = data.draw(st.integers(1, 4), label="n_ids")
        return [fmt(mk(data.draw(st.integers(1, self.next_ms + 1), label="ms"), 0)) for _ in range(n)]

    # -- writes ----------------------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS))
    def xadd(self, key: bytes) -> None:
        self.add(key)

    @rule(key=st.sampled_from(KEYS), data=st.data(), policy=st.sampled_from(POLICIES),
          kind=st.sampled_from([b"MAXLEN", b"MINID"]), approx=st.booleans())
    def xadd_or_xtrim_with_policy(self, key: bytes, data: st.DataObject, policy: list[bytes], kind: bytes,
                                  approx: bool) -> None:
        if kind == b"MAXLEN":
            threshold = b"%d" % data.draw(st.integers(0, 8), label="maxlen")
        else:
            threshold = fmt(mk(data.draw(st.integers(1, self.next_ms + 1), label="minid"), 0))
        trim = [kind, b"~" if approx else b"=", threshold]
        if approx and data.draw(st.booleans(), label="limit"):
            trim += [b"LIMIT", b"%d" % data.draw(st.integers(0, 6), label="n")]
        if data.draw(st.booleans(), label="xadd"):
            self.add(key, *policy, *trim)
        else:
            self.run(b"XTRIM", key, *trim, *policy)

    @rule(key=st.sampled_from(KEYS), data=st.data(), policy=st.sampled_from(POLICIES))
    def xdelex(self, key: bytes, data: st.DataObject, policy: list[bytes]) -> None:
        ids = self.some_ids(data)
        self.run(b"XDELEX", key, *policy, b"IDS", b"%d" % len(ids), *ids)

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), data=st.data(),
          policy=st.sampled_from(POLICIES))
    def xackdel(self, key: bytes, group: bytes, data: st.DataObject, policy: list[bytes]) -> None:
        ids = self.some_ids(data)
        self.run(b"XACKDEL", key, group, *policy, b"IDS", b"%d" % len(ids), *ids)

    @rule(key=st.sampled_from(KEYS), data=st.data())
    def xdel(self, key: bytes, data: st.DataObject) -> None:
        self.run(b"XDEL", key, *self.some_ids(data))

    # -- groups ----------------------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS),
          count=st.sampled_from([None, 1, 2, 5]), noack=st.booleans(),
          claim=st.sampled_from([None, None, 0, 500, 2000]))
    def xreadgroup(self, key: bytes, group: bytes, consumer: bytes, count: int | None, noack: bool,
                   claim: int | None) -> None:
        argv = [b"XREADGROUP", b"GROUP", group, consumer]
        if count is not None:
            argv += [b"COUNT", b"%d" % count]
        if claim is not None:
            argv += [b"CLAIM", b"%d" % claim]
        if noack:
            argv.append(b"NOACK")
        self.run(*argv, b"STREAMS", key, b">")

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), data=st.data(),
          mode=st.sampled_from([b"SILENT", b"FAIL", b"FATAL"]), force=st.booleans(),
          retry=st.sampled_from([None, None, 0, 3]))
    def xnack(self, key: bytes, group: bytes, data: st.DataObject, mode: bytes, force: bool,
              retry: int | None) -> None:
        ids = self.some_ids(data)
        argv = [b"XNACK", key, group, mode, b"IDS", b"%d" % len(ids), *ids]
        if retry is not None:
            argv += [b"RETRYCOUNT", b"%d" % retry]
        if force:
            argv.append(b"FORCE")
        self.run(*argv)

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), data=st.data())
    def xack(self, key: bytes, group: bytes, data: st.DataObject) -> None:
        self.run(b"XACK", key, group, *self.some_ids(data))

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS),
          data=st.data(), min_idle=st.sampled_from([0, 1000]), force=st.booleans())
    def xclaim(self, key: bytes, group: bytes, consumer: bytes, data: st.DataObject, min_idle: int,
               force: bool) -> None:
        self.run(b"XCLAIM", key, group, consumer, b"%d" % min_idle, *self.some_ids(data),
                 *([b"FORCE"] if force else []))  # fmt: skip

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS),
          min_idle=st.sampled_from([0, 1000]))
    def xautoclaim(self, key: bytes, group: bytes, consumer: bytes, min_idle: int) -> None:
        self.run(b"XAUTOCLAIM", key, group, consumer, b"%d" % min_idle, b"0", b"COUNT", b"3")

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), data=st.data())
    def xgroup_setid(self, key: bytes, group: bytes, data: st.DataObject) -> None:
        self.run(b"XGROUP", b"SETID", key, group, fmt(mk(data.draw(st.integers(0, self.next_ms), label="ms"), 0)))

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), limit=st.sampled_from([None, 1, 2, 3]))
    def dead_letter_policy(self, key: bytes, group: bytes, limit: int | None) -> None:
        if limit is None:
            self.run(b"RILL.XDEADLETTER", b"UNSET", key, group)
        else:
            self.run(b"RILL.XDEADLETTER", b"SET", key, group, b"MAXDELIVERIES", b"%d" % limit, b"TO", DEAD)

    @rule(ms=st.sampled_from([0, 1, 700, 1500, 6000]))
    def tick(self, ms: int) -> None:
        self.clock[0] += ms

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def structures_are_consistent(self) -> None:
        for value in self.node.server.keyspace.dbs[0].values():
            if type(value) is StreamValue:
                value._check()

    @invariant()
    def replica_replaying_the_effects_matches(self) -> None:
        new = self.node.effects[self.applied :]
        self.applied = len(self.node.effects)
        self.replica.apply_effects(new)
        assert self.replica.digest() == self.node.digest()
        assert group_state(self.replica.server.keyspace) == group_state(self.node.server.keyspace)

    @invariant()
    def a_snapshot_carries_the_state(self) -> None:
        fd, path = tempfile.mkstemp(prefix="rill-model-", suffix=".rill")
        os.close(fd)
        try:
            write_snapshot(path, self.node.server.keyspace, SnapshotMeta(replid="0" * 40))
            loaded = Keyspace()
            load_snapshot(path, loaded)
        finally:
            os.unlink(path)
        for value in loaded.dbs[0].values():
            if type(value) is StreamValue:
                value._check()
        assert digest_keyspace(loaded) == self.node.digest()
        assert group_state(loaded) == group_state(self.node.server.keyspace)

    def teardown(self) -> None:
        if not hasattr(self, "node"):
            return
        fresh = Node(self.clock, lag=2 * REPLICA_LAG_MS, replay=True)
        fresh.apply_effects(self.node.effects)
        assert fresh.digest() == self.node.digest()
        assert group_state(fresh.server.keyspace) == group_state(self.node.server.keyspace)


Redis8History.TestCase.settings = settings(
    max_examples=120,
    stateful_step_count=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestRedis8History = Redis8History.TestCase
