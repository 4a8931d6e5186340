"""Key expiry as commands see it: lazy expiry of the keys a command names, the replica's view
of expired keys, the active expiry cycle and their statistics (Redis 7.2's db.c
expireIfNeeded/keyIsExpired and expire.c activeExpireCycle).

Rules:
* A key is logically expired once the command's time (`Session.command_ms`: the clock, or
  the time EXEC started) is past its deadline.
* Only a primary deletes expired keys (`deletes_expired`) — in fenced mode, only while it holds
  its lease: without it, it hides them as a replica does and its log does not grow (the
  active cycle waits too, as during a pause). It logs each deletion as `DEL key`: in the unit of
  the write that found the key expired (a write on an expired key logs
  `MULTI, DEL, <write>, EXEC`, as Redis 7.2 propagates it), as a unit of its own when a
  read or the active cycle found it. `INFO stats expired_keys` counts these deletions.
* A replica never deletes on its own: the key stays until its primary's DEL arrives. Its
  clients' commands see the key as gone once its time has passed: the dispatcher hides it
  from the command (removed from the database for the duration of the handler and put back
  after it, values and order of everything else untouched), so every read answers as if it
  did not exist.
* The replication link's session and an AOF being loaded (sessions flagged "replay") see
  every key, expired or not, as Redis's master client and loading do: the log they apply
  already holds the primary's DELs.
* Before a command runs, the dispatcher expires the keys its table entry names
  (`expire_command_keys`), XREAD's and XREADGROUP's keys after STREAMS included, and, for a
  command that blocks, again before each retry; WATCH is the exception (it records whether
  the key was expired, node.server). Commands that visit keys they do not name (KEYS, SCAN,
  RANDOMKEY) and keys in another database (MOVE, COPY … DB) use `expire_if_needed` and
  `is_expired` themselves. Redis looks keys up one at a time inside each command: the one
  visible difference is that a command refused for its arguments may already have deleted
  an expired key it names (the reply is the same).

The active cycle (`Expiry.cycle`, run `hz` times a second on a primary by node/server/
expire_cron.py) is Redis's slow cycle with its bounds and a simpler selection: up to 16
databases per call (all of them after a call that hit its time limit), in each the due keys
in deadline order (`Expires.pop_due`, a heap: no live key is ever sampled), in batches of
`20 + 5 × (active-expire-effort − 1)` keys, until none is due or the call has used
`(25 + 2 × (effort − 1)) %` of the `1/hz` period (25 ms at the defaults).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from node.commands.context import Block, Core, Node, Session
from node.commands.introspection import key_positions
from node.commands.table import CommandSpec
from node.engine.keyspace import Database, Value

# Commands whose keys are not expired before they run: WATCH records the key's state as is.
_NOT_EXPIRED: Final = frozenset({"watch"})
# Commands whose keys follow a keyword rather than fixed positions.
_KEYWORD_KEYED: Final = frozenset({"xread", "xreadgroup"})

# activeExpireCycle's constants (expire.c).
_KEYS_PER_LOOP: Final = 20
_SLOW_TIME_PERC: Final = 25
_DBS_PER_CALL: Final = 16  # CRON_DBS_PER_CALL

# Keys hidden from a replica's client for one command: (database, key, value) to put back.
Hidden = list[tuple[Database, bytes, Value]]


class Expiry:
    """The node's key expiry: the active-expire switch and the statistics INFO reports."""

    __slots__ = ("active", "expired_keys", "stale_perc", "time_cap_reached", "cycle_ns", "_next_db", "_capped")

    def __init__(self) -> None:
        self.active = True  # DEBUG SET-ACTIVE-EXPIRE
        self.expired_keys = 0  # keys deleted because their time had passed
        # Running average (5 % weight per cycle, as Redis) of the share of the volatile keys a
        # cycle visited that it found expired: the keys that sat logically expired.
        self.stale_perc = 0.0
        self.time_cap_reached = 0  # cycles that stopped at their time limit
        self.cycle_ns = 0  # time spent in active cycles
        self._next_db = 0  # the database the next cycle starts with
        self._capped = False  # the last cycle stopped at its time limit

    def reset_stats(self) -> None:
        self.expired_keys = 0
        self.stale_perc = 0.0
        self.time_cap_reached = 0
        self.cycle_ns = 0

    def cycle(self, node: Node, now: int, clock_ns: Callable[[], int] = time.perf_counter_ns) -> int:
        """One active expiry cycle at time `now` (ms): deletes due keys within the time
        budget, logging a DEL for each. Returns how many it deleted."""
        config = node.config
        effort = config.get_int("active-expire-effort") - 1
        per_loop = _KEYS_PER_LOOP + _KEYS_PER_LOOP // 4 * effort
        hz = min(max(config.get_int("hz"), 1), 500)
        budget_ns = (_SLOW_TIME_PERC + 2 * effort) * 1_000_000_000 // hz // 100
        keyspace = node.keyspace
        count = len(keyspace.dbs)
        dbs = count if self._capped else min(_DBS_PER_CALL, count)
        self._capped = False
        start = clock_ns()
        visited = expired = 0
        for _ in range(dbs):
            index = self._next_db % count
            self._next_db = index + 1
            expires = keyspace.expires[index]
            if not expires.deadlines:
                continue
            visited += len(expires)
            while True:
                due = expires.pop_due(now, per_loop)
                for key in due:
                    _delete_expired(node, index, key, None)
                expired += len(due)
                if len(due) < per_loop:
                    break
                if clock_ns() - start > budget_ns:
                    self._capped = True
                    self.time_cap_reached += 1
                    break
            if self._capped:
                break
        self.cycle_ns += clock_ns() - start
        current = expired / visited if visited else 0.0
        self.stale_perc = current * 0.05 + self.stale_perc * 0.95
        return expired


def _delete_expired(node: Node, index: int, key: bytes, ctx: Session | None) -> None:
    """Delete an expired key and log `DEL key` (deleteExpiredKeyAndPropagate): through the
    session when a client's command found it, so its unit and WAIT offset include it."""
    node.keyspace.delete(index, key)
    if ctx is not None and ctx.db_index == index:
        ctx.propagate(b"DEL", key)
    else:
        if ctx is not None:
            ctx.effects_in_command += 1
        node.propagate(index, [b"DEL", key])
    node.expiry.expired_keys += 1


def deletes_expired(node: Core) -> bool:
    """Whether this node deletes expired keys now: a primary, in fenced mode while it holds
    its lease (otherwise it leaves them for whichever primary comes next, as a replica)."""
    return node.role == "master" and node.lease_refusal() is None


def sees_expiry(ctx: Session) -> bool:
    """Whether this session's commands see keys expire (not so for a log being replayed)."""
    return "replay" not in ctx.flags


def is_expired(ctx: Session, key: bytes, index: int | None = None) -> bool:
    """Whether key is logically expired for ctx's command, without deleting it (KEYS)."""
    expires = ctx.expires if index is None else ctx.node.keyspace.expires[index]
    return bool(expires.deadlines) and sees_expiry(ctx) and expires.is_expired(key, ctx.command_ms())


def expire_if_needed(ctx: Session, key: bytes, index: int | None = None) -> bool:
    """expireIfNeeded: True when key (in ctx's database, or database `index`) is logically
    expired, which the caller treats as absent. A primary deletes it first (logging DEL);
    a replica leaves it for its primary's DEL."""
    if not is_expired(ctx, key, index):
        return False
    if deletes_expired(ctx.node):
        _delete_expired(ctx.node, ctx.db_index if index is None else index, key, ctx)
    return True


def command_keys(spec: CommandSpec, argv: Sequence[bytes]) -> list[bytes]:
    """The keys a command names, as lazy expiry sees them (none for WATCH)."""
    if spec.first_key > 0:
        return [] if spec.name in _NOT_EXPIRED else spec.keys(argv)
    if spec.name in _KEYWORD_KEYED:
        positions = key_positions(spec, list(argv))
        return [argv[i] for i in positions] if positions else []
    return []


def expire_command_keys(ctx: Session, spec: CommandSpec, argv: Sequence[bytes]) -> Hidden | None:
    """Lazy expiry of the keys argv names, before its handler runs (the dispatcher calls it
    when ctx's database has volatile keys). On a replica, returns the keys hidden from the
    command, which `restore_hidden` puts back once it ran."""
    first = spec.first_key
    if first <= 0 and spec.name not in _KEYWORD_KEYED:
        return None  # no key
    now = ctx.command_ms()
    expires = ctx.expires
    if not now > expires.earliest():
        return None  # no deadline of this database has passed: the usual case on a primary
    if first > 0 and first == spec.last_key:
        # One key (GET, SET, XADD, EXPIRE, ...): nothing to do unless its deadline passed.
        if first >= len(argv):
            return None
        key = argv[first]
        when = expires.deadlines.get(key)
        if when is None or not now > when or not sees_expiry(ctx):
            return None
        return _expire_key(ctx, key)
    if not sees_expiry(ctx):
        return None
    keys = command_keys(spec, argv)
    return expire_keys(ctx, keys) if keys else None


def expire_keys(ctx: Session, keys: Sequence[bytes]) -> Hidden | None:
    deadlines = ctx.expires.deadlines
    now = 0
    hidden: Hidden | None = None
    for key in keys:
        when = deadlines.get(key)
        if when is None:
            continue
        if not now:
            now = ctx.command_ms()
        if not now > when:
            continue
        more = _expire_key(ctx, key)
        if more is not None:
            if hidden is None:
                hidden = more
            else:
                hidden += more
    return hidden


def _expire_key(ctx: Session, key: bytes) -> Hidden | None:
    """A key of ctx's database found expired: a primary deletes it; a replica hides it from
    the command (returned, to be put back)."""
    if deletes_expired(ctx.node):
        _delete_expired(ctx.node, ctx.db_index, key, ctx)
        return None
    db = ctx.db
    value = db.pop(key, None)
    return None if value is None else [(db, key, value)]


def restore_hidden(hidden: Hidden) -> None:
    """Put back the keys `expire_keys` hid from a replica's client."""
    for db, key, value in hidden:
        db[key] = value


def expire_before_retry(block: Block) -> None:
    """Make a blocked command's retries expire (or, on a replica, hide) its keys first, as
    Redis 7.2 re-runs a woken command through the key lookups."""
    retry = block.retry
    keys = block.keys

    def retry_with_expiry(ctx: Session) -> Any:
        if not ctx.expires.deadlines or not sees_expiry(ctx):
            return retry(ctx)
        hidden = expire_keys(ctx, keys)
        try:
            return retry(ctx)
        finally:
            if hidden is not None:
                restore_hidden(hidden)

    block.retry = retry_with_expiry


def expire_all_due(node: Node, now: int) -> int:
    """Delete every key past its deadline, logging a DEL for each: a primary does this once
    its data is loaded, so what expired while it was down is gone before any client
    connects. Returns how many it deleted."""
    deleted = 0
    for index, expires in enumerate(node.keyspace.expires):
        while expires.deadlines:
            due = expires.pop_due(now, 1024)
            for key in due:
                _delete_expired(node, index, key, None)
            deleted += len(due)
            if len(due) < 1024:
                break
    return deleted
