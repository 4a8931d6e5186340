"""One sentinel's failure detection and failover as a pure state machine (Redis 7.2's
sentinel.c without its I/O), in parts behind one entry point (sentinel.py, `Sentinel.step`).

The shell feeds `step()` what it observed — timer ticks, connections established or lost,
replies, Pub/Sub messages, each with the time it happened — and the commands other sentinels
and clients send (`is_master_down_by_addr`, `receive_hello`, `failover`, …). The policy never
reads a clock, opens a socket or draws unseeded randomness; what it wants done comes back as
a list of actions (`messages.Action`): connect, send a command, close, publish an event,
rewrite the configuration file. Given the same inputs it takes the same decisions, which is
what lets tests run hundreds of seeded failovers over a simulated network in seconds.

The rules, as sentinel.c has them:

- every instance gets PING every second (or every down-after-milliseconds if shorter), INFO
  every 10 s (replicas every second while their master is ODOWN or failing over, or while
  they report their master link down), and a hello on `__sentinel__:hello` every 2 s;
- SDOWN: no valid PING reply for down-after-milliseconds (or a master that reports itself a
  replica for down-after + 2 INFO periods, or a rebooted master past
  master-reboot-down-after-period);
- ODOWN: SDOWN here plus enough sentinels answering IS-MASTER-DOWN-BY-ADDR with 1 (asked every
  second while SDOWN; an answer older than 5 s no longer counts) to reach the quorum;
- failover: a new epoch, a vote (one per epoch, persisted before it is answered), a leader with
  an absolute majority of all known sentinels and at least the quorum, then select a replica,
  promote it with a MULTI block, wait for INFO to show it master, re-point the other replicas
  `parallel-syncs` at a time, and switch our configuration to the new master; each step is
  bounded by failover-timeout and the next attempt waits twice that long;
- the new configuration spreads with its config epoch in hello messages: a sentinel adopts a
  master address announced with a higher config epoch than its own;
- a replica reporting itself master outside a failover (a returning old master) is turned back
  into a replica, and replicas following the wrong master are re-pointed, once our master
  looks sane;
- TILT: when the timer runs more than 2 s late, or the wall clock jumps back or by more than
  2 s between two runs, act on nothing for 30 s.

Time: every input carries the shell's monotonic clock (CLOCK_BOOTTIME, node/sentinel/clock.py),
and every duration is measured on it, so a wall-clock step changes no timer; ticks also carry
the wall clock, which only TILT and the dates shown in log lines read.

Fenced mode (per master, off by default) inserts two steps between the election and the
selection — fence a majority of the replicas at the failover's epoch, then wait out the old
primary's lease — and promotes the fenced replica with the highest (epoch, offset), at that
position; it refuses to fail over while what it knows of the replica set disagrees with what
the nodes report (node/sentinel/fenced.py; docs/safety.md, *Fenced mode*).

The parts, each a type in its own module, lowest first (the import-linter contract
"the sentinel policy's parts are layers" in pyproject.toml keeps them so): state.py and
outbox.py, connections.py (the links), registry.py (the instances), discovery.py (INFO and
hello gossip), detection.py (SDOWN, ODOWN), voting.py (the election), transitions.py,
fencing.py and retenure.py (fenced mode), failover.py (the state machine), options.py
(`configure`), sentinel.py (`Sentinel`: `step`, the commands, the timer).
"""

from node.sentinel.fenced import lease_wait_ms
from node.sentinel.policy.sentinel import Sentinel
from node.sentinel.policy.state import DEFAULT_DRIFT_PERMILLE, SentinelError

__all__ = ["DEFAULT_DRIFT_PERMILLE", "Sentinel", "SentinelError", "lease_wait_ms"]
