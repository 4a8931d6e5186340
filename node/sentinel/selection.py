"""Which replica a failover promotes (sentinelSelectSlave, compareSlavesForPromotion).

A replica is a candidate unless it is SDOWN/ODOWN or disconnected, its last valid PING reply
is older than 5 PING periods, its priority is 0, its INFO is older than 5 PING periods (3 INFO
periods while the master is not SDOWN, when INFO comes less often), or it reports its link to
the master down for longer than the master has been SDOWN plus 10 x down-after-milliseconds.
Candidates are ordered by lower priority, then larger replication offset, then smaller run id
(compared without case; an unknown run id sorts last).
"""

from __future__ import annotations

from node.sentinel.instance import O_DOWN, S_DOWN, Instance
from node.sentinel.timings import Timings


def exclusion(replica: Instance, master: Instance, now: int, timings: Timings) -> str | None:
    """Why `replica` cannot be promoted, or None if it can."""
    if replica.flags & (S_DOWN | O_DOWN):
        return "down"
    if replica.link.disconnected:
        return "disconnected"
    if now - replica.link.last_avail_time > timings.ping_period * 5:
        return "ping reply too old"
    if replica.slave_priority == 0:
        return "priority 0"
    if master.flags & S_DOWN:
        info_validity = timings.ping_period * 5
    else:
        info_validity = timings.info_period * 3
    if now - replica.info_refresh > info_validity:
        return "info too old"
    max_master_down = master.down_after_period * 10
    if master.flags & S_DOWN:
        max_master_down += now - master.s_down_since_time
    if replica.master_link_down_time > max_master_down:
        return "master link down too long"
    return None


def promotion_key(replica: Instance) -> tuple[int, int, int, str]:
    """Sorts the better candidate first."""
    runid = replica.runid
    return (replica.slave_priority, -replica.slave_repl_offset, 1 if runid is None else 0, (runid or "").lower())


def select_replica(master: Instance, now: int, timings: Timings) -> Instance | None:
    candidates = [r for r in master.slaves.values() if exclusion(r, master, now, timings) is None]
    if not candidates:
        return None
    return min(candidates, key=promotion_key)
