"""Fenced mode's epochs (docs/safety.md, *Fenced mode*): which primary's tenure each part of a
log comes from, the highest epoch a node promised to follow, and the rule that decides whether
a replica's log may continue from a primary's (Kafka's leader epochs, Raft's terms).

An epoch is a failover's number, handed out by the sentinels' election (one leader per
epoch). A log's **epoch history** lists where each epoch's bytes start: from `start` on, up to
the next entry's start, the log was written by the primary of that epoch (Kafka's leader-epoch
checkpoint). Before its first entry a log is in epoch 0 (a cluster that never failed over in
fenced mode). A node's **position** is (log epoch, offset), compared lexicographically.

`Fence` is one node's state: its fence epoch (never decreasing), the history of its current
log, the epoch it leads as a primary (its tenure), and the histories of its recent logs by
replication id, so a node restarting from whichever log its disk holds knows that log's
epochs. Whoever changes it calls `save` before relying on the change (the node makes it
durable: a promise must survive a crash).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# How many logs' histories a node remembers by replication id: its current log's, and those a
# restart might still load (an AOF not yet rewritten after a full sync or a switch).
HISTORIES_KEPT = 16

NO_TENURE = -1  # the node does not lead: it is, or was last, a replica


@dataclass(frozen=True, slots=True)
class EpochStart:
    """The bytes of a log from `start` on were written by the primary of `epoch`."""

    epoch: int
    start: int


class EpochHistory:
    """An immutable epoch history: epochs strictly increasing, starts non-decreasing."""

    __slots__ = ("entries",)

    def __init__(self, entries: Iterable[EpochStart] = ()) -> None:
        self.entries: tuple[EpochStart, ...] = tuple(entries)
        previous: EpochStart | None = None
        for entry in self.entries:
            if entry.epoch <= 0 or entry.start < 0:
                raise ValueError(f"bad epoch history entry {entry}: epochs are positive, offsets not negative")
            if previous is not None and (entry.epoch <= previous.epoch or entry.start < previous.start):
                raise ValueError(f"epoch history out of order at {entry} after {previous}")
            previous = entry

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EpochHistory) and other.entries == self.entries

    def __hash__(self) -> int:
        return hash(self.entries)

    def __repr__(self) -> str:
        return "EpochHistory(%s)" % ", ".join(f"{e.epoch}@{e.start}" for e in self.entries)

    @property
    def last_epoch(self) -> int:
        """The epoch the log continues in: its newest entry's (0 without one)."""
        return self.entries[-1].epoch if self.entries else 0

    def log_epoch(self, end: int) -> int:
        """The epoch of a log of this history that ends at `end`: the newest entry starting at
        or before it. A primary's own entry starts at the offset it was promoted at, so its
        log is in its epoch from the promotion on, before its first write."""
        epoch = 0
        for entry in self.entries:
            if entry.start > end:
                break
            epoch = entry.epoch
        return epoch

    def end_of(self, epoch: int, end: int) -> int | None:
        """Where `epoch`'s part of this log (which ends at `end`) ends: the next epoch's start,
        or `end` for the last one; None when the epoch is not in this history (a log in that
        epoch diverged from this one). Kafka's OffsetsForLeaderEpoch."""
        if epoch == 0:
            return self.entries[0].start if self.entries else end
        for index, entry in enumerate(self.entries):
            if entry.epoch == epoch:
                return self.entries[index + 1].start if index + 1 < len(self.entries) else end
        return None

    def can_continue(self, epoch: int, offset: int, end: int) -> bool:
        """Whether a log of position (epoch, offset) is a prefix of this one as far as epochs
        tell (Kafka's truncation rule; the replication ids' PSYNC rule is checked besides):
        its epoch is one of ours and its end is not past where that epoch ends here."""
        epoch_end = self.end_of(epoch, end)
        return epoch_end is not None and offset <= epoch_end

    def truncated(self, end: int) -> EpochHistory:
        """The entries a log ending at `end` holds (a restart that loaded less than was
        written; entries starting exactly at `end` stay: a promotion with no write yet)."""
        return EpochHistory(e for e in self.entries if e.start <= end)

    def promoted(self, epoch: int, at: int) -> EpochHistory:
        """This history continued by a new tenure of `epoch` from offset `at`."""
        return EpochHistory((*self.entries, EpochStart(epoch, at)))

    def pairs(self) -> list[tuple[int, int]]:
        return [(e.epoch, e.start) for e in self.entries]

    @staticmethod
    def from_pairs(pairs: Iterable[tuple[int, int]]) -> EpochHistory:
        return EpochHistory(EpochStart(int(epoch), int(start)) for epoch, start in pairs)


class Fence:
    """One node's fenced-mode state (docs/safety.md, *Fenced mode*).

    `fence_epoch` never decreases. `history` is the epoch history of the log named `replid`.
    `tenure` is the epoch this node was promoted in, while it is a primary (`NO_TENURE`
    otherwise; 0 for a primary of a cluster that never failed over in fenced mode). `save` is
    called with the state a change makes, before it is made, and must make it durable before
    returning (or raise: the change is not made)."""

    def __init__(
        self,
        replid: str,
        *,
        fence_epoch: int = 0,
        tenure: int = 0,
        histories: dict[str, EpochHistory] | None = None,
        save: Callable[[Fence], None] | None = None,
    ) -> None:
        if fence_epoch < 0:
            raise ValueError("fence epoch must not be negative")
        self.fence_epoch = fence_epoch
        self.tenure = tenure
        # Newest first: the current log's history, then the logs before it.
        self.histories: dict[str, EpochHistory] = dict(histories or {})
        self.replid = replid
        self._save = save

    @property
    def history(self) -> EpochHistory:
        return self.histories.get(self.replid, EpochHistory())

    @property
    def epoch(self) -> int:
        """The epoch this node's log continues in: as a primary, the tenure it serves
        replicas under; as a replica, its primary's."""
        return self.history.last_epoch

    def log_epoch(self, end: int) -> int:
        return self.history.log_epoch(end)

    def leads(self) -> bool:
        """Whether this node may act as the primary of its epoch: it was promoted in it (or
        the cluster never failed over) and was not fenced by a newer one since."""
        return self.tenure == self.epoch and self.fence_epoch <= self.epoch

    # -- changes: saved before they are made -------------------------------------------------
    #
    # A promise is relied upon as soon as it is made (a FENCE reply, an acknowledgement to a
    # new primary, a promotion), so it is on disk first: a change whose save fails raises
    # (OSError from the node's file) and leaves this state as it was.

    def raise_to(self, epoch: int) -> bool:
        """Promise to follow nothing older than `epoch`; returns whether it was news."""
        if epoch <= self.fence_epoch:
            return False
        self._commit(fence_epoch=epoch)
        return True

    def follow(self, epoch: int, replid: str, history: EpochHistory) -> None:
        """This node's log is now `replid`'s, of the given history, written under a primary of
        `epoch` (at least the fence epoch: the caller refused older ones): the promise rises
        to it, and the node leads nothing."""
        if epoch < self.fence_epoch:
            raise ValueError(f"epoch {epoch} is older than the fence epoch {self.fence_epoch}")
        if (epoch, NO_TENURE, replid, history) == (self.fence_epoch, self.tenure, self.replid, self.history):
            return  # a reconnection to the same primary: nothing new to save
        self._commit(fence_epoch=epoch, tenure=NO_TENURE, log=(replid, history))

    def step_down(self) -> None:
        """The node became a replica: it leads nothing until promoted again. Withdrawing a
        promise is the one change made in memory even when its save fails (raised after): a
        node that leads nothing is safe either way, and its file is saved at the next change."""
        if self.tenure != NO_TENURE:
            self.tenure = NO_TENURE
            self._saved()

    def promote(self, epoch: int, at: int, replid: str) -> None:
        """The node becomes the primary of `epoch` from offset `at`, under the new id
        `replid`. The caller checked `may_promote`."""
        reason = self.may_promote(epoch, at)
        if reason is not None:
            raise ValueError(reason)
        history = self.history.truncated(at).promoted(epoch, at)
        self._commit(fence_epoch=epoch, tenure=epoch, log=(replid, history))

    def may_promote(self, epoch: int, at: int) -> str | None:
        """Why a promotion in `epoch` with the log at `at` is refused (None: allowed): only
        by the failover that fenced this node or a newer one, and never twice per epoch."""
        if epoch < self.fence_epoch:
            return f"epoch {epoch} is older than this node's fence epoch {self.fence_epoch}"
        if self.log_epoch(at) >= epoch:
            return f"this node's log is already in epoch {self.log_epoch(at)}"
        return None

    def rename(self, replid: str) -> None:
        """The same log continues under a new replication id (a primary restarted from disk)."""
        self._commit(log=(replid, self.history))

    def restore(self, replid: str, end: int) -> None:
        """After loading a log named `replid` that ends at `end`: its history (whatever a crash
        left of it: entries past `end` dropped), empty when unknown."""
        self.replid = replid
        known = self.histories.get(replid)
        if known is not None:
            self.histories[replid] = known.truncated(end)

    def _commit(self, *, fence_epoch: int | None = None, tenure: int | None = None,
                log: tuple[str, EpochHistory] | None = None) -> None:
        """Save the state with these changes, then make them (nothing changes if the save
        raises). `log` is (replid, history): the log now current, remembered first."""
        changed = copy.copy(self)
        if fence_epoch is not None:
            changed.fence_epoch = fence_epoch
        if tenure is not None:
            changed.tenure = tenure
        if log is not None:
            replid, history = log
            histories = {replid: history}
            for other, kept in self.histories.items():
                if other != replid and len(histories) < HISTORIES_KEPT:
                    histories[other] = kept
            changed.histories = histories
            changed.replid = replid
        if self._save is not None:
            self._save(changed)
        self.fence_epoch, self.tenure = changed.fence_epoch, changed.tenure
        self.histories, self.replid = changed.histories, changed.replid

    def _saved(self) -> None:
        if self._save is not None:
            self._save(self)
