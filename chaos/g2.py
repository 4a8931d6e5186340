"""The G2 checker: no old primary acknowledges after a newer promotion (docs/safety.md, *Fenced
mode*). A pure function over a history, like every checker (`checker` calls it).

Every acknowledged operation carries the node that answered it (`node`). The promotions come
from what the lab observed: a node the monitor saw go from replica to primary (ROLE polled from
around the proxies), and the leader sentinel's `+promoted-slave` event, whichever came first
(`+switch-master` is left out: a sentinel that learns of a failover late from its peers reports
it late, which would look like a newer promotion of an older primary). Each promotion opens a newer epoch than every earlier one (an epoch has one leader
and only a newer failover promotes again); the first primary holds epoch 0. A node that
restarts and says it is primary again has not been promoted: it still holds the epoch it had.

A violation is an operation acknowledged by node X although another node Y was promoted before
X *decided* it, with no later promotion of X. When a primary decides is not observable; the
history brackets it: after the request was sent (`invoke`) and before the reply arrived. A
reply already decided and in flight when Y was promoted is allowed (safety.md's slack), so the
bound used is the earliest possible decision: the invoke (for a WAIT, the moment its XADD
reply arrived, `xadd_at`, which is when the WAIT was sent). Observing a promotion late only
makes the checker miss violations, never invent one; observing X's own re-promotion late could,
so a promotion of X up to `OBSERVATION_SLACK` after the acknowledgement still counts as X's.

What counts as acknowledged: an XADD that returned an ID; a WAIT that returned a count (a WAIT
that met its target or not: answering it at all is deciding; a producer's, after its XADD, or a
consumer's `wait` after its XACKs); an XACK that acknowledged an entry;
an XREADGROUP / XAUTOCLAIM that delivered entries (both write the group's state).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chaos.history import Event

OBSERVATION_SLACK = 1.0  # s: the monitor polls roles 4 times a second; sentinel events lag a little
MAX_EXAMPLES = 20


@dataclass(frozen=True)
class Promotion:
    node: str
    time: float  # when the lab first saw it
    source: str  # "role" (the monitor's poll) or the sentinel event


def promotions_of(history: Iterable[Event]) -> list[Promotion]:
    """Every promotion the lab saw, in time order, one per (node, newer epoch): several
    observations of the same promotion (the role poll, each sentinel's events) are one."""
    seen: list[Promotion] = []
    last_role: dict[str, str] = {}
    for event in history:
        if event.get("type") != "monitor":
            continue
        time = float(event.get("time", 0.0))
        f = event.get("f")
        node: str | None = None
        if f == "role":
            name, role = str(event.get("node")), str(event.get("role"))
            before = last_role.get(name)
            last_role[name] = role
            if role == "master" and before is not None and before.startswith("slave"):
                node = name
        elif f == "+promoted-slave":
            # "slave <name> <ip> <port> @ <service> <old primary ip> <port>", the addresses
            # replaced by member names by the monitor: the node is the word before "@"
            words = str(event.get("payload", "")).split()
            node = words[words.index("@") - 1] if "@" in words[1:] else None
        if node is None:
            continue
        # The same promotion seen again: the node was the newest promoted and nobody since.
        if seen and seen[-1].node == node:
            continue
        seen.append(Promotion(node, time, "role" if f == "role" else str(f)))
    return _collapse(seen)


def _collapse(seen: list[Promotion]) -> list[Promotion]:
    """A sentinel event reported after the role poll (or the other way round) for the same
    promotion, with another node's late report of an older one in between, would count the
    newer one twice; a node's promotion reported again within the observation slack is the
    same promotion."""
    out: list[Promotion] = []
    for promotion in seen:
        if any(p.node == promotion.node and promotion.time - p.time <= OBSERVATION_SLACK for p in out[-3:]):
            continue
        out.append(promotion)
    return out


def _decided_after(op: Any) -> list[tuple[str, float]]:
    """(what, the earliest moment the answering node can have decided it) for each thing the
    operation had acknowledged; empty when nothing was."""
    if op.outcome != "ok" or op.completion is None:
        return []
    f = op.f
    out: list[tuple[str, float]] = []
    if f == "xadd":
        out.append(("xadd", op.start))
        acks = op.get("acks")
        if int(op.invoke.get("wait", 0)) > 0 and isinstance(acks, int):
            out.append(("wait", float(op.get("xadd_at", op.start))))
    elif f == "wait" and isinstance(op.get("acks"), int):  # a consumer's WAIT after its XACKs
        out.append(("wait", op.start))
    elif f == "xack" and int(op.get("count", 0) or 0) >= 1:
        out.append(("xack", op.start))
    elif f in ("xreadgroup", "xautoclaim") and op.get("entries"):
        out.append((f, op.start))
    return out


def check_g2(ops: Sequence[Any], history: Sequence[Event]) -> dict[str, Any]:
    """Acknowledgements by a node after another node's newer promotion. `ops` are the
    checker's paired operations (`checker.Op`)."""
    promotions = promotions_of(history)
    by_node: dict[str, list[float]] = defaultdict(list)
    for p in promotions:
        by_node[p.node].append(p.time)
    violations: list[dict[str, Any]] = []
    kinds: dict[str, int] = defaultdict(int)
    nodes: dict[str, int] = defaultdict(int)
    for op in ops:
        for what, decided in _decided_after(op):
            node = str(op.get("node"))
            newer = [p for p in promotions if p.node != node and p.time < decided]
            if not newer:
                continue
            latest = newer[-1]
            # X promoted again after Y (seen up to the slack after the reply): X is the newer.
            if any(latest.time <= t <= op.end + OBSERVATION_SLACK for t in by_node.get(node, [])):
                continue
            kinds[what] += 1
            nodes[node] += 1
            violations.append({"f": what, "node": node, "process": op.invoke.get("process"),
                               "value": op.invoke.get("value", op.invoke.get("id")),
                               "decided_after": round(decided, 3), "acked_at": round(op.end, 3),
                               "promoted": latest.node, "promoted_at": round(latest.time, 3),
                               "after_promotion_s": round(decided - latest.time, 3)})
    violations.sort(key=lambda v: -v["after_promotion_s"])
    return {
        "count": len(violations),
        "by_kind": dict(sorted(kinds.items())),
        "by_node": dict(sorted(nodes.items())),
        "latest_after_promotion_s": violations[0]["after_promotion_s"] if violations else None,
        "promotions": [{"node": p.node, "time": round(p.time, 3), "seen_by": p.source} for p in promotions],
        "examples": violations[:MAX_EXAMPLES],
    }
