"""Property test: random histories of every stream write, run in-process through the real
command layer, against a reference model and against a replay of their own effects.

Each step runs one command on a `Server` (not started: `server.execute` with a `Session`,
time from a fake clock) and checks its reply against a plain model of the streams (entry
dicts, group PELs as dicts). After every step:

1. every stream value passes its `_check()` (entry storage and every group's PEL/consumer
   invariants);
2. XLEN, XRANGE and XPENDING (summary, and every pending entry's owner, idle time and
   delivery count) agree with the model;
3. a replica that has applied, in order and flagged as a log replay, every effect emitted so
   far has the same DEBUG DIGEST and the same consumer-group state (last ID, read counter,
   pending entries with owner, delivery time and count, consumer names). The replica's clock
   runs a few seconds behind, as a real replica's would.

At the end of each history all effects are also replayed at once on a fresh server and
compared the same way. The histories are seeded (derandomized) and bounded so the whole
test stays well under a minute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import hiredis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.config import Config
from node.engine.digest import digest_keyspace
from node.engine.ids import format_id
from node.engine.stream import Stream
from node.server.resp import encode_one

KEYS = [b"s1", b"s2"]
GROUPS = [b"g1", b"g2"]
CONSUMERS = [b"alice", b"bob", b"carol"]
NODE_MAX_ENTRIES = 4  # small nodes so `~` trims really remove whole nodes
REPLICA_LAG_MS = 3000

ReplyValue = Any


def fmt(i: int) -> bytes:
    return format_id(i)


def mk(ms: int, seq: int) -> int:
    return (ms << 64) | seq


def to_id(arg: bytes) -> int:
    ms, _, seq = arg.partition(b"-")
    return mk(int(ms), int(seq or b"0"))


# ---------------------------------------------------------------------------------------
# The reference model
# ---------------------------------------------------------------------------------------


@dataclass
class MNack:
    owner: bytes
    time: int
    count: int


@dataclass
class MGroup:
    last_id: int
    pel: dict[int, MNack] = field(default_factory=dict)
    consumers: set[bytes] = field(default_factory=set)

    def pending_of(self, consumer: bytes) -> list[int]:
        return sorted(i for i, n in self.pel.items() if n.owner == consumer)


@dataclass
class MStream:
    entries: dict[int, list[bytes]] = field(default_factory=dict)
    last_id: int = 0
    groups: dict[bytes, MGroup] = field(default_factory=dict)

    def ids(self) -> list[int]:
        return sorted(self.entries)

    def last_live(self) -> int:
        return max(self.entries) if self.entries else 0


# ---------------------------------------------------------------------------------------
# Running commands in-process
# ---------------------------------------------------------------------------------------


class Node:
    """A Server driven in-process with a fake clock; collects its effects as RESP bytes."""

    def __init__(self, clock: list[int], lag: int = 0, replay: bool = False) -> None:
        node = RillNode(Config(), clock=lambda: clock[0] - lag)
        self.server = node.server
        self.session = Session(node, 1)
        if replay:
            self.session.flags.add("replay")
        self.effects: list[bytes] = []
        self.server.effects.add_listener(lambda data, offset: self.effects.append(data))
        self.run(b"CONFIG", b"SET", b"stream-node-max-entries", str(NODE_MAX_ENTRIES).encode())

    def run(self, *argv: bytes) -> ReplyValue:
        """Execute and return the reply decoded from its RESP2 bytes (errors as
        hiredis.ReplyError)."""
        reply = self.server.execute(self.session, list(argv))
        self.server.after_batch()
        reader = hiredis.Reader()
        reader.feed(encode_one(reply, 2))
        return reader.gets()

    def apply_effects(self, chunks: list[bytes]) -> None:
        reader = hiredis.Reader()
        for chunk in chunks:
            reader.feed(chunk)
        while True:
            argv = reader.gets()
            if argv is False:
                break
            reply = self.run(*argv)
            assert not _has_error(reply), f"replaying {argv!r} failed: {reply!r}"

    def group_state(self) -> dict[tuple[int, bytes], Any]:
        """Everything about consumer groups that replication must reproduce."""
        out: dict[tuple[int, bytes], Any] = {}
        for index, db in enumerate(self.server.keyspace.dbs):
            for key, value in db.items():
                if not isinstance(value, Stream):
                    continue
                groups = getattr(value, "groups", None) or {}
                out[(index, key)] = (
                    value.last_id,
                    value.entries_added,
                    value.max_deleted_id,
                    {
                        name: (g.last_id, g.entries_read, dict(g.pel), sorted(g.consumers))
                        for name, g in groups.items()
                    },
                )
        return out

    def digest(self) -> bytes:
        return digest_keyspace(self.server.keyspace)


def _has_error(reply: ReplyValue) -> bool:
    """An error, or an EXEC reply with an error inside."""
    if isinstance(reply, hiredis.ReplyError):
        return True
    if isinstance(reply, list) and reply and isinstance(reply[0], (list, hiredis.ReplyError)):
        return any(isinstance(r, hiredis.ReplyError) for r in reply)
    return False


def is_error(reply: ReplyValue, prefix: str = "") -> bool:
    return isinstance(reply, hiredis.ReplyError) and str(reply).startswith(prefix)


# ---------------------------------------------------------------------------------------
# The state machine
# ---------------------------------------------------------------------------------------


idle_ms = st.sampled_from([0, 0, 1, 500, 2000, 10_000])
counts = st.sampled_from([None, 1, 2, 3, 10])


class StreamHistory(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.clock = [1_700_000_000_000]
        self.node = Node(self.clock)
        self.replica = Node(self.clock, lag=REPLICA_LAG_MS, replay=True)
        self.applied = 0
        # key -> MStream, or b"string" for a key holding a string.
        self.model: dict[bytes, MStream | bytes] = {}
        for key in KEYS:
            self.revive_key(key)

    def revive_key(self, key: bytes) -> None:
        """Make `key` a fresh stream with three entries and groups g1 (at 0) and g2 (at $)."""
        self.run(b"DEL", key)
        self.model.pop(key, None)
        s = self.model[key] = MStream()
        for n in (1, 2, 3):
            entry_id = mk(n, 0)
            assert self.run(b"XADD", key, fmt(entry_id), b"f", b"%d" % n) == fmt(entry_id)
            s.entries[entry_id] = [b"f", b"%d" % n]
            s.last_id = entry_id
        assert self.run(b"XGROUP", b"CREATE", key, b"g1", b"0") == b"OK"
        assert self.run(b"XGROUP", b"CREATE", key, b"g2", b"$") == b"OK"
        s.groups = {b"g1": MGroup(0), b"g2": MGroup(s.last_id)}

    # -- helpers ---------------------------------------------------------------------------

    def now(self) -> int:
        return self.clock[0]

    def run(self, *argv: bytes) -> ReplyValue:
        return self.node.run(*argv)

    def stream(self, key: bytes) -> MStream | None:
        v = self.model.get(key)
        return v if isinstance(v, MStream) else None

    def expect_wrongtype(self, key: bytes, reply: ReplyValue) -> bool:
        """True (after checking the reply) when `key` holds a string."""
        if self.model.get(key) == b"string":
            assert is_error(reply, "WRONGTYPE"), reply
            return True
        return False

    def pick_ids(self, key: bytes, data: st.DataObject, label: str) -> list[int]:
        """IDs to name in a command: some existing, some pending, some made up."""
        s = self.stream(key)
        pool: set[int] = set()
        if s is not None:
            pool.update(s.entries)
            for g in s.groups.values():
                pool.update(g.pel)
            pool.add(s.last_id + 1)
        pool.add(mk(1, 0))
        chosen = data.draw(st.lists(st.sampled_from(sorted(pool)), min_size=1, max_size=4), label=label)
        return chosen

    # -- entries ---------------------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS), data=st.data(),
          nfields=st.integers(1, 3),
          trim=st.sampled_from(["none", "none", "maxlen=", "maxlen~", "minid=", "minid~"]),
          nomkstream=st.booleans(), star_seq=st.booleans())
    def xadd(self, key: bytes, data: st.DataObject, nfields: int, trim: str, nomkstream: bool,
             star_seq: bool) -> None:
        s = self.stream(key)
        last = s.last_id if s is not None else 0
        bump_ms = data.draw(st.sampled_from([0, 1, 1, 2, 7]), label="bump_ms")
        if bump_ms == 0 and (last & ((1 << 64) - 1)) == (1 << 64) - 1:
            bump_ms = 1
        ms = (last >> 64) + bump_ms
        if bump_ms == 0:
            new_id = last + 1
        else:
            new_id = mk(ms, data.draw(st.integers(0, 2), label="seq"))
        if new_id == 0:
            new_id = mk(0, 1)
        id_arg = b"%d-*" % (new_id >> 64) if star_seq else fmt(new_id)
        if star_seq:
            # `ms-*`: seq 0 in a new millisecond (0-1 for ms 0), else last seq + 1.
            new_id = last + 1 if (new_id >> 64) == (last >> 64) else mk(new_id >> 64, 0)
            if new_id == 0:
                new_id = mk(0, 1)
        fields: list[bytes] = []
        for i in range(nfields):
            fields += [b"f%d" % data.draw(st.integers(0, 2), label="field"), b"v%d" % i]
        argv = [b"XADD", key]
        if nomkstream:
            argv.append(b"NOMKSTREAM")
        threshold = b""
        limit = 0
        if trim != "none":
            kind, approx = trim[:-1], trim[-1] == "~"
            if kind == "maxlen":
                threshold = b"%d" % data.draw(st.integers(0, 8), label="maxlen")
            else:
                ids = (s.ids() if s else []) + [new_id]
                threshold = fmt(data.draw(st.sampled_from(ids), label="minid"))
            argv += [kind.upper().encode(), b"~" if approx else b"=", threshold]
            if approx and data.draw(st.booleans(), label="use_limit"):
                limit = data.draw(st.integers(0, 6), label="limit")
                argv += [b"LIMIT", b"%d" % limit]
        argv += [id_arg, *fields]
        reply = self.run(*argv)
        if self.expect_wrongtype(key, reply):
            return
        if s is None and nomkstream:
            assert reply is None
            return
        assert reply == fmt(new_id), (argv, reply)
        if s is None:
            s = self.model[key] = MStream()
        s.entries[new_id] = fields
        s.last_id = new_id
        if trim != "none":
            self.apply_trim(key, s, trim, threshold, limit, removed=None)

    @rule(key=st.sampled_from(KEYS), data=st.data(), nfields=st.integers(1, 2))
    def xadd_plain(self, key: bytes, data: st.DataObject, nfields: int) -> None:
        """XADD without options (a second rule so that entries arrive often)."""
        self.xadd(key=key, data=data, nfields=nfields, trim="none", nomkstream=False, star_seq=False)

    def apply_trim(self, key: bytes, s: MStream, trim: str, threshold: bytes, limit: int,
                   removed: int | None) -> None:
        """Exact trims are modelled; `~` trims are checked (head-only removal, never below the
        threshold, LIMIT respected) and the model follows the server's choice."""
        ids = s.ids()
        kind, approx = trim[:-1], trim[-1] == "~"
        if kind == "maxlen":
            keep_from = max(0, len(ids) - int(threshold))
        else:
            minid = to_id(threshold)
            keep_from = len([i for i in ids if i < minid])
        if not approx:
            for i in ids[:keep_from]:
                del s.entries[i]
            if removed is not None:
                assert removed == keep_from
            return
        length = self.run(b"XLEN", key)
        gone = len(ids) - length
        assert 0 <= gone <= keep_from, f"~ trim removed {gone}, at most {keep_from} allowed"
        if limit:
            assert gone <= limit
        if removed is not None:
            assert removed == gone
        for i in ids[:gone]:
            del s.entries[i]

    @rule(key=st.sampled_from(KEYS), data=st.data())
    def xdel(self, key: bytes, data: st.DataObject) -> None:
        ids = self.pick_ids(key, data, "xdel_ids")
        reply = self.run(b"XDEL", key, *map(fmt, ids))
        if self.expect_wrongtype(key, reply):
            return
        s = self.stream(key)
        deleted = 0
        if s is not None:
            for i in ids:
                if s.entries.pop(i, None) is not None:
                    deleted += 1
        assert reply == deleted

    @rule(key=st.sampled_from(KEYS), data=st.data(),
          trim=st.sampled_from(["maxlen=", "maxlen~", "minid=", "minid~"]))
    def xtrim(self, key: bytes, data: st.DataObject, trim: str) -> None:
        s = self.stream(key)
        kind, approx = trim[:-1], trim[-1] == "~"
        if kind == "maxlen":
            threshold = b"%d" % data.draw(st.integers(0, 8), label="maxlen")
        else:
            ids = (s.ids() if s else []) + [mk(99, 0)]
            threshold = fmt(data.draw(st.sampled_from(ids), label="minid"))
        argv = [b"XTRIM", key, kind.upper().encode(), b"~" if approx else b"=", threshold]
        limit = 0
        if approx and data.draw(st.booleans(), label="use_limit"):
            limit = data.draw(st.integers(0, 6), label="limit")
            argv += [b"LIMIT", b"%d" % limit]
        reply = self.run(*argv)
        if self.expect_wrongtype(key, reply):
            return
        if s is None:
            assert reply == 0
            return
        assert isinstance(reply, int), reply
        self.apply_trim(key, s, trim, threshold, limit, removed=reply)

    @rule(key=st.sampled_from(KEYS), data=st.data())
    def xsetid(self, key: bytes, data: st.DataObject) -> None:
        s = self.stream(key)
        base = s.last_id if s else 0
        new_last = base + data.draw(st.sampled_from([0, 1, 1 << 64]), label="advance")
        argv = [b"XSETID", key, fmt(new_last)]
        if data.draw(st.booleans(), label="entriesadded"):
            argv += [b"ENTRIESADDED", b"%d" % (1000 + data.draw(st.integers(0, 5), label="ea"))]
        if data.draw(st.booleans(), label="maxdeleted") and new_last:
            argv += [b"MAXDELETEDID", fmt(new_last)]
        reply = self.run(*argv)
        if self.expect_wrongtype(key, reply):
            return
        if s is None:
            assert is_error(reply, "ERR no such key"), reply
            return
        assert reply == b"OK", (argv, reply)
        s.last_id = new_last

    # -- groups and consumers ------------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), data=st.data(), mkstream=st.booleans())
    def xgroup_create(self, key: bytes, group: bytes, data: st.DataObject, mkstream: bool) -> None:
        s = self.stream(key)
        start = data.draw(st.sampled_from(["$", "0", "mid"]), label="start")
        if start == "mid" and s is not None and s.entries:
            start_id = data.draw(st.sampled_from(s.ids()), label="start_id")
            arg = fmt(start_id)
        elif start == "$":
            start_id, arg = (s.last_id if s else 0), b"$"
        else:
            start_id, arg = 0, b"0"
        argv = [b"XGROUP", b"CREATE", key, group, arg] + ([b"MKSTREAM"] if mkstream else [])
        reply = self.run(*argv)
        if self.expect_wrongtype(key, reply):
            return
        if s is None and not mkstream:
            assert is_error(reply, "ERR The XGROUP subcommand requires the key to exist"), reply
            return
        if s is not None and group in s.groups:
            assert is_error(reply, "BUSYGROUP"), reply
            return
        assert reply == b"OK", reply
        if s is None:
            s = self.model[key] = MStream()
        s.groups[group] = MGroup(start_id)

    def group_or_error(self, key: bytes, group: bytes, reply: ReplyValue) -> MGroup | None:
        """The model group, or None after checking the reply is the right error."""
        if self.expect_wrongtype(key, reply):
            return None
        s = self.stream(key)
        if s is None:
            assert is_error(reply), reply
            return None
        g = s.groups.get(group)
        if g is None:
            assert is_error(reply, "NOGROUP"), reply
        return g

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), data=st.data())
    def xgroup_setid(self, key: bytes, group: bytes, data: st.DataObject) -> None:
        s = self.stream(key)
        choices = [b"$", b"0"] + ([fmt(i) for i in s.ids()] if s else [])
        arg = data.draw(st.sampled_from(choices), label="setid")
        argv = [b"XGROUP", b"SETID", key, group, arg]
        if data.draw(st.booleans(), label="entriesread"):
            argv += [b"ENTRIESREAD", b"%d" % data.draw(st.integers(-1, 5), label="er")]
        reply = self.run(*argv)
        g = self.group_or_error(key, group, reply)
        if g is None:
            return
        assert reply == b"OK", reply
        assert s is not None
        g.last_id = s.last_id if arg == b"$" else to_id(arg)

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS))
    def xgroup_destroy(self, key: bytes, group: bytes) -> None:
        reply = self.run(b"XGROUP", b"DESTROY", key, group)
        if self.expect_wrongtype(key, reply):
            return
        s = self.stream(key)
        if s is None:
            assert is_error(reply), reply
            return
        assert reply == (1 if s.groups.pop(group, None) is not None else 0)

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS))
    def xgroup_createconsumer(self, key: bytes, group: bytes, consumer: bytes) -> None:
        reply = self.run(b"XGROUP", b"CREATECONSUMER", key, group, consumer)
        g = self.group_or_error(key, group, reply)
        if g is None:
            return
        assert reply == (0 if consumer in g.consumers else 1)
        g.consumers.add(consumer)

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS))
    def xgroup_delconsumer(self, key: bytes, group: bytes, consumer: bytes) -> None:
        reply = self.run(b"XGROUP", b"DELCONSUMER", key, group, consumer)
        g = self.group_or_error(key, group, reply)
        if g is None:
            return
        mine = g.pending_of(consumer)
        assert reply == len(mine)
        for i in mine:
            del g.pel[i]
        g.consumers.discard(consumer)

    # -- reading with a group --------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS),
          count=counts, noack=st.booleans())
    def xreadgroup_new(self, key: bytes, group: bytes, consumer: bytes, count: int | None, noack: bool) -> None:
        argv = [b"XREADGROUP", b"GROUP", group, consumer]
        if count is not None:
            argv += [b"COUNT", b"%d" % count]
        if noack:
            argv.append(b"NOACK")
        reply = self.run(*argv, b"STREAMS", key, b">")
        g = self.group_or_error(key, group, reply)
        if g is None:
            return
        s = self.stream(key)
        assert s is not None
        g.consumers.add(consumer)
        new = [i for i in s.ids() if i > g.last_id][: count or None]
        if not new:
            assert reply is None, reply
            return
        assert reply == [[key, [[fmt(i), s.entries[i]] for i in new]]]
        g.last_id = new[-1]
        if not noack:
            for i in new:
                g.pel[i] = MNack(consumer, self.now(), 1)

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS),
          count=counts, data=st.data())
    def xreadgroup_history(self, key: bytes, group: bytes, consumer: bytes, count: int | None,
                           data: st.DataObject) -> None:
        s = self.stream(key)
        g0 = s.groups.get(group) if s else None
        starts = [0] + (g0.pending_of(consumer) if g0 else [])
        after = data.draw(st.sampled_from(starts), label="after")
        argv = [b"XREADGROUP", b"GROUP", group, consumer]
        if count is not None:
            argv += [b"COUNT", b"%d" % count]
        if data.draw(st.booleans(), label="noack"):
            argv.append(b"NOACK")  # ignored when reading history
        reply = self.run(*argv, b"STREAMS", key, fmt(after))
        g = self.group_or_error(key, group, reply)
        if g is None:
            return
        assert s is not None
        g.consumers.add(consumer)
        mine = [i for i in g.pending_of(consumer) if i > after][: count or None]
        expected: list[Any] = []
        for i in mine:
            if i in s.entries:
                expected.append([fmt(i), s.entries[i]])
                nack = g.pel[i]
                nack.time, nack.count = self.now(), nack.count + 1
            else:
                expected.append([fmt(i), None])
        assert reply == [[key, expected]], (reply, expected)

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), data=st.data())
    def xack(self, key: bytes, group: bytes, data: st.DataObject) -> None:
        ids = self.pick_ids(key, data, "xack_ids")
        reply = self.run(b"XACK", key, group, *map(fmt, ids))
        if self.expect_wrongtype(key, reply):
            return
        s = self.stream(key)
        g = s.groups.get(group) if s else None
        acked = 0
        if g is not None:
            for i in ids:
                if g.pel.pop(i, None) is not None:
                    acked += 1
        assert reply == acked

    # -- claiming --------------------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS),
          data=st.data(), min_idle=idle_ms, force=st.booleans(), justid=st.booleans())
    def xclaim(self, key: bytes, group: bytes, consumer: bytes, data: st.DataObject, min_idle: int,
               force: bool, justid: bool) -> None:
        ids = self.pick_ids(key, data, "xclaim_ids")
        argv = [b"XCLAIM", key, group, consumer, b"%d" % min_idle, *map(fmt, ids)]
        now = self.now()
        delivery_time = now
        option = data.draw(st.sampled_from(["none", "idle", "time", "retry"]), label="option")
        retry = -1
        if option == "idle":
            idle = data.draw(idle_ms, label="idle")
            argv += [b"IDLE", b"%d" % idle]
            delivery_time = now - idle
        elif option == "time":
            t = now - data.draw(idle_ms, label="ago")
            argv += [b"TIME", b"%d" % t]
            delivery_time = t
        elif option == "retry":
            retry = data.draw(st.integers(0, 5), label="retry")
            argv += [b"RETRYCOUNT", b"%d" % retry]
        if force:
            argv.append(b"FORCE")
        if justid:
            argv.append(b"JUSTID")
        lastid = None
        s = self.stream(key)
        if s is not None and data.draw(st.booleans(), label="lastid"):
            lastid = s.last_id + data.draw(st.sampled_from([0, 1]), label="lastid_bump")
            argv += [b"LASTID", fmt(lastid)]
        reply = self.run(*argv)
        g = self.group_or_error(key, group, reply)
        if g is None:
            return
        assert s is not None
        g.consumers.add(consumer)
        if lastid is not None and lastid > g.last_id:
            g.last_id = lastid
        expected: list[Any] = []
        for i in ids:
            nack = g.pel.get(i)
            if i not in s.entries:
                g.pel.pop(i, None)
                continue
            if nack is None:
                if not force:
                    continue
                nack = g.pel[i] = MNack(consumer, now, 1)
            elif min_idle and now - nack.time < min_idle:
                continue
            nack.owner, nack.time = consumer, delivery_time
            if retry >= 0:
                nack.count = retry
            elif not justid:
                nack.count += 1
            expected.append(fmt(i) if justid else [fmt(i), s.entries[i]])
        assert reply == expected, (argv, reply, expected)

    @rule(key=st.sampled_from(KEYS), group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS),
          data=st.data(), min_idle=idle_ms, count=counts, justid=st.booleans())
    def xautoclaim(self, key: bytes, group: bytes, consumer: bytes, data: st.DataObject, min_idle: int,
                   count: int | None, justid: bool) -> None:
        s = self.stream(key)
        g0 = s.groups.get(group) if s else None
        start = data.draw(st.sampled_from([0] + (sorted(g0.pel) if g0 else [])), label="start")
        argv = [b"XAUTOCLAIM", key, group, consumer, b"%d" % min_idle, fmt(start)]
        if count is not None:
            argv += [b"COUNT", b"%d" % count]
        if justid:
            argv.append(b"JUSTID")
        reply = self.run(*argv)
        g = self.group_or_error(key, group, reply)
        if g is None:
            return
        assert s is not None
        g.consumers.add(consumer)
        now = self.now()
        left = count or 100
        attempts = left * 10
        claimed: list[Any] = []
        deleted: list[bytes] = []
        candidates = sorted(i for i in g.pel if i >= start)
        visited = 0
        for i in candidates:
            if not attempts or not left:
                break
            attempts -= 1
            visited += 1
            nack = g.pel[i]
            if i not in s.entries:
                del g.pel[i]
                deleted.append(fmt(i))
                left -= 1
                continue
            if min_idle and now - nack.time < min_idle:
                continue
            nack.owner, nack.time = consumer, now
            if not justid:
                nack.count += 1
            claimed.append(fmt(i) if justid else [fmt(i), s.entries[i]])
            left -= 1
        cursor = fmt(candidates[visited]) if visited < len(candidates) else b"0-0"
        assert reply == [cursor, claimed, deleted], (argv, reply, [cursor, claimed, deleted])

    # -- keyspace and time -----------------------------------------------------------------

    def all_streams(self) -> bool:
        return all(self.stream(k) is not None for k in KEYS)

    @precondition(all_streams)
    @rule(key=st.sampled_from(KEYS), to_string=st.booleans())
    def replace_key(self, key: bytes, to_string: bool) -> None:
        """DEL the stream, or overwrite it with a string (one key at a time)."""
        if to_string:
            assert self.run(b"SET", key, b"x") == b"OK"
            self.model[key] = b"string"
        else:
            assert self.run(b"DEL", key) == 1
            self.model.pop(key)

    @precondition(lambda self: not self.all_streams())
    @rule(data=st.data())
    def revive(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from([k for k in KEYS if self.stream(k) is None]), label="revive")
        self.revive_key(key)

    @rule(ms=st.sampled_from([0, 1, 700, 1500, 6000]))
    def tick(self, ms: int) -> None:
        self.clock[0] += ms

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def structures_are_consistent(self) -> None:
        for value in self.node.server.keyspace.dbs[0].values():
            if isinstance(value, Stream):
                value._check()

    @invariant()
    def reads_agree_with_the_model(self) -> None:
        for key in KEYS:
            s = self.stream(key)
            if s is None:
                continue
            assert self.run(b"XLEN", key) == len(s.entries)
            assert self.run(b"XRANGE", key, b"-", b"+") == [[fmt(i), s.entries[i]] for i in s.ids()]
            for name, g in s.groups.items():
                summary = self.run(b"XPENDING", key, name)
                if not g.pel:
                    assert summary == [0, None, None, None], summary
                    continue
                owners: dict[bytes, int] = {}
                for n in g.pel.values():
                    owners[n.owner] = owners.get(n.owner, 0) + 1
                assert summary == [
                    len(g.pel), fmt(min(g.pel)), fmt(max(g.pel)),
                    [[c, b"%d" % owners[c]] for c in sorted(owners)],
                ], (summary, g)
                # The clock is fake, so even idle times are exact.
                extended = self.run(b"XPENDING", key, name, b"-", b"+", b"1000")
                assert extended == [
                    [fmt(i), n.owner, max(0, self.now() - n.time), n.count] for i, n in sorted(g.pel.items())
                ], (extended, g)

    @invariant()
    def replica_replaying_the_effects_matches(self) -> None:
        new = self.node.effects[self.applied:]
        self.applied = len(self.node.effects)
        self.replica.apply_effects(new)
        assert self.replica.digest() == self.node.digest()
        assert self.replica.group_state() == self.node.group_state()

    def teardown(self) -> None:
        if not hasattr(self, "node"):
            return
        fresh = Node(self.clock, lag=2 * REPLICA_LAG_MS, replay=True)
        fresh.apply_effects(self.node.effects)
        assert fresh.digest() == self.node.digest()
        assert fresh.group_state() == self.node.group_state()


StreamHistory.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=50,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestStreamHistory = StreamHistory.TestCase
