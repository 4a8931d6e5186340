"""Counting the votes for a failover leader (sentinelGetLeader's tally).

Each sentinel votes once per epoch. A leader needs an absolute majority of every sentinel this
one knows about (itself included: all ever seen since the last SENTINEL RESET, reachable or
not) and at least the master's quorum.
"""

from __future__ import annotations

from collections.abc import Iterable

from node.sentinel.instance import Instance


def tally(sentinels: Iterable[Instance], epoch: int) -> dict[str, int]:
    """Votes other sentinels reported for `epoch`, by run id, in the order first seen."""
    counts: dict[str, int] = {}
    for si in sentinels:
        if si.leader is not None and si.leader_epoch == epoch:
            counts[si.leader] = counts.get(si.leader, 0) + 1
    return counts


def most_voted(counts: dict[str, int]) -> str | None:
    """The run id with the most votes; the first one seen wins a tie (Redis iterates its
    dict and keeps the first strictly larger count)."""
    winner, best = None, 0
    for runid, votes in counts.items():
        if votes > best:
            winner, best = runid, votes
    return winner


def wins(votes: int, voters: int, quorum: int) -> bool:
    return votes >= voters // 2 + 1 and votes >= quorum
