"""Whose log this is: the replication ids of a node's history (Redis's PSYNC2 identity).

`replid` names the current history; after a promotion (or when a replica adopts its primary's
new id) the previous id is kept as `replid2`, valid up to `second_offset`, the offset at which
the histories split. One `History` is shared by everything that records the same log (the
node's effect log, its backlog, its AOF), so a change of id is seen by all of them at once
instead of being copied from one to the other.
"""

from __future__ import annotations

import re
import secrets

NO_REPLID = "0" * 40  # Redis's replid2 when there is no previous history
_REPLID = re.compile(r"[0-9a-f]{40}\Z")


def new_replid() -> str:
    """A fresh replication id: 40 random hex characters, like Redis's."""
    return secrets.token_hex(20)


def is_replid(value: str) -> bool:
    return _REPLID.match(value) is not None


class History:
    """The replication ids of one log; `second_offset` is -1 when there is no replid2."""

    __slots__ = ("replid", "replid2", "second_offset")

    def __init__(self, replid: str | None = None, replid2: str = NO_REPLID, second_offset: int = -1) -> None:
        replid = replid if replid is not None else new_replid()
        _check_ids(replid, replid2, second_offset)
        self.replid = replid
        self.replid2 = replid2
        self.second_offset = second_offset

    def shift(self, at: int, new: str | None = None) -> None:
        """A new history starts at offset `at`; the current id stays valid as replid2 up to
        there (Redis's shiftReplicationId)."""
        replid = new if new is not None else new_replid()
        _check_ids(replid, self.replid, at)
        self.replid2 = self.replid
        self.second_offset = at
        self.replid = replid

    def restart(self, replid: str) -> None:
        """The history is `replid`'s from now on, with no previous one (a full sync)."""
        _check_ids(replid, NO_REPLID, -1)
        self.replid = replid
        self.replid2 = NO_REPLID
        self.second_offset = -1

    def restore(self, replid: str, replid2: str, second_offset: int) -> None:
        """The ids a node recorded on disk (its AOF or snapshot); a replid2 without a switch
        offset, or a switch offset without a replid2, means none."""
        if second_offset < 0 or replid2 == NO_REPLID:
            replid2, second_offset = NO_REPLID, -1
        _check_ids(replid, replid2, second_offset)
        self.replid = replid
        self.replid2 = replid2
        self.second_offset = second_offset


def _check_ids(replid: str, replid2: str, second_offset: int) -> None:
    if not is_replid(replid) or not is_replid(replid2):
        raise ValueError("replid must be 40 lowercase hex characters")
    if (replid2 == NO_REPLID) != (second_offset == -1) or second_offset < -1:
        raise ValueError("replid2 and second_offset must be both unset, or a replid and an offset")
