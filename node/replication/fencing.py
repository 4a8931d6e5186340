"""Fenced mode on a node (docs/safety.md, *Fenced mode*): its fence state (`replication.Fence`,
kept durably in `dir` by node/replication/fence_store.py), its lease as a primary
(`replication.Lease`), and what the node's commands ask of them: FENCE, SLAVEOF NO ONE EPOCH,
the refusal of writes and WAITs without a lease, the INFO fields.

Off by default (`fenced-mode no`): then `enabled` is False, there is no fence and no lease,
and every method here leaves the node's behaviour Redis's.
"""

from __future__ import annotations

import logging
from typing import Final

from node.commands.reply import ReplyError
from node.config import Config
from node.replication.fence_store import FILENAME as FENCE_FILE
from node.replication.fence_store import FenceFileError, fence_path, load_fence
from node.replication.node_id import NodeIdError, load_node_id
from replication import Fence, Lease, Primary

log = logging.getLogger("rill.replication")

NO_LEASE: Final = "NOREPLICAS no majority lease: fenced mode refuses writes and WAIT here until a majority of the replica set acknowledges this primary"
NOT_FENCED: Final = "ERR FENCE needs fenced-mode yes"
EPOCH_NOT_FENCED: Final = "ERR SLAVEOF ... EPOCH needs fenced-mode yes"
NEEDS_AOF: Final = "an acknowledged write must be in the AOF of a majority (docs/safety.md, assumption 2)"
EPOCH_NEEDED: Final = (
    "ERR fenced mode promotes only with SLAVEOF NO ONE EPOCH <epoch> POSITION <log-epoch> <offset> (the sentinels' "
    "failover epoch and the position of this node's FENCE reply)"
)


class Fencing:
    """The node's fenced mode: `fence` and `lease` are None while it is off."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.enabled = config.get("fenced-mode") == "yes"
        self.fence: Fence | None = None
        self.lease: Lease | None = None
        # The durable identity a replica gives its primary and the sentinels (node_id.py).
        self.node_id: str | None = None
        if not self.enabled:
            return
        if config.get("appendonly") != "yes":
            raise OSError(f"fenced-mode yes needs appendonly yes: {NEEDS_AOF}")
        config.add_validator(self._check_setting)
        size = config.get_int("fenced-replica-set-size")
        if size < 1:
            # An OSError: the node reports it and does not start (node/main.py).
            raise OSError(
                "fenced-mode yes needs fenced-replica-set-size: the number of nodes of the replica set, this one included"
            )
        # With itself, ⌊N/2⌋ replicas make a majority of N.
        self.lease = Lease(size // 2, config.get_int("fenced-lease-milliseconds") / 1000)

    @staticmethod
    def _check_setting(name: str, value: str) -> str | None:
        """CONFIG SET: the AOF stays on (a replica acknowledges only what its AOF holds, and
        a node without one comes back empty from a crash)."""
        if name == "appendonly" and value != "yes":
            return "fenced mode needs appendonly yes: an acknowledged write must be in the AOF of a majority"
        return None

    def load(self, replid: str, end: int) -> None:
        """At startup, once the data is loaded: the promises made before, and the epoch
        history of the log that was loaded (`replid` up to `end`)."""
        if not self.enabled:
            return
        try:
            self.node_id = load_node_id(self.config.get("dir"))
            self.fence = load_fence(fence_path(self.config.get("dir")), replid, end)
        except (FenceFileError, NodeIdError) as exc:
            raise OSError(str(exc)) from None
        log.info("Fenced mode: node id %s, fence epoch %d, log epoch %d at offset %d, leading %s", self.node_id,
                 self.fence.fence_epoch, self.fence.log_epoch(end), end,
                 f"epoch {self.fence.tenure}" if self.fence.tenure >= 0 else "nothing")

    def start_as_primary(self) -> None:
        """The node starts as a primary (no `replicaof`): it keeps leading its epoch only if
        it was the one promoted in it and was not fenced since; otherwise it refuses writes
        until a failover promotes it or makes it a replica."""
        fence, lease = self.fence, self.lease
        if fence is None or lease is None:
            return
        if fence.leads():
            lease.restart(fence.epoch)
        else:
            log.warning("Fenced mode: starting as a primary that does not lead epoch %d (fence epoch %d, led %d): "
                        "writes are refused until a failover promotes this node", fence.epoch, fence.fence_epoch,
                        fence.tenure)

    def rename(self, replid: str) -> None:
        """The log continues under a new replication id (called before it takes it)."""
        if self.fence is not None and self.fence.replid != replid:
            self.fence.rename(replid)

    def check_promotion(self, epoch: int | None, at: int, position: tuple[int, int] | None) -> str | None:
        """Why SLAVEOF NO ONE [EPOCH epoch [POSITION log-epoch offset]] is refused now (None:
        it may go ahead). The position is where the sentinels' leader saw this node's log in
        its FENCE reply and chose it for: a node whose log is elsewhere now (it restarted from
        an older AOF since) may not hold what the choice relied on, and is refused."""
        fence = self.fence
        if fence is None:
            return EPOCH_NOT_FENCED if epoch is not None else None
        if epoch is None or position is None:
            return EPOCH_NEEDED
        reason = fence.may_promote(epoch, at)
        if reason is None and position != (fence.log_epoch(at), at):
            reason = (f"this node's log is at epoch {fence.log_epoch(at)} offset {at}, not at the position the "
                      f"failover relied on (epoch {position[0]} offset {position[1]})")
        return None if reason is None else f"STALEEPOCH promotion refused: {reason}"

    def promoted(self, epoch: int | None, at: int, replid: str) -> str | None:
        """The node is to become the primary of `epoch` from offset `at` under `replid`: the
        tenure is saved first; its lease starts empty. Returns the refusal when the save
        failed (the node must then stay as it is)."""
        fence, lease = self.fence, self.lease
        if fence is None or lease is None or epoch is None:
            return None
        try:
            fence.promote(epoch, at, replid)
        except OSError as exc:
            log.warning("Fenced mode: promotion in epoch %d refused, %s could not be saved: %s", epoch, FENCE_FILE,
                        exc.strerror or exc)
            return f"ERR promotion refused: {_unsaved(exc)}"
        lease.restart(epoch)
        return None

    def stepped_down(self) -> None:
        """The node became a replica (made in memory even if the save fails: leading nothing
        is safe either way)."""
        if self.fence is None:
            return
        try:
            self.fence.step_down()
        except OSError as exc:
            log.warning("Fenced mode: %s could not be saved after stepping down (it leads nothing): %s", FENCE_FILE,
                        exc.strerror or exc)

    def fence_to(self, epoch: int, end: int) -> list[object] | ReplyError:
        """FENCE epoch: the promise rises (durably) to `epoch` if it is newer; the reply is
        [fence epoch, log epoch, offset, node id] (a sentinel counts only replies of its own
        epoch, one per node id)."""
        fence = self.fence
        assert fence is not None and self.node_id is not None
        try:
            news = fence.raise_to(epoch)
        except OSError as exc:
            log.warning("Fenced mode: FENCE %d refused, %s could not be saved: %s", epoch, FENCE_FILE,
                        exc.strerror or exc)
            return ReplyError(f"ERR FENCE refused: {_unsaved(exc)}")
        if news:
            log.warning("Fenced at epoch %d by FENCE: nothing older is followed or led any more", epoch)
        return [fence.fence_epoch, fence.log_epoch(end), end, self.node_id.encode()]

    def refusal(self, primary: Primary | None) -> str | None:
        """The error a write (or WAIT) gets on this primary now: without a lease, or once it
        was fenced by a newer epoch; None when it may acknowledge."""
        if self.fence is None or primary is None or primary.acknowledging():
            return None
        return NO_LEASE

    def info_fields(self, end: int, is_primary: bool) -> list[tuple[str, object]]:
        """Fenced mode's INFO replication fields (none when it is off)."""
        fence, lease = self.fence, self.lease
        if fence is None or lease is None:
            return []
        fields: list[tuple[str, object]] = [
            ("fenced_mode", "yes"),
            ("fenced_node_id", self.node_id),
            # What the sentinels check their view of the replica set against.
            ("fenced_replica_set_size", self.config.get_int("fenced-replica-set-size")),
            ("fenced_lease_milliseconds", self.config.get_int("fenced-lease-milliseconds")),
            ("fence_epoch", fence.fence_epoch),
            ("log_epoch", fence.log_epoch(end)),
            ("epoch", fence.epoch),
        ]
        if is_primary:
            leads = fence.leads()
            fields += [
                ("leads_epoch", int(leads)),
                ("lease_remaining_ms", int(lease.remaining() * 1000) if leads else 0),
            ]
        return fields


def _unsaved(exc: OSError) -> str:
    return f"cannot save {FENCE_FILE} ({exc.strerror or exc}): the promise is not made"
