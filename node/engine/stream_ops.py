"""What each stream write does to a `StreamValue` and the effects that replay it.

Pure functions: no I/O, no clock (the command's time comes in as `now_ms`). Each write
returns its result and the list of effects (fully specified commands, as argv lists) that
make a replica or an AOF replay reach the same state. The propagation follows Redis 7.4's
t_stream.c:

* XADD with the generated ID written in, and a `~` trim rewritten as `=` with the resulting
  threshold (MAXLEN: the length left; MINID: the first stored ID, deleted or not).
* XREADGROUP: per delivered entry `XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n FORCE
  JUSTID LASTID last-id`, then `XGROUP SETID key group last-id ENTRIESREAD n` (7.4 sends the
  SETID even without NOACK, so replicas keep the read counter: 7.2 lost it).
* XCLAIM / XAUTOCLAIM: the same XCLAIM form per claimed entry; a pending entry whose stream
  entry is gone is propagated as an XCLAIM naming its current owner, which on the replica
  finds the entry gone too and drops it from the PEL.
* Everything else verbatim, and only when it changed something.

Two additions over Redis keep replicas identical where Redis lets them drift: a consumer
created by XREADGROUP/XCLAIM/XAUTOCLAIM that no XCLAIM effect names is created with
`XGROUP CREATECONSUMER` (Redis does that only for XREADGROUP NOACK), and re-reading one's
own history (XREADGROUP with an ID) propagates the new delivery time and count as XCLAIM.
"""

from __future__ import annotations

from typing import Any, Final

from node.engine.dead_letters import Mover
from node.engine.groups import INVALID_ENTRIES_READ, UNOWNED, Consumer, ConsumerGroup, Nack, one_more
from node.engine.ids import MAX_ID, decimal, format_id, incr_id
from node.engine.stream_refs import KEEPREF, policy_trim
from node.engine.stream_value import StreamValue

Effect = list[bytes]
Entry = tuple[int, list[bytes] | None]  # fields None: the entry was deleted (PEL history)

TRIM_NONE: Final = 0
TRIM_MAXLEN: Final = 1
TRIM_MINID: Final = 2


class ReadBudget:
    """What one XREAD/XREADGROUP may still return under Redis 8.10's MAXCOUNT (entries over
    all its streams) and MAXSIZE (reply bytes over all its streams, a soft cap: the entry
    that would pass it is not returned, unless it would be the reply's first).

    The bytes counted are the entries' RESP encoding (a CLAIM read's two integers
    included); the array headers and key names around them are not. A plain class: see
    AddTrimArgs."""

    __slots__ = ("entries_left", "bytes_left", "emitted")

    def __init__(self, max_count: int = 0, max_size: int = 0) -> None:
        self.entries_left = max_count  # 0: no MAXCOUNT
        self.bytes_left = max_size  # 0: no MAXSIZE (may go negative: the first entry passes)
        self.emitted = 0

    def limit(self, count: int) -> int:
        """The COUNT to read one stream with: COUNT (0 = none) within what MAXCOUNT leaves."""
        if not self.entries_left:
            return count
        left = self.entries_left - self.emitted
        return min(count, left) if count else left

    def exhausted(self) -> bool:
        if self.entries_left and self.emitted >= self.entries_left:
            return True
        return bool(self.bytes_left) and self.emitted > 0 and self.bytes_left <= 0

    def take(self, item: list[Any]) -> bool:
        """Count one entry ([id, fields or None, ...]) in, or refuse it (False) when a cap
        is reached."""
        if self.entries_left and self.emitted >= self.entries_left:
            return False
        if self.bytes_left:
            size = resp_size(item)
            if self.emitted and size > self.bytes_left:
                self.bytes_left = -1  # spent
                return False
            self.bytes_left -= size
            if self.bytes_left <= 0:
                self.bytes_left = -1  # spent; still "a byte cap" for exhausted()
        self.emitted += 1
        return True


def resp_size(item: Any) -> int:
    """Bytes of `item` (bytes, int, None, or a list of them) as a RESP2 reply."""
    if type(item) is bytes:
        return len(item) + len(b"%d" % len(item)) + 5
    if type(item) is int:
        return len(b"%d" % item) + 3
    if item is None:
        return 5
    return len(b"%d" % len(item)) + 3 + sum(resp_size(x) for x in item)


class StreamError(Exception):
    """A write the engine refuses; `message` is Redis's full error text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AddTrimArgs:
    """Redis streamAddTrimArgs: XADD's and XTRIM's parsed options. The `*_pos` fields index
    the command's argv so the effect can rewrite the ID and the trim threshold in place.

    (Option classes on command paths are plain classes: compiled, a dataclass's generated
    __init__ stays interpreted Python, ~2.5x the cost.)"""

    __slots__ = ("id_pos", "entry_id", "id_given", "seq_given", "no_mkstream", "strategy",
                 "threshold_pos", "approx", "limit", "maxlen", "minid", "idmp_pid", "idmp_iid",
                 "ref_policy")  # fmt: skip

    def __init__(
        self,
        id_pos: int = 2,  # XADD: index of the ID argument; the fields follow it
        entry_id: int = 0,  # XADD: the explicit ID (seq 0 when seq_given is False)
        id_given: bool = False,  # XADD: an ID other than '*'
        seq_given: bool = True,  # XADD: not the `ms-*` form
        no_mkstream: bool = False,
        strategy: int = TRIM_NONE,
        threshold_pos: int = -1,  # index of the MAXLEN count / MINID id
        approx: bool = False,  # `~`: only whole nodes go
        limit: int = 0,  # at most this many entries removed; 0 = no bound
        maxlen: int = 0,
        minid: int = 0,
        idmp_pid: bytes = b"",  # XADD IDMP / IDMPAUTO: the producer ID; b"" = neither option
        idmp_iid: bytes = b"",  # XADD IDMP: the idempotent ID; b"" with a pid = IDMPAUTO
        ref_policy: int = KEEPREF,  # Redis 8.2's KEEPREF | DELREF | ACKED (node.engine.stream_refs)
    ) -> None:
        self.id_pos = id_pos
        self.entry_id = entry_id
        self.id_given = id_given
        self.seq_given = seq_given
        self.no_mkstream = no_mkstream
        self.strategy = strategy
        self.threshold_pos = threshold_pos
        self.approx = approx
        self.limit = limit
        self.maxlen = maxlen
        self.minid = minid
        self.idmp_pid = idmp_pid
        self.idmp_iid = idmp_iid
        self.ref_policy = ref_policy


# ---------------------------------------------------------------------------------------
# Effects
# ---------------------------------------------------------------------------------------


def xclaim_effect(key: bytes, group_name: bytes, group: ConsumerGroup, entry_id: int, nack: Nack) -> Effect:
    """streamPropagateXCLAIM: an idempotent XCLAIM that recreates `nack` exactly (an owned
    entry's: a NACKed one is recreated by XNACK, nack_ops)."""
    owner = nack[2]
    assert owner is not UNOWNED
    return [
        b"XCLAIM", key, group_name, owner, b"0", format_id(entry_id),
        b"TIME", b"%d" % nack[0], b"RETRYCOUNT", b"%d" % nack[1],
        b"FORCE", b"JUSTID", b"LASTID", format_id(group.last_id),
    ]  # fmt: skip


def setid_effect(key: bytes, group_name: bytes, group: ConsumerGroup, raw_last_id: bytes = b"") -> Effect:
    """streamPropagateGroupID: the group's last ID (`raw_last_id` when the caller has its
    wire form) and read counter."""
    return [
        b"XGROUP", b"SETID", key, group_name, raw_last_id or format_id(group.last_id),
        b"ENTRIESREAD", b"%d" % group.entries_read,
    ]  # fmt: skip


def create_consumer_effect(key: bytes, group_name: bytes, consumer_name: bytes) -> Effect:
    return [b"XGROUP", b"CREATECONSUMER", key, group_name, consumer_name]


def xack_effect(key: bytes, group_name: bytes, entry_id: int) -> Effect:
    return [b"XACK", key, group_name, format_id(entry_id)]


# ---------------------------------------------------------------------------------------
# Entries: XTRIM, XDEL, XSETID (XADD appends in node/engine/stream_append.py)
# ---------------------------------------------------------------------------------------


def trim(value: StreamValue, args: AddTrimArgs) -> int:
    """streamTrim with the parsed strategy and reference policy; returns the number of
    entries removed."""
    return trim_walk(value, args)[0]


def trim_walk(value: StreamValue, args: AddTrimArgs) -> tuple[int, int]:
    """trim, and where a DELREF or ACKED trim's walk stopped (stream_refs.policy_trim; -1
    for a plain trim). The policies change nothing on a stream without consumer groups
    (Redis 8.6), where the plain trim runs."""
    if args.strategy == TRIM_NONE:
        return 0, -1
    if args.ref_policy != KEEPREF and value.groups:
        maxlen = args.maxlen if args.strategy == TRIM_MAXLEN else -1
        minid = args.minid if args.strategy == TRIM_MINID else -1
        return policy_trim(value, maxlen, minid, args.approx, args.limit, args.ref_policy)
    if args.strategy == TRIM_MAXLEN:
        return value.trim_maxlen(args.maxlen, args.approx, args.limit), -1
    return value.trim_minid(args.minid, args.approx, args.limit), -1


def rewrite_trim(effect: Effect, value: StreamValue, args: AddTrimArgs, reached: int) -> None:
    """Make a trim's effect (an XADD's or XTRIM's argv copy) remove exactly what the trim
    removed, whatever the replica's node layout.

    A plain `~` trim becomes `=` with the resulting threshold (trim_threshold). An exact
    DELREF/ACKED trim stays as it is: entry by entry, it removes the same entries from the
    same entries and groups. A `~` one examined whole nodes, which a replica may lay out
    differently; everything it examined lies below `reached`, so it becomes `MINID =
    reached` with the same policy, which examines exactly those entries."""
    if not args.approx:
        return
    pos = args.threshold_pos
    if reached < 0:
        effect[pos - 1] = b"="
        effect[pos] = trim_threshold(value, args.strategy)
        return
    effect[pos - 2] = b"MINID"
    effect[pos - 1] = b"="
    effect[pos] = format_id(reached)


def trim_threshold(value: StreamValue, strategy: int) -> bytes:
    """streamRewriteTrimArgument: the exact threshold that reproduces the current state."""
    if strategy == TRIM_MAXLEN:
        return b"%d" % value.length
    first = value.first_stored_id()
    return format_id(first if first is not None else MAX_ID)


def xtrim(value: StreamValue, argv: list[bytes], args: AddTrimArgs) -> tuple[int, list[Effect]]:
    removed, reached = trim_walk(value, args)
    if not removed:
        return 0, []
    effect = argv
    if args.approx:
        effect = argv.copy()
        rewrite_trim(effect, value, args, reached)
    return removed, [effect]


def xdel(value: StreamValue, argv: list[bytes], ids: list[int]) -> tuple[int, list[Effect]]:
    deleted = 0
    for entry_id in ids:
        if value.delete(entry_id):
            deleted += 1
    return deleted, [argv] if deleted else []


def xsetid(
    value: StreamValue,
    argv: list[bytes],
    last_id: int,
    entries_added: int,
    max_deleted_id: int,
) -> list[Effect]:
    """XSETID; entries_added -1 and max_deleted_id 0 mean "not given"."""
    if last_id < value.max_deleted_id:
        raise StreamError("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
    if value.length > 0:
        if last_id < value.last_live_id():
            raise StreamError("ERR The ID specified in XSETID is smaller than the target stream top item")
        if entries_added != -1 and value.length > entries_added:
            raise StreamError("ERR The entries_added specified in XSETID is smaller than the target stream length")
    before = (value.last_id, value.entries_added, value.max_deleted_id)
    value.last_id = last_id
    if entries_added != -1:
        value.entries_added = entries_added
    if max_deleted_id:
        value.max_deleted_id = max_deleted_id
    changed = before != (value.last_id, value.entries_added, value.max_deleted_id)
    return [argv] if changed else []


# ---------------------------------------------------------------------------------------
# Read counters and lag (Redis 7.4)
# ---------------------------------------------------------------------------------------


def range_has_tombstones(value: StreamValue, start: int, end: int = MAX_ID) -> bool:
    """streamRangeHasTombstones: may [start, end] hold a deleted entry? Only the greatest
    deleted ID is known, so this answers for it."""
    mx = value.max_deleted_id
    if not value.length or not mx:
        return False
    return start <= mx <= end


def estimate_distance(value: StreamValue, entry_id: int, first_id: int) -> int:
    """streamEstimateDistanceFromFirstEverEntry: the logical read counter of `entry_id`
    (entries added up to it), or INVALID_ENTRIES_READ when deletions make it unknowable.
    `first_id` is value.first_id(), passed in because callers reuse it."""
    added = value.entries_added
    if not added:
        return 0
    if not value.length and entry_id <= value.last_id:
        return added
    mx = value.max_deleted_id
    # 7.4: a tombstone after the ID makes its position unknowable.
    if entry_id and entry_id < mx:
        return INVALID_ENTRIES_READ
    if entry_id == value.last_id:
        return added
    if entry_id > value.last_id:
        return INVALID_ENTRIES_READ
    if not mx or mx < first_id:
        if entry_id < first_id:
            return added - value.length
        if entry_id == first_id:
            return added - value.length + 1
    return INVALID_ENTRIES_READ


def group_lag(value: StreamValue, group: ConsumerGroup) -> int | None:
    """streamReplyWithCGLag (7.4): entries not yet delivered to the group, None if unknown."""
    if not value.entries_added or not value.length:
        return 0
    first_id = value.first_id()
    if group.last_id < first_id and value.max_deleted_id < first_id:
        return value.length
    if group.entries_read != INVALID_ENTRIES_READ and not range_has_tombstones(value, group.last_id):
        return value.entries_added - group.entries_read
    entries_read = estimate_distance(value, group.last_id, first_id)
    if entries_read == INVALID_ENTRIES_READ:
        return None
    return value.entries_added - entries_read


# ---------------------------------------------------------------------------------------
# Reading: XREAD, XREADGROUP
# ---------------------------------------------------------------------------------------


def read_start(value: StreamValue, after: int) -> int | None:
    """XREAD of one stream: the first ID to serve after `after`, or None when there is no
    entry past it, so the key is left out of the reply."""
    if not value.length or value.last_live_id() <= after:
        return None
    return after + 1  # below MAX_ID: a live entry is above it


def _reading_consumer(
    group: ConsumerGroup, key: bytes, group_name: bytes, consumer_name: bytes, noack: bool, now_ms: int,
    effects: list[Effect],
) -> tuple[Consumer, bool, int]:
    """The consumer a read acts as, created if needed: (consumer, created, where in `effects`
    a CREATECONSUMER goes if nothing the read logs names it)."""
    # Redis 7.2 counts any read as an attempted interaction: the consumer is created (and
    # its seen-time set) even when the read has nothing to serve and is going to block.
    consumer = group.consumer(consumer_name)
    created = consumer is None
    mark = len(effects)
    if consumer is None:
        consumer = group.create_consumer(consumer_name, now_ms)
        assert consumer is not None
        if noack:
            effects.append(create_consumer_effect(key, group_name, consumer_name))
            mark = len(effects)
    consumer.seen_time = now_ms
    return consumer, created, mark


def _named(created: bool, noack: bool, effects: list[Effect], mark: int, key: bytes, group_name: bytes, name: bytes) -> None:
    if created and not noack and len(effects) == mark:
        # Nothing delivered to the new consumer names it: create it explicitly.
        effects.insert(mark, create_consumer_effect(key, group_name, name))


def read_group(
    value: StreamValue,
    key: bytes,
    group_name: bytes,
    group: ConsumerGroup,
    consumer_name: bytes,
    after: int | None,
    count: int,
    noack: bool,
    now_ms: int,
    effects: list[Effect],
    out: list[Any],
    budget: ReadBudget | None = None,
) -> list[Entry] | int | None:
    """XREADGROUP of one stream; `after` None is '>' (new entries), else the consumer's own
    pending entries after that ID. New entries are written to `out` as RESP (see
    Stream.range_resp) and their number returned; history reads return the entries (one
    may be deleted); None when '>' found nothing new (the key is then left out of the
    reply). Appends the effects. A `budget` with a byte cap (MAXSIZE) makes the history read
    stop before the entry that would pass it; new entries arrive already counted (the
    caller passes the count that fits)."""
    serve_new = False
    if after is None and value.length:
        serve_new = value.last_live_id() > group.last_id
    consumer, created, mark = _reading_consumer(group, key, group_name, consumer_name, noack, now_ms, effects)

    result: list[Entry] | int | None
    if after is not None:
        result = _read_history(value, key, group_name, group, consumer, after, count, now_ms, effects, budget)
    elif serve_new:
        result = _read_new(value, key, group_name, group, consumer, count, noack, now_ms, effects, out)
    else:
        result = None
    _named(created, noack, effects, mark, key, group_name, consumer_name)
    return result


def read_group_claim(
    value: StreamValue,
    key: bytes,
    group_name: bytes,
    group: ConsumerGroup,
    consumer_name: bytes,
    count: int,
    noack: bool,
    min_idle: int,
    now_ms: int,
    effects: list[Effect],
    budget: ReadBudget | None = None,
    mover: Mover | None = None,
) -> list[list[Any]] | None:
    """XREADGROUP ... CLAIM min-idle-time ... '>' of one stream (Redis 8.4): first the
    pending entries that are claimable (the NACK zone in release order, then the entries
    idle for at least `min_idle` ms, longest idle first), each taken over by the consumer
    as XCLAIM would (one more delivery, now; NOACK does not apply to them), then new
    entries as a '>' read delivers them; COUNT bounds the two together. Every entry comes
    as [id, fields, idle ms, deliveries before this one]: new ones have 0 and 0, a NACKed
    one's idle time is -1 (its delivery time is 0, which XPENDING also shows as -1). A
    claimable entry whose stream entry is gone leaves the PEL, as XAUTOCLAIM's do, and is
    not returned. With a dead-letter policy (`mover`), an entry delivered as often as it
    allows goes to the dead-letter stream instead. None when there is nothing to serve."""
    consumer, created, mark = _reading_consumer(group, key, group_name, consumer_name, noack, now_ms, effects)
    out: list[list[Any]] = []
    pel = group.pel
    for entry_id in group.idle_entries(now_ms, min_idle, count):
        nack = pel[entry_id]
        if mover is not None:
            moved = mover(entry_id, nack)
            if moved is not None:
                effects += moved
                continue
        fields = value.get(entry_id)
        if fields is None:
            _drop_deleted(key, group_name, group, entry_id, nack, effects)
            continue
        item = [format_id(entry_id), fields, -1 if nack[2] is UNOWNED else now_ms - nack[0], nack[1]]
        if budget is not None and not budget.take(item):
            break
        out.append(item)
        claimed = group.assign(entry_id, consumer, now_ms, one_more(nack[1]))
        consumer.active_time = now_ms
        effects.append(xclaim_effect(key, group_name, group, entry_id, claimed))
    left = count - len(out) if count else 0
    full = (count and left <= 0) or (budget is not None and budget.exhausted())
    if not full and value.length and value.last_live_id() > group.last_id:
        start = incr_id(group.last_id)
        fresh = value.range(start if start is not None else 0, MAX_ID, left)
        taken: list[int] = []
        raw_taken: list[bytes] = []
        for entry_id, fields in fresh:
            raw_id = format_id(entry_id)
            item = [raw_id, fields, 0, 0]
            if budget is not None and not budget.take(item):
                break
            out.append(item)
            taken.append(entry_id)
            raw_taken.append(raw_id)
        _deliver_new(value, key, group_name, group, consumer, taken, raw_taken, noack, now_ms, effects)
    _named(created, noack, effects, mark, key, group_name, consumer_name)
    return out or None


def _read_new(
    value: StreamValue,
    key: bytes,
    group_name: bytes,
    group: ConsumerGroup,
    consumer: Consumer,
    count: int,
    noack: bool,
    now_ms: int,
    effects: list[Effect],
    out: list[Any],
) -> int:
    """streamReplyWithRange with a group: deliver the entries after the group's last ID,
    written to `out` as RESP; returns how many."""
    start = incr_id(group.last_id)
    ids: list[int] = []
    raw_ids: list[bytes] = []
    n = value.range_resp(start if start is not None else 0, MAX_ID, count, False, out, ids, raw_ids)
    _deliver_new(value, key, group_name, group, consumer, ids, raw_ids, noack, now_ms, effects)
    return n


def _deliver_new(
    value: StreamValue,
    key: bytes,
    group_name: bytes,
    group: ConsumerGroup,
    consumer: Consumer,
    ids: list[int],
    raw_ids: list[bytes],
    noack: bool,
    now_ms: int,
    effects: list[Effect],
) -> None:
    """Deliver the entries `ids` (ascending, all after the group's last ID) to `consumer`:
    the group's last ID and read counter move past them, each one becomes pending (unless
    NOACK), and the effects say so."""
    first_id = value.first_id()
    moved = False
    # Every delivered entry's XCLAIM carries the same TIME and RETRYCOUNT 1.
    time_arg = b"%d" % now_ms
    raw_last = b""
    for i, entry_id in enumerate(ids):
        raw_id = raw_ids[i]
        if entry_id > group.last_id:
            if (
                group.entries_read != INVALID_ENTRIES_READ
                and group.last_id >= first_id
                and not range_has_tombstones(value, group.last_id)
            ):
                # A valid counter and no tombstone ahead: keep counting.
                group.entries_read += 1
            elif value.entries_added:
                group.entries_read = estimate_distance(value, entry_id, first_id)
            group.last_id = entry_id
            raw_last = raw_id
            moved = True
        if not noack:
            nack = group.deliver(entry_id, consumer, now_ms)
            consumer.active_time = now_ms
            # xclaim_effect, reusing what all deliveries of this read share: the group's
            # last ID is the entry's own, the time is now, the count 1.
            effects.append([
                b"XCLAIM", key, group_name, consumer.name, b"0", raw_id,
                b"TIME", time_arg if nack[0] == now_ms else b"%d" % nack[0], b"RETRYCOUNT", decimal(nack[1]),
                b"FORCE", b"JUSTID", b"LASTID", raw_id if group.last_id == entry_id else format_id(group.last_id),
            ])  # fmt: skip
    if moved:
        effects.append(setid_effect(key, group_name, group, raw_last))


def _read_history(
    value: StreamValue,
    key: bytes,
    group_name: bytes,
    group: ConsumerGroup,
    consumer: Consumer,
    after: int,
    count: int,
    now_ms: int,
    effects: list[Effect],
    budget: ReadBudget | None = None,
) -> list[Entry]:
    """streamReplyWithRangeFromConsumerPEL: the consumer's pending entries after `after`;
    a deleted entry comes back with no fields and keeps its delivery attributes."""
    start = incr_id(after)
    out: list[Entry] = []
    for entry_id in group.owned(consumer, start if start is not None else 0):
        if count and len(out) >= count:
            break
        fields = value.get(entry_id)
        if budget is not None and not budget.take([format_id(entry_id), fields]):
            break
        if fields is None:
            out.append((entry_id, None))
            continue
        nack = group.redeliver(entry_id, now_ms)
        out.append((entry_id, fields))
        effects.append(xclaim_effect(key, group_name, group, entry_id, nack))
    return out


# ---------------------------------------------------------------------------------------
# Claiming: XCLAIM, XAUTOCLAIM
# ---------------------------------------------------------------------------------------


class ClaimOptions:
    """XCLAIM's options as Redis resolves them (a plain class: see AddTrimArgs)."""

    __slots__ = ("min_idle", "delivery_time", "retry_count", "force", "justid", "last_id")

    def __init__(
        self,
        min_idle: int = 0,
        delivery_time: int = -1,  # absolute ms (from IDLE or TIME); -1 = now
        retry_count: int = -1,  # -1 = increment (unless JUSTID)
        force: bool = False,
        justid: bool = False,
        last_id: int = 0,  # LASTID; 0 = not given
    ) -> None:
        self.min_idle = min_idle
        self.delivery_time = delivery_time
        self.retry_count = retry_count
        self.force = force
        self.justid = justid
        self.last_id = last_id


def _claim_consumer(group: ConsumerGroup, name: bytes, now_ms: int) -> tuple[Consumer, bool]:
    consumer = group.consumer(name)
    created = consumer is None
    if consumer is None:
        consumer = group.create_consumer(name, now_ms)
        assert consumer is not None
    consumer.seen_time = now_ms
    return consumer, created


def _drop_deleted(
    key: bytes, group_name: bytes, group: ConsumerGroup, entry_id: int, nack: Nack, effects: list[Effect]
) -> None:
    """A pending entry whose stream entry is gone leaves the PEL; the XCLAIM effect names
    its owner so the replica, where the entry is gone too, drops it the same way. A NACKed
    entry has no owner to name: it is logged as the XACK it amounts to (as Redis 8.8)."""
    if nack[2] is UNOWNED:
        effects.append(xack_effect(key, group_name, entry_id))
    else:
        effects.append(xclaim_effect(key, group_name, group, entry_id, nack))
    group.ack(entry_id)


def xclaim(
    value: StreamValue,
    key: bytes,
    group_name: bytes,
    group: ConsumerGroup,
    consumer_name: bytes,
    ids: list[int],
    opts: ClaimOptions,
    now_ms: int,
    trust_time: bool = False,
    mover: Mover | None = None,
) -> tuple[list[int], list[Effect]]:
    """XCLAIM; returns the claimed IDs (in argument order) and the effects. With
    `trust_time` (replaying the log) a TIME in the future is kept: it is the primary's
    clock, and clamping it to ours would make the replica's PEL differ."""
    effects: list[Effect] = []
    propagate_last_id = False
    if opts.last_id > group.last_id:
        group.last_id = opts.last_id
        propagate_last_id = True
    delivery_time = opts.delivery_time
    if delivery_time < 0 or (delivery_time > now_ms and not trust_time):
        # A bogus time (a client's clock ahead of ours) means now, as in Redis.
        delivery_time = now_ms
    consumer, created = _claim_consumer(group, consumer_name, now_ms)
    claimed: list[int] = []
    pel = group.pel
    for entry_id in ids:
        nack = pel.get(entry_id)
        if not value.contains(entry_id):
            if nack is not None:
                _drop_deleted(key, group_name, group, entry_id, nack, effects)
                propagate_last_id = False
            continue
        if nack is None:
            if not opts.force:
                continue
            # FORCE creates the pending entry (Redis's NACK with no owner, count 1).
            count = 1
        else:
            if opts.min_idle and now_ms - nack[0] < opts.min_idle:
                continue
            if mover is not None:
                moved = mover(entry_id, nack)
                if moved is not None:
                    effects += moved
                    propagate_last_id = False
                    continue
            count = nack[1]
        if opts.retry_count >= 0:
            count = opts.retry_count
        elif not opts.justid:
            count = one_more(count)
        nack = group.assign(entry_id, consumer, delivery_time, count)
        claimed.append(entry_id)
        consumer.active_time = now_ms
        effects.append(xclaim_effect(key, group_name, group, entry_id, nack))
        propagate_last_id = False
    if propagate_last_id:
        effects.append(setid_effect(key, group_name, group))
    if created and not claimed:
        effects.insert(0, create_consumer_effect(key, group_name, consumer_name))
    return claimed, effects


def xautoclaim(
    value: StreamValue,
    key: bytes,
    group_name: bytes,
    group: ConsumerGroup,
    consumer_name: bytes,
    min_idle: int,
    start: int,
    count: int,
    justid: bool,
    now_ms: int,
    mover: Mover | None = None,
) -> tuple[int, list[int], list[int], list[Effect]]:
    """XAUTOCLAIM; returns (next cursor, claimed IDs, deleted IDs, effects). Redis scans at
    most 10 * count pending entries; deleted entries count against COUNT."""
    effects: list[Effect] = []
    consumer, created = _claim_consumer(group, consumer_name, now_ms)
    attempts = count * 10
    pel = group.pel
    # The scan only removes or reassigns the IDs it visits, so a snapshot of the next
    # attempts + 1 IDs (the extra one is the cursor) is what Redis's rax iterator sees.
    candidates = []
    for entry_id in pel.irange(start):
        candidates.append(entry_id)
        if len(candidates) > attempts:
            break
    claimed: list[int] = []
    deleted: list[int] = []
    visited = 0
    for entry_id in candidates:
        if not attempts or not count:
            break
        attempts -= 1
        visited += 1
        nack = pel[entry_id]
        if not value.contains(entry_id):
            _drop_deleted(key, group_name, group, entry_id, nack, effects)
            deleted.append(entry_id)
            count -= 1
            continue
        if min_idle and now_ms - nack[0] < min_idle:
            continue
        if mover is not None:
            moved = mover(entry_id, nack)
            if moved is not None:
                effects += moved
                continue
        nack = group.assign(entry_id, consumer, now_ms, nack[1] if justid else one_more(nack[1]))
        claimed.append(entry_id)
        count -= 1
        consumer.active_time = now_ms
        effects.append(xclaim_effect(key, group_name, group, entry_id, nack))
    cursor = candidates[visited] if visited < len(candidates) else 0
    if created and not claimed:
        effects.insert(0, create_consumer_effect(key, group_name, consumer_name))
    return cursor, claimed, deleted, effects


# ---------------------------------------------------------------------------------------
# Groups and consumers: XACK, XGROUP
# ---------------------------------------------------------------------------------------


def xack(group: ConsumerGroup, argv: list[bytes], ids: list[int]) -> tuple[int, list[Effect]]:
    acked = 0
    for entry_id in ids:
        if group.ack(entry_id) is not None:
            acked += 1
    return acked, [argv] if acked else []


def clamp_entries_read(value: StreamValue, entries_read: int) -> int:
    """XGROUP CREATE/SETID's ENTRIESREAD, at most the stream's entries-added (Redis 8.2.2,
    redis#14257: a larger one made the lag negative)."""
    return min(entries_read, value.entries_added)


def group_create(
    value: StreamValue, argv: list[bytes], group_name: bytes, last_id: int, entries_read: int
) -> list[Effect]:
    if value.group(group_name) is not None:
        raise StreamError("BUSYGROUP Consumer Group name already exists")
    value.add_group(group_name, ConsumerGroup(last_id, clamp_entries_read(value, entries_read)))
    return [argv]


def group_setid(
    value: StreamValue, group: ConsumerGroup, argv: list[bytes], last_id: int, entries_read: int
) -> list[Effect]:
    entries_read = clamp_entries_read(value, entries_read)
    changed = (group.last_id, group.entries_read) != (last_id, entries_read)
    group.last_id = last_id
    group.entries_read = entries_read
    return [argv] if changed else []


def group_destroy(value: StreamValue, argv: list[bytes], group_name: bytes) -> tuple[bool, list[Effect]]:
    if value.remove_group(group_name):
        return True, [argv]
    return False, []


def group_create_consumer(
    group: ConsumerGroup, argv: list[bytes], consumer_name: bytes, now_ms: int
) -> tuple[bool, list[Effect]]:
    if group.create_consumer(consumer_name, now_ms) is None:
        return False, []
    return True, [argv]


def group_delete_consumer(group: ConsumerGroup, argv: list[bytes], consumer_name: bytes) -> tuple[int, list[Effect]]:
    if group.consumer(consumer_name) is None:
        return 0, []
    return group.delete_consumer(consumer_name), [argv]

