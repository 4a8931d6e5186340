"""The FAILOVER command on a primary: a planned switch to one of its replicas that loses no
acknowledged write (Redis 7.2's failoverCommand / updateFailoverStatus / abortFailover,
replication.c; docs/failover.md, *Planned failover*).

1. FAILOVER pauses writes (clients are postponed, node/server/pause.py) and refuses
   replicas' handshakes (`-NOMASTERLINK Can't SYNC while failing over`): `waiting-for-sync`.
2. Once the target (`TO host port`, or the first replica found) acknowledged the primary's
   whole log, or at the timeout with `FORCE`, the primary becomes the target's replica and
   its first handshake is a PSYNC FAILOVER (`Hello.failover`): `failover-in-progress`.
3. The target, if it follows this primary's history, promotes itself and answers the
   handshake; the old primary continues as its replica (partially: its log is the target's
   up to the switch) and the pause ends: the postponed writes then run on a replica and are
   refused with -READONLY. Refused (the target is a master, follows another history, ...):
   the old primary becomes a primary again (a new replication id, as Redis's abort does).

`FAILOVER ABORT`, and a timeout without FORCE while waiting, end it the same way. While it
runs REPLICAOF is refused. Fenced mode refuses FAILOVER: promotions there take an epoch from
the sentinels' election (SENTINEL FAILOVER), which a node cannot allocate on its own.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import TYPE_CHECKING, Any, Final, Protocol

from node.commands.args import parse_int
from node.commands.context import Session
from node.commands.reply import OK, CommandError
from node.server.pause import FAILOVER as PAUSE_PURPOSE
from node.server.pause import WRITE
from replication import ReplicationError
from replication.errors import LinkLost
from replication.registry import STATE_ONLINE

if TYPE_CHECKING:
    from node.replication.fencing import Fencing
    from node.server.server import Server
    from replication import Primary

log = logging.getLogger("rill.replication")

NO_FAILOVER: Final = "no-failover"
WAITING: Final = "waiting-for-sync"
IN_PROGRESS: Final = "failover-in-progress"

# How often a waiting failover checks its timeout (Redis runs replicationCron every 100 ms
# while failing over); acks are checked as they arrive.
_CHECK_PERIOD: Final = 0.1

NOT_IN_FENCED_MODE: Final = (
    "ERR FAILOVER is not available in fenced mode: use SENTINEL FAILOVER (a promotion needs an epoch from the "
    "sentinels' election)"
)
SYNC_REFUSED: Final = "NOMASTERLINK Can't SYNC while failing over"


class Replication(Protocol):
    """What FAILOVER uses of the node's replication side (node/replication/role.py's
    `ReplicationNode`, which builds it and alone changes the role)."""

    @property
    def server(self) -> Server: ...
    @property
    def primary(self) -> Primary | None: ...
    @property
    def fencing(self) -> Fencing: ...
    def flush(self) -> None: ...
    def end_offset(self) -> int: ...
    def promote(self, session: Session | None) -> Any: ...
    def become_replica_for_failover(self, host: str, port: int) -> None: ...


class Failover:
    """The node's FAILOVER state (`state` is INFO's master_failover_state)."""

    def __init__(self, repl: Replication) -> None:
        self.repl = repl
        self.state = NO_FAILOVER
        self.target: tuple[str, int] | None = None
        self.force = False
        self._end = math.inf  # time.monotonic() when the wait for the target times out
        self._timer: asyncio.TimerHandle | None = None

    @property
    def running(self) -> bool:
        return self.state != NO_FAILOVER

    def command(self, session: Session, argv: list[bytes]) -> Any:
        """FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]: argument checks and their
        order are failoverCommand's."""
        if len(argv) == 2 and argv[1].lower() == b"abort":
            if not self.running:
                raise CommandError("ERR No failover in progress.")
            self.abort("Failover manually aborted")
            return OK
        timeout_ms = 0
        force = False
        host: str | None = None
        port = 0
        j = 1
        while j < len(argv):
            word = argv[j].lower()
            if word == b"timeout" and j + 1 < len(argv) and timeout_ms == 0:
                timeout_ms = parse_int(argv[j + 1])
                if timeout_ms <= 0:
                    raise CommandError("ERR FAILOVER timeout must be greater than 0")
                j += 2
            elif word == b"to" and j + 2 < len(argv) and host is None:
                port = parse_int(argv[j + 2])
                host = argv[j + 1].decode("utf-8", "replace")
                j += 3
            elif word == b"force" and not force:
                force = True
                j += 1
            else:
                raise CommandError("ERR syntax error")
        repl = self.repl
        if self.running:
            raise CommandError("ERR FAILOVER already in progress.")
        if repl.server.role != "master":
            raise CommandError("ERR FAILOVER is not valid when server is a replica.")
        primary = repl.primary
        if primary is None or len(primary.registry) == 0:
            raise CommandError("ERR FAILOVER requires connected replicas.")
        if force and (not timeout_ms or host is None):
            raise CommandError("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
        if repl.fencing.enabled:
            raise CommandError(NOT_IN_FENCED_MODE)
        if host is not None:
            found = self._find(host, port)
            if found is None:
                raise CommandError("ERR FAILOVER target HOST and PORT is not a replica.")
            if found != STATE_ONLINE:
                raise CommandError("ERR FAILOVER target replica is not online.")
            self.target = (host, port)
            log.info("FAILOVER requested to %s:%d.", host, port)
        else:
            log.info("FAILOVER requested to any replica.")
        self._end = time.monotonic() + timeout_ms / 1000 if timeout_ms else math.inf
        self.force = force
        self.state = WAITING
        primary.refuse_syncs = SYNC_REFUSED
        repl.server.pause.pause(PAUSE_PURPOSE, math.inf, WRITE)
        # Fresh acks now rather than at the replicas' next periodic one.
        repl.flush()
        primary.request_acks()
        self._timer = asyncio.get_running_loop().call_later(_CHECK_PERIOD, self._tick)
        # Checked at the end of this event-loop turn, as Redis does in beforeSleep.
        asyncio.get_running_loop().call_soon(self.check)
        return OK

    def _find(self, host: str, port: int) -> str | None:
        """The state of the replica announced at host:port (findReplica), None if none is."""
        primary = self.repl.primary
        if primary is None:
            return None
        for replica in primary.registry.replicas():
            if replica.host.lower() == host.lower() and replica.port == port:
                return replica.state
        return None

    def _tick(self) -> None:
        self._timer = None
        if self.state == WAITING:
            self.check()
            if self.state == WAITING:
                self._timer = asyncio.get_running_loop().call_later(_CHECK_PERIOD, self._tick)

    def check(self) -> None:
        """updateFailoverStatus: while waiting, a timeout (a forced switch, or the abort) or a
        target that acknowledged the whole log (the switch)."""
        if self.state != WAITING:
            return
        repl = self.repl
        if time.monotonic() >= self._end:
            if self.force and self.target is not None:
                log.info("FAILOVER to %s:%d time out exceeded, failing over.", *self.target)
                self._hand_over(self.target)
            else:
                self.abort("Replica never caught up before timeout")
            return
        primary = repl.primary
        if primary is None:
            return
        end = repl.end_offset()
        for replica in primary.registry.replicas():
            if self.target is not None and (replica.host.lower(), replica.port) != (self.target[0].lower(), self.target[1]):
                continue
            if replica.offset == end:
                target = self.target or (replica.host, replica.port)
                log.info("Failover target %s:%d is synced, failing over.", *target)
                self._hand_over(target)
                return

    def _hand_over(self, target: tuple[str, int]) -> None:
        self.target = target
        self.state = IN_PROGRESS
        self.repl.become_replica_for_failover(*target)

    def handshake_done(self, error: ReplicationError | None) -> None:
        """How the old primary's handshake with the target ended: answered (the target is
        the primary now), or refused by it (Redis's "Failover target rejected psync
        request"). A connection that could not be made is retried, as Redis keeps trying."""
        if self.state != IN_PROGRESS:
            return
        if error is None:
            log.info("FAILOVER to %s:%d succeeded: this node is its replica now", *(self.target or ("?", 0)))
            self._clear()
        elif not isinstance(error, LinkLost):
            self.abort(f"Failover target rejected psync request: {error}")

    def abort(self, reason: str) -> None:
        """abortFailover: a primary again (if it already handed over), writes resume."""
        if not self.running:
            return
        if self.target is not None:
            log.info("FAILOVER to %s:%d aborted: %s", self.target[0], self.target[1], reason)
        else:
            log.info("FAILOVER to any replica aborted: %s", reason)
        handed_over = self.state == IN_PROGRESS
        self._clear()
        if handed_over:
            self.repl.promote(None)

    def _clear(self) -> None:
        """clearFailoverState: the pause ends (postponed commands run again)."""
        self.state = NO_FAILOVER
        self.target = None
        self.force = False
        self._end = math.inf
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        primary = self.repl.primary
        if primary is not None:
            primary.refuse_syncs = None
        self.repl.server.pause.unpause(PAUSE_PURPOSE)
