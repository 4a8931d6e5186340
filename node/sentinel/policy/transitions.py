"""The changes of a master's failover state that every failover step makes: starting one at
a new epoch, moving to the next state, and aborting (only before the promoted replica
accepted its role). Fenced mode's steps (fencing.py, retenure.py) and the failover
(failover.py) share them."""

from __future__ import annotations

from node.sentinel.fenced import forget_fencing
from node.sentinel.instance import (
    FAILOVER_IN_PROGRESS,
    FAILOVER_NONE,
    FAILOVER_WAIT_PROMOTION,
    FAILOVER_WAIT_RETENURE,
    FAILOVER_WAIT_START,
    FORCE_FAILOVER,
    PROMOTED,
    Instance,
)
from node.sentinel.messages import WARNING
from node.sentinel.policy.outbox import Outbox
from node.sentinel.policy.state import State
from node.sentinel.timings import MAX_DESYNC


def start_failover(state: State, outbox: Outbox, master: Instance, *, retenure: bool = False) -> None:
    """A failover (or re-tenure) of `master` at a new epoch, starting after a random delay."""
    master.failover_state = FAILOVER_WAIT_START
    master.flags |= FAILOVER_IN_PROGRESS
    master.retenure = retenure
    state.current_epoch += 1
    master.failover_epoch = state.current_epoch
    outbox.event(WARNING, "+new-epoch", master, str(state.current_epoch), describe=False)
    outbox.event(WARNING, "+try-fenced-retenure" if retenure else "+try-failover", master, "")
    master.failover_start_time = state.now + state.rng.randrange(MAX_DESYNC)
    master.failover_state_change_time = state.now


def set_state(state: State, master: Instance, failover_state: int) -> None:
    master.failover_state = failover_state
    master.failover_state_change_time = state.now


def abort_failover(state: State, master: Instance) -> None:
    """Only before the promoted replica accepted its role; afterwards a failover runs to
    its end (possibly by timeout)."""
    assert master.flags & FAILOVER_IN_PROGRESS and master.failover_state in (
        *range(FAILOVER_WAIT_PROMOTION + 1), FAILOVER_WAIT_RETENURE)
    master.flags &= ~(FAILOVER_IN_PROGRESS | FORCE_FAILOVER)
    set_state(state, master, FAILOVER_NONE)
    forget_fencing(master)
    if master.promoted_slave is not None:
        master.promoted_slave.flags &= ~PROMOTED
        master.promoted_slave = None
