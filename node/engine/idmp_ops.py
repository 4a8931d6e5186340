"""What the idempotent-production writes do to a `StreamValue` (XADD with IDMP or IDMPAUTO,
XCFGSET, XIDMPRECORD, a new stream taking the server's IDMP settings) and the effects that
replay them. Pure, like `stream_ops`: the time comes in as `now_ms`.

Propagation. Decisions are the primary's; the effects make every replica and AOF load reach
the same map (`IdmpState` measures age from entry IDs, so no clock is replayed):

* An add logs `XADD key IDMP pid iid [MAXLEN|MINID = threshold] <id> field value ...`:
  IDMPAUTO as IDMP with the iid the primary computed (a replica never hashes), the generated
  ID written in and a `~` trim made exact. Only the log may send IDMP with an explicit ID
  (Redis's mustObeyClient exemption).
* A duplicate logs the same form naming the original entry's ID: it changed iids-duplicates
  (Redis 8.6.2 propagates duplicates too), and a replay that finds (pid, iid) recorded as
  that very ID counts a duplicate the same way instead of adding.
* XCFGSET logs both values, when it changed one.
* A stream a client's command creates while stream-idmp-duration / stream-idmp-maxsize differ
  from the defaults takes those values: the creating effect is followed by `XCFGSET key
  IDMP-DURATION d IDMP-MAXSIZE m`, so the replica's own settings never matter. When the
  creating command was an IDMP add, its XADD is logged without IDMP and `XIDMPRECORD key pid
  iid id` follows the XCFGSET (which, applied after the XADD, would forget the iid).
"""

from __future__ import annotations

from node.engine import stream_append
from node.engine.idmp import DEFAULT_DURATION, DEFAULT_MAXSIZE, IdmpState, auto_iid
from node.engine.ids import format_id
from node.engine.stream_ops import TRIM_MAXLEN, TRIM_NONE, AddTrimArgs, Effect, StreamError
from node.engine.stream_value import StreamValue


def cfgset_effect(key: bytes, duration: int, maxsize: int) -> Effect:
    return [b"XCFGSET", key, b"IDMP-DURATION", b"%d" % duration, b"IDMP-MAXSIZE", b"%d" % maxsize]


def new_stream_settings(value: StreamValue, key: bytes, duration: int, maxsize: int) -> list[Effect]:
    """A stream a client's command just created takes the server's IDMP settings (Redis
    streamNew); returns the effect that gives them to replicas, none for the defaults."""
    if duration == DEFAULT_DURATION and maxsize == DEFAULT_MAXSIZE:
        return []
    value.idmp = IdmpState(duration, maxsize)
    return [cfgset_effect(key, duration, maxsize)]


def xadd_idmp(
    value: StreamValue,
    argv: list[bytes],
    args: AddTrimArgs,
    now_ms: int,
    node_max_entries: int,
    node_max_bytes: int,
    replay: bool,
) -> tuple[int, bool, Effect]:
    """XADD with IDMP or IDMPAUTO: (entry ID, whether it was added, effect). A duplicate adds
    nothing, trims nothing and answers the original entry's ID. `replay`: the command comes
    from the log with the ID its primary decided (see the module docstring)."""
    pid = args.idmp_pid
    first_field = args.id_pos + 1
    iid = args.idmp_iid or auto_iid(argv, first_field)
    state = value.idmp
    if state is not None:
        if replay and args.id_given:
            found = state.find(pid, iid)
            if found != args.entry_id:
                found = None
        else:
            found = state.lookup(pid, iid, now_ms)
        if found is not None:
            state.duplicates += 1
            return found, False, [b"XADD", argv[1], b"IDMP", pid, iid, format_id(found), *argv[first_field:]]
    entry_id, added = stream_append.xadd(value, argv, args, now_ms, node_max_entries, node_max_bytes)
    if state is None:
        state = value.idmp = IdmpState()
    state.record(pid, iid, entry_id)
    effect = [b"XADD", argv[1], b"IDMP", pid, iid]
    if args.strategy != TRIM_NONE:
        effect += [b"MAXLEN" if args.strategy == TRIM_MAXLEN else b"MINID", b"=", added[args.threshold_pos]]
    effect.append(added[args.id_pos])
    effect += argv[first_field:]
    return entry_id, True, effect


def without_idmp(effect: Effect) -> Effect:
    """An add's effect (`XADD key IDMP pid iid ...`) as the plain XADD that adds the entry."""
    return effect[:2] + effect[5:]


def record_effect(effect: Effect, entry_id: int) -> Effect:
    """The XIDMPRECORD that records an add's (pid, iid) (see the module docstring)."""
    return [b"XIDMPRECORD", effect[1], effect[3], effect[4], format_id(entry_id)]


def xcfgset(value: StreamValue, key: bytes, duration: int, maxsize: int) -> list[Effect]:
    """XCFGSET with the values given (-1: keep the current one); a change forgets every
    producer's iids."""
    state = value.idmp
    current = (state.duration, state.maxsize) if state is not None else (DEFAULT_DURATION, DEFAULT_MAXSIZE)
    wanted = (duration if duration >= 0 else current[0], maxsize if maxsize >= 0 else current[1])
    if wanted == current:
        return []
    if state is None:
        state = value.idmp = IdmpState(*current)
    state.configure(*wanted)
    return [cfgset_effect(key, *wanted)]


def xidmprecord(
    value: StreamValue, argv: list[bytes], pid: bytes, iid: bytes, entry_id: int, now_ms: int, replay: bool
) -> list[Effect]:
    """XIDMPRECORD key pid iid id: attach (pid, iid) to an entry, as if the XADD that added it
    had carried IDMP; nothing to do when it is remembered as that entry already. A client must
    name a live entry and may not move a remembered iid to another. The log is obeyed as it
    is (its primary logged only records that changed something; the entry may have been
    trimmed by the XADD that created the stream)."""
    state = value.idmp
    if not replay:
        if not value.contains(entry_id):
            raise StreamError("ERR The ID specified in XIDMPRECORD is not an entry of the stream")
        found = state.lookup(pid, iid, now_ms) if state is not None else None
        if found == entry_id:
            return []
        if found is not None:
            raise StreamError("ERR The idempotent ID is already recorded for another entry")
    if state is None:
        state = value.idmp = IdmpState()
    state.record(pid, iid, entry_id)
    return [argv]


def idmp_info(value: StreamValue, now_ms: int) -> list[tuple[bytes, int]]:
    """XINFO STREAM's six IDMP fields, in Redis 8.6's order."""
    state = value.idmp
    if state is None:
        return [
            (b"idmp-duration", DEFAULT_DURATION), (b"idmp-maxsize", DEFAULT_MAXSIZE), (b"pids-tracked", 0),
            (b"iids-tracked", 0), (b"iids-added", 0), (b"iids-duplicates", 0),
        ]  # fmt: skip
    pids, iids = state.tracked(now_ms)
    return [
        (b"idmp-duration", state.duration), (b"idmp-maxsize", state.maxsize), (b"pids-tracked", pids),
        (b"iids-tracked", iids), (b"iids-added", state.added), (b"iids-duplicates", state.duplicates),
    ]  # fmt: skip
