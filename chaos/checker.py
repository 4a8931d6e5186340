"""Checkers: pure functions from a recorded history (a list of events, see `history`) to a
JSON-able verdict. No I/O, no clock: the same history always gives the same result, so a run can
be rechecked later (`rill chaos check HISTORY`).

The shape follows Jepsen's total-queue checker and Maelstrom: an `ok` write is acknowledged and
must be found in the final state (else it is `lost`); an `info` write is indeterminate, found or
not (`recovered` when found); a `fail` write must never be found. What a stream adds: every entry
has an ID, so one ID must never hold two values and IDs must grow; replicas serve reads, so a read
may show an entry that a failover later discards; consumer groups deliver and acknowledge.

An acknowledged write is *lost* when it is absent from every node's final read. The final reads
are taken once the cluster healed and settled (one primary the sentinels agree on, every node
following it in sync); a run that never settles, or whose final reads disagree, is a failure in
itself (`not_settled`, `divergent_nodes`), not a footnote. The reference final state (for the
per-node comparison, the consumer-group and the timing checks) is the final read of the node
that is primary at the end (by ROLE); without exactly one primary, the reachable node with the
most entries stands in (named in the result).

Two verdicts: `valid` (no anomaly of any kind: Redis + Sentinel is not expected to be valid under
faults) and `safe` (the guarantees fenced mode promises hold: no WAIT-majority write lost, no G2
violation, no durably acknowledged group entry delivered again, no durable entry never delivered,
the cluster settled with every node's final read and group state the same).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chaos.g2 import check_g2
from chaos.history import COMPLETIONS, Event

MAX_EXAMPLES = 20  # values listed per anomaly; the counts are always complete
WAIT_MODES = ("nowait", "wait1", "waitmaj")
# The anomalies that break what fenced mode promises (G1: no WAIT-majority write lost, and for
# groups no durably acknowledged entry delivered again or durable entry never delivered; G2: no
# old primary acknowledging after a newer promotion), plus what no mode may ever do (a value
# twice, a value never written, a refused write applied) and a run that cannot be judged (it
# never settled, a node unreadable, final reads or group states that disagree).
SAFETY = ("lost_wait_majority", "g2", "redelivered_after_durable_ack", "durable_never_delivered",
          "duplicated", "unexpected", "failed_but_present", "not_settled", "divergent_nodes",
          "unreachable_nodes", "divergent_group_state", "no_reference")


def parse_id(entry_id: str) -> tuple[int, int]:
    """A stream ID `ms-seq` as a comparable pair."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


@dataclass(frozen=True)
class Op:
    """One client operation: its invoke event and its completion (None if the history ends
    before it completed, which counts as indeterminate)."""

    invoke: Event
    completion: Event | None

    @property
    def outcome(self) -> str:
        return str(self.completion["type"]) if self.completion is not None else "info"

    @property
    def f(self) -> str:
        return str(self.invoke.get("f"))

    @property
    def start(self) -> float:
        return float(self.invoke.get("time", 0.0))

    @property
    def end(self) -> float:
        return float(self.completion["time"]) if self.completion is not None else float("inf")

    def get(self, field: str, default: Any = None) -> Any:
        """A field of the completion, else of the invocation."""
        if self.completion is not None and field in self.completion:
            return self.completion[field]
        return self.invoke.get(field, default)


def pair_ops(history: Iterable[Event]) -> list[Op]:
    """Invocations paired with their completions by process (a process has at most one
    operation in flight, as in Jepsen). A completion without an invocation is ignored."""
    open_ops: dict[str, Event] = {}
    ops: list[Op] = []
    for event in history:
        kind = event.get("type")
        process = str(event.get("process"))
        if kind == "invoke":
            if process in open_ops:  # the previous one never completed: indeterminate
                ops.append(Op(open_ops.pop(process), None))
            open_ops[process] = event
        elif kind in COMPLETIONS and process in open_ops:
            ops.append(Op(open_ops.pop(process), event))
    ops.extend(Op(invoke, None) for invoke in open_ops.values())
    ops.sort(key=lambda op: op.start)
    return ops


def _entries(event: Event) -> list[tuple[str, str]]:
    return [(str(entry[0]), str(entry[1])) for entry in event.get("entries") or []]


def _examples(values: Iterable[Any]) -> list[Any]:
    return sorted(values, key=str)[:MAX_EXAMPLES]


def _wait_met(op: Op) -> bool:
    wait = int(op.invoke.get("wait", 0))
    return wait > 0 and op.outcome == "ok" and int(op.get("acks") or 0) >= wait  # None: WAIT itself failed


@dataclass(frozen=True)
class Final:
    """A node's final read."""

    node: str
    role: str | None
    entries: list[tuple[str, str]] | None  # None: the node could not be read
    groups: tuple[tuple[str, str, str], ...] | None = None  # (group, last-delivered-id, entries-read)
    pending: tuple[tuple[str, str, int], ...] | None = None  # the PEL: (id, consumer, times delivered)


def finals_of(history: Iterable[Event]) -> dict[str, Final]:
    out: dict[str, Final] = {}
    for event in history:
        if event.get("type") == "final":
            node = str(event.get("node"))
            entries = _entries(event) if event.get("entries") is not None else None
            role = event.get("role")
            groups = event.get("groups")
            pending = event.get("pending")
            out[node] = Final(
                node, str(role) if role is not None else None, entries,
                tuple(sorted((str(g.get("name")), str(g.get("last-delivered-id")), str(g.get("entries-read")))
                             for g in groups)) if isinstance(groups, list) else None,
                tuple(sorted((str(p[0]), str(p[1]), int(p[2])) for p in pending)) if isinstance(pending, list)
                else None)
    return out


def reference_final(finals: dict[str, Final]) -> tuple[Final | None, str]:
    """The final state acknowledged writes are checked against, and why it was chosen."""
    readable = [f for f in finals.values() if f.entries is not None]
    masters = [f for f in readable if f.role == "master"]
    if len(masters) == 1:
        return masters[0], "the only primary"
    if not readable:
        return None, "no node could be read"
    best = max(readable, key=lambda f: (len(f.entries or []), f.node))
    why = "no primary" if not masters else f"{len(masters)} primaries"
    return best, f"{why}: the readable node with the most entries"


def check_writes(ops: Sequence[Op], reference: Final | None, finals: dict[str, Final]) -> dict[str, Any]:
    """Lost (absent from every node's final read), recovered, failed-but-present; and, apart,
    acknowledged writes missing from the reference (the final primary) though some node has
    them (`missing_from_reference`: what a settled run never has)."""
    writes = [op for op in ops if op.f == "xadd"]
    present = {value for _, value in (reference.entries or [])} if reference is not None else set()
    anywhere = {value for f in finals.values() for _, value in (f.entries or [])}
    missing_from_reference = 0
    by_mode: dict[str, dict[str, int]] = {}
    lost: list[Op] = []
    recovered = 0
    failed_present: list[str] = []
    for op in writes:
        mode = str(op.invoke.get("mode", "nowait"))
        stats = by_mode.setdefault(mode, {"attempted": 0, "ok": 0, "fail": 0, "info": 0, "wait_met": 0, "lost": 0})
        stats["attempted"] += 1
        stats[op.outcome] += 1
        stats["wait_met"] += _wait_met(op)
        value = str(op.invoke.get("value"))
        if op.outcome == "ok" and value not in anywhere:
            lost.append(op)
            stats["lost"] += 1
        elif op.outcome == "ok" and value not in present:
            missing_from_reference += 1
        elif op.outcome == "info" and value in anywhere:
            recovered += 1
        elif op.outcome == "fail" and value in anywhere:
            failed_present.append(value)
    return {
        "attempted": len(writes),
        "ok": sum(op.outcome == "ok" for op in writes),
        "fail": sum(op.outcome == "fail" for op in writes),
        "info": sum(op.outcome == "info" for op in writes),
        "by_mode": by_mode,
        "lost_ops": lost,
        "lost": {
            "acked": len(lost),
            "wait_acked": sum(_wait_met(op) for op in lost),
            "wait_majority_acked": sum(_wait_met(op) and op.invoke.get("mode") == "waitmaj" for op in lost),
            "values": _examples(str(op.invoke.get("value")) for op in lost),
        },
        "missing_from_reference": missing_from_reference,
        "recovered": recovered,
        "failed_but_present": {"count": len(failed_present), "values": _examples(failed_present)},
    }


def check_values(ops: Sequence[Op], finals: dict[str, Final]) -> dict[str, Any]:
    """Duplicates, values never written, one ID holding two values, one value under two IDs."""
    attempted = {str(op.invoke.get("value")) for op in ops if op.f == "xadd"}
    id_values: dict[str, set[str]] = defaultdict(set)
    value_ids: dict[str, set[str]] = defaultdict(set)
    unexpected: set[str] = set()

    def observe(entry_id: str, value: str) -> None:
        id_values[entry_id].add(value)
        value_ids[value].add(entry_id)
        if value not in attempted:
            unexpected.add(value)

    for op in ops:
        if op.outcome != "ok" or op.completion is None:
            continue
        if op.f == "xadd" and op.completion.get("id") is not None:
            observe(str(op.completion["id"]), str(op.invoke.get("value")))
        for entry_id, value in _entries(op.completion):
            observe(entry_id, value)
    duplicated: dict[str, int] = {}
    for final in finals.values():
        counts: dict[str, int] = defaultdict(int)
        for entry_id, value in final.entries or []:
            observe(entry_id, value)
            counts[value] += 1
        for value, n in counts.items():
            if n > 1:
                duplicated[f"{final.node}:{value}"] = n
    conflicts = {i: sorted(v) for i, v in id_values.items() if len(v) > 1}
    moved = {v: sorted(i, key=parse_id) for v, i in value_ids.items() if len(i) > 1}
    return {
        "duplicated": {"count": len(duplicated), "values": _examples(duplicated)},
        "unexpected": {"count": len(unexpected), "values": _examples(unexpected)},
        "id_conflicts": {"count": len(conflicts),
                         "examples": [{"id": i, "values": conflicts[i]} for i in _examples(conflicts)]},
        "value_moved": {"count": len(moved),
                        "examples": [{"value": v, "ids": moved[v]} for v in _examples(moved)]},
    }


def check_order(ops: Sequence[Op], finals: dict[str, Final]) -> dict[str, Any]:
    """IDs must grow: in each node's final state, in what each reader was served, and in the
    IDs acknowledged to each producer (a producer's ID going back means it was acknowledged by
    a primary whose history was then replaced)."""
    examples: list[dict[str, Any]] = []
    counts = {"final": 0, "reader": 0, "producer": 0}

    def scan(kind: str, where: str, ids: Iterable[str]) -> None:
        last: tuple[int, int] | None = None
        last_text = ""
        for entry_id in ids:
            current = parse_id(entry_id)
            if last is not None and current <= last:
                counts[kind] += 1
                if len(examples) < MAX_EXAMPLES:
                    examples.append({"kind": kind, "where": where, "after": last_text, "id": entry_id})
            last, last_text = current, entry_id

    for final in finals.values():
        scan("final", final.node, (i for i, _ in final.entries or []))
    by_process: dict[str, list[Op]] = defaultdict(list)
    for op in ops:
        if op.outcome == "ok":
            by_process[str(op.invoke.get("process"))].append(op)
    for process, done in sorted(by_process.items()):
        done.sort(key=lambda op: op.end)
        scan("reader", process, (i for op in done if op.f == "xread" and op.completion
                                 for i, _ in _entries(op.completion)))
        scan("producer", process, (str(op.get("id")) for op in done if op.f == "xadd" and op.get("id")))
    return {"count": sum(counts.values()), "by_kind": counts, "examples": examples}


def role_timeline(history: Iterable[Event]) -> dict[str, list[tuple[float, str]]]:
    """Each node's roles over time, from the monitor's `role` events."""
    roles: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for event in history:
        if event.get("type") == "monitor" and event.get("f") == "role":
            roles[str(event.get("node"))].append((float(event.get("time", 0.0)), str(event.get("role"))))
    return roles


def _role_at(timeline: list[tuple[float, str]], time: float) -> str:
    role = "unknown"
    for when, what in timeline:
        if when > time:
            break
        role = what
    return role


def check_vanished_reads(ops: Sequence[Op], finals: dict[str, Final],
                         roles: dict[str, list[tuple[float, str]]]) -> dict[str, Any]:
    """Entries a reader was served that no node holds at the end, by node, and how many of
    them were served by a replica (by the monitor's view of the node's role at the time)."""
    anywhere = {value for f in finals.values() for _, value in (f.entries or [])}
    by_node: dict[str, set[str]] = defaultdict(set)
    on_replica: set[str] = set()
    for op in ops:
        if op.f == "xread" and op.outcome == "ok" and op.completion is not None:
            node = str(op.get("node"))
            for _, value in _entries(op.completion):
                if value not in anywhere:
                    by_node[node].add(value)
                    if _role_at(roles.get(node, []), op.end).startswith("slave"):
                        on_replica.add(value)
    every = set().union(*by_node.values()) if by_node else set()
    return {"count": len(every), "read_on_a_replica": len(on_replica),
            "by_node": {n: len(v) for n, v in sorted(by_node.items())}, "values": _examples(every)}


def check_groups(ops: Sequence[Op], history: Sequence[Event], reference: Final | None,
                 finals: dict[str, Final]) -> dict[str, Any]:
    """Consumer-group anomalies:
    - an entry delivered again after its XACK succeeded (a failover rolled the group back), and
      among them those whose XACK was made durable: the consumer's `WAIT` for a majority after
      it (a `wait` operation naming the IDs it covers, on the same connection) met its target;
    - an entry written durably (WAIT for a majority met) and present at the end, never
      delivered; needs the consumers' final drain (a `meta` `drained` event per consumer the
      run names), without which the count is reported but not held against the run;
    - group state (last-delivered-id, entries-read, the PEL) that differs between nodes at the end."""
    # An XACK names an ID; which entry it acknowledged is the one its consumer was last
    # delivered under that ID (after a failover one ID can name two entries, on two nodes).
    entries_of: dict[tuple[str, str], str] = {}  # (process, id) -> value
    acked_at: dict[tuple[str, str], float] = {}
    durable_ack_at: dict[tuple[str, str], float] = {}
    deliveries_seen: list[tuple[float, str, str]] = []
    for op in sorted(ops, key=lambda o: o.end):
        process = str(op.invoke.get("process"))
        if op.outcome != "ok" or op.completion is None:
            continue
        if op.f in ("xreadgroup", "xautoclaim"):
            for entry_id, value in _entries(op.completion):
                entries_of[(process, entry_id)] = value
                deliveries_seen.append((op.start, entry_id, value))
        elif op.f == "xack" and int(op.get("count", 0)) >= 1:
            entry_id = str(op.invoke.get("id"))
            acked = entries_of.get((process, entry_id))
            if acked is not None:
                acked_at.setdefault((entry_id, acked), op.end)
        elif op.f == "wait" and _wait_met(op):
            for waited in op.invoke.get("ids") or []:
                acked = entries_of.get((process, str(waited)))
                if acked is not None:
                    durable_ack_at.setdefault((str(waited), acked), op.end)
    delivered: set[str] = set()
    redelivered: dict[str, float] = {}
    durable_redelivered: dict[str, float] = {}
    deliveries = 0
    for start, entry_id, value in deliveries_seen:
        deliveries += 1
        delivered.add(value)
        key = (entry_id, value)
        if key in acked_at and start > acked_at[key]:
            redelivered.setdefault(f"{entry_id}:{value}", start)
        if key in durable_ack_at and start > durable_ack_at[key]:
            durable_redelivered.setdefault(f"{entry_id}:{value}", start)
    durable = {str(op.invoke.get("value")) for op in ops
               if op.f == "xadd" and _wait_met(op) and op.invoke.get("mode") == "waitmaj"}
    final_values = [value for _, value in (reference.entries or [])] if reference is not None else []
    never = [v for v in final_values if v in durable and v not in delivered]
    undelivered = sum(v not in delivered for v in final_values)
    # Drained once every consumer the run's meta event names finished its drain.
    consumers = next((set(e.get("consumers") or []) for e in history if e.get("type") == "meta"
                      and e.get("f") == "run"), set())
    finished = {str(e.get("process")) for e in history if e.get("type") == "meta" and e.get("f") == "drained"}
    drained = bool(finished) and consumers <= finished
    divergent: dict[str, dict[str, int]] = {}
    if reference is not None and reference.groups is not None:
        for final in finals.values():
            if final is reference or final.groups is None:
                continue
            mine_pel, ref_pel = set(final.pending or ()), set(reference.pending or ())
            if final.groups != reference.groups or mine_pel != ref_pel:
                divergent[final.node] = {"group_state_differs": int(final.groups != reference.groups),
                                         "pel_missing": len(ref_pel - mine_pel), "pel_extra": len(mine_pel - ref_pel)}
    return {
        "deliveries": deliveries,
        "acks": len(acked_at),
        "durable_acks": len(durable_ack_at),
        "drained": drained,
        "redelivered_after_ack": {"count": len(redelivered), "values": _examples(redelivered)},
        "redelivered_after_durable_ack": {"count": len(durable_redelivered), "values": _examples(durable_redelivered)},
        "durable_never_delivered": {"count": len(never), "values": _examples(never)},
        "undelivered": undelivered,
        "pending_at_end": len(reference.pending or ()) if reference is not None else None,
        "divergent_group_state": divergent,
    }


def check_divergence(reference: Final | None, finals: dict[str, Final]) -> dict[str, Any]:
    """Nodes whose final state is not the reference's, with how many entries they lack or add."""
    divergent: dict[str, dict[str, int]] = {}
    unreachable = sorted(f.node for f in finals.values() if f.entries is None)
    if reference is not None:
        ref = set(reference.entries or [])
        for final in finals.values():
            if final.entries is None or final is reference:
                continue
            mine = set(final.entries)
            if mine != ref:
                divergent[final.node] = {"missing": len(ref - mine), "extra": len(mine - ref)}
    return {"divergent": divergent, "unreachable": unreachable}


@dataclass(frozen=True)
class Fault:
    name: str
    start: float
    stop: float | None


def faults_of(history: Iterable[Event]) -> list[Fault]:
    """Nemesis start/stop pairs, matched by fault name (a fault still on at the end has no stop)."""
    starts: dict[str, float] = {}
    faults: list[Fault] = []
    for event in history:
        if event.get("type") != "nemesis":
            continue
        name = str(event.get("name"))
        if event.get("f") == "start":
            starts[name] = float(event["time"])
        elif event.get("f") == "stop" and name in starts:
            faults.append(Fault(name, starts.pop(name), float(event["time"])))
    faults.extend(Fault(name, start, None) for name, start in starts.items())
    faults.sort(key=lambda f: f.start)
    return faults


def _fault_of(time: float, faults: Sequence[Fault]) -> Fault | None:
    """The latest fault that started at or before `time`."""
    found = None
    for fault in faults:
        if fault.start <= time:
            found = fault
    return found


def check_time(ops: Sequence[Op], lost: Sequence[Op], faults: Sequence[Fault],
               roles: dict[str, list[tuple[float, str]]]) -> dict[str, Any]:
    """Loss windows per fault, failover time and unavailability.

    A lost write is put on the latest fault that started before it was acknowledged. Per
    fault, from its start: `promoted_s` until the monitor saw another node become primary,
    `failover_s` until the first write acknowledged by a node other than the one that
    acknowledged the last write before the fault (clients may keep writing to the old primary
    long after a promotion: the difference is what they wrote there); both searched up to the
    next fault's start. Unavailability counts the whole seconds with no acknowledged write
    between the first write and the last, and the longest gap between two acknowledged writes."""
    writes = [op for op in ops if op.f == "xadd"]
    oks = sorted((op for op in writes if op.outcome == "ok"), key=lambda op: op.end)
    windows = []
    groups: dict[str | None, list[Op]] = defaultdict(list)
    for op in lost:
        fault = _fault_of(op.end, faults)
        groups[fault.name if fault else None].append(op)
    for key in [*(f.name for f in faults), None]:
        members = groups.get(key, [])
        fault = next((f for f in faults if f.name == key), None)
        if key is None and not members:
            continue
        origin = fault.start if fault else 0.0
        windows.append({
            "fault": key or "(before any fault)",
            "lost": len(members),
            "from_s": round(min(op.start for op in members) - origin, 3) if members else None,
            "to_s": round(max(op.end for op in members) - origin, 3) if members else None,
        })
    per_fault = []
    for i, fault in enumerate(faults):
        horizon = faults[i + 1].start if i + 1 < len(faults) else float("inf")
        before = [op for op in oks if op.end <= fault.start]
        primary = before[-1].get("node") if before else None
        after = [op for op in oks if fault.start < op.end < horizon]
        switched = next((op for op in after if op.get("node") != primary), None)
        promotions = [when for node, timeline in roles.items() if node != primary
                      for when, role in timeline if role == "master" and fault.start <= when < horizon]
        gaps = _gaps([fault.start, *(op.end for op in after)])
        per_fault.append({
            "fault": fault.name,
            "start": round(fault.start, 3),
            "stop": round(fault.stop, 3) if fault.stop is not None else None,
            "primary_before": primary,
            "promoted_s": round(min(promotions) - fault.start, 3) if promotions else None,
            "failover_s": round(switched.end - fault.start, 3) if switched else None,
            "new_primary": switched.get("node") if switched else None,
            "first_ok_after_s": round(after[0].end - fault.start, 3) if after else None,
            "longest_gap_s": round(max(gaps), 3) if gaps else None,
        })
    unavailable = 0
    longest = 0.0
    completed = [op for op in writes if op.completion is not None]
    if completed:
        begin = min(op.start for op in writes)
        finish = max(op.end for op in completed)
        ok_seconds = {int(op.end - begin) for op in oks}
        unavailable = sum(1 for s in range(int(finish - begin) + 1) if s not in ok_seconds)
        longest = max(_gaps([begin, *(op.end for op in oks), finish]), default=0.0)
    return {
        "loss_windows": windows,
        "faults": per_fault,
        "unavailability": {"seconds_without_ok_write": unavailable, "longest_gap_s": round(longest, 3)},
    }


def _gaps(times: Sequence[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:])]


def nemesis_record(history: Sequence[Event]) -> dict[str, Any]:
    """How many faults were applied, and every fault (or scenario setting) the target could not
    apply, with why: on a user's deployment a scenario may run only in part, and its result
    must say so."""
    nemesis = [e for e in history if e.get("type") == "nemesis"]
    return {
        "faults_applied": sum(e.get("f") == "start" for e in nemesis),
        "not_applied": [{"name": e.get("name"), "fault": e.get("fault"), "why": e.get("why"),
                         "time": round(float(e.get("time", 0.0)), 3)} for e in nemesis if e.get("f") == "not-applied"],
    }


def sentinel_events(history: Sequence[Event]) -> dict[str, Any]:
    """What the sentinels reported that explains a run: promotions announced, elections that
    split, and TILT (a sentinel whose timer jumped by more than 2 s: its process was starved
    of CPU; it then takes no action for 30 s, so the run measured the machine, not Sentinel)."""
    monitor = [e for e in history if e.get("type") == "monitor"]
    return {
        "switch_master": sum(e.get("f") == "+switch-master" for e in monitor),
        "elections_split": sum(e.get("f") == "-failover-abort-not-elected" for e in monitor),
        "tilt": sorted(round(float(e.get("time", 0.0)), 3) for e in monitor if e.get("f") == "+tilt"),
    }


def check(history: Sequence[Event]) -> dict[str, Any]:
    """Every check over one history; `valid` is true when no anomaly of any kind was found
    (Redis + Sentinel is expected to be invalid under faults: the counts are the result)."""
    ops = pair_ops(history)
    finals = finals_of(history)
    reference, why = reference_final(finals)
    writes = check_writes(ops, reference, finals)
    lost_ops: list[Op] = writes.pop("lost_ops")
    values = check_values(ops, finals)
    order = check_order(ops, finals)
    vanished = check_vanished_reads(ops, finals, role_timeline(history))
    groups = check_groups(ops, history, reference, finals)
    divergence = check_divergence(reference, finals)
    g2 = check_g2(ops, history)
    roles = role_timeline(history)
    timing = check_time(ops, lost_ops, faults_of(history), roles)
    anomalies = {
        "lost": writes["lost"]["acked"],
        "failed_but_present": writes["failed_but_present"]["count"],
        "duplicated": values["duplicated"]["count"],
        "unexpected": values["unexpected"]["count"],
        "id_conflicts": values["id_conflicts"]["count"],
        "value_moved": values["value_moved"]["count"],
        "out_of_order": order["count"],
        "vanished_reads": vanished["count"],
        "redelivered_after_ack": groups["redelivered_after_ack"]["count"],
        "redelivered_after_durable_ack": groups["redelivered_after_durable_ack"]["count"],
        "durable_never_delivered": groups["durable_never_delivered"]["count"] if groups["drained"] else 0,
        "divergent_group_state": len(groups["divergent_group_state"]),
        "divergent_nodes": len(divergence["divergent"]),
        "unreachable_nodes": len(divergence["unreachable"]),
        "not_settled": int(any(e.get("type") == "meta" and e.get("f") == "not-settled" for e in history)),
        "no_reference": int(reference is None),
        "lost_wait_majority": writes["lost"]["wait_majority_acked"],
        "g2": g2["count"],
    }
    broken = sorted(k for k in SAFETY if anomalies[k])
    return {
        "valid": not any(anomalies.values()),
        "safe": not broken,
        "unsafe_because": broken,
        "anomalies": anomalies,
        "reference": {"node": reference.node if reference else None, "why": why},
        "writes": writes,
        "values": values,
        "order": order,
        "vanished_reads": vanished,
        "groups": groups,
        "g2": g2,
        "nodes": divergence,
        "sentinels": sentinel_events(history),
        **nemesis_record(history),
        **timing,
    }
