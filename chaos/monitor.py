"""The observer: what the cluster said about itself during a run, as `monitor` events.

- Every sentinel's event channels (PSUBSCRIBE *): `+switch-master`, `+sdown`, `+odown`,
  `+failover-end`, `+convert-to-slave`, ..., with the payload's addresses named (n1, s2).
- Every node's role, polled a few times a second from INFO replication, recorded when it
  changes (`role`: master / slave of X / down), with the epoch a fenced Rill node reports
  (`epoch`, and `leads_epoch` on a primary; absent elsewhere): the role/epoch timeline the
  report marks and the G2 checker reads.

It connects to each process's admin address (in the lab, its real address from the hub
namespace), around the proxies, so faults never blind it (a paused process just stops
answering).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import redis

from chaos.cluster import Cluster
from chaos.history import Event, Recorder

# Sentinel events worth a line in the history (hello traffic and the failover state machine's
# many intermediate steps are left out).
EVENTS = frozenset({"+switch-master", "+sdown", "-sdown", "+odown", "-odown", "+try-failover", "+elected-leader",
                    "+promoted-slave", "+failover-end", "+convert-to-slave", "+failover-end-for-timeout",
                    "-failover-abort-not-elected", "-failover-abort-no-good-slave", "+tilt", "-tilt",
                    # fenced mode's failover phases (`rill sentinel`), which the nemesis can aim at
                    "+failover-state-fence", "+fenced", "+failover-state-wait-lease", "+failover-state-select-slave",
                    "+selected-slave", "-failover-abort-fence-timeout",
                    # fenced mode's re-tenure of a primary whose replicas an aborted failover fenced
                    "+fenced-stranded", "+try-fenced-retenure", "+fenced-retenure", "+fenced-retenure-end",
                    "-failover-abort-retenure-timeout"})


class Monitor:
    def __init__(self, cluster: Cluster, rec: Recorder, poll_interval: float = 0.25) -> None:
        self.cluster = cluster
        self.rec = rec
        self.poll_interval = poll_interval
        self._stop = threading.Event()
        self._seen: list[Event] = []  # the sentinel events recorded so far, for `wait_for`
        self._changed = threading.Condition()
        self._threads = [threading.Thread(target=self._roles, name="roles", daemon=True)]
        for name in cluster.sentinels:
            self._threads.append(threading.Thread(target=self._events, args=(name,), name=f"events-{name}",
                                                  daemon=True))

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5.0)

    def events(self, names: frozenset[str], after: float) -> list[Event]:
        """The sentinel events called one of `names` recorded at or after run time `after`."""
        with self._changed:
            return [e for e in self._seen if e["f"] in names and float(e["time"]) >= after]

    def wait_for(self, names: frozenset[str], after: float, until: float, stop: Callable[[], bool]) -> Event | None:
        """The first sentinel event called one of `names` at or after run time `after`,
        waiting for it until run time `until` (None then, or when `stop()` says so): what a
        fault aimed at a failover phase starts on."""
        with self._changed:
            while True:
                found = next((e for e in self._seen if e["f"] in names and float(e["time"]) >= after), None)
                if found is not None or stop() or self.rec.now() >= until:
                    return found
                self._changed.wait(0.1)

    def _name(self, words: list[str]) -> list[str]:
        """The payload's `ip port` pairs replaced by member names where known."""
        out: list[str] = []
        i = 0
        while i < len(words):
            host, colon, port = words[i].rpartition(":")
            if colon and port.isdigit() and self.cluster.name_of(host, int(port)):  # Sentinel's "ip:port" names
                out.append(str(self.cluster.name_of(host, int(port))))
                i += 1
                continue
            if i + 1 < len(words) and words[i + 1].isdigit():
                name = self.cluster.name_of(words[i], int(words[i + 1]))
                if name:
                    out.append(name)
                    i += 2
                    continue
            out.append(words[i])
            i += 1
        return out

    def _events(self, sentinel: str) -> None:
        proc = self.cluster.sentinels[sentinel]
        while not self._stop.is_set():
            client = proc.admin(timeout=1.0)
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.psubscribe("*")
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if message and message.get("channel") in EVENTS:
                        words = self._name(str(message["data"]).split())
                        event = self.rec.record({"type": "monitor", "f": message["channel"], "sentinel": sentinel,
                                                 "payload": " ".join(words)})
                        with self._changed:
                            self._seen.append(event)
                            self._changed.notify_all()
            except (redis.RedisError, OSError):
                self._stop.wait(0.5)  # killed or paused: try again
            finally:
                pubsub.close()
                client.close()

    def _state(self, name: str) -> dict[str, object]:
        """A node's role (and epoch, where it reports one), from INFO replication."""
        proc = self.cluster.nodes[name]
        info = None if proc.paused or not proc.alive() else self.cluster.try_call(proc, lambda c: c.info("replication"))
        if not isinstance(info, dict) or "role" not in info:
            return {"role": "down"}
        state: dict[str, object] = {"role": str(info["role"])}
        if info["role"] == "slave":
            following = self.cluster.name_of(str(info.get("master_host")), int(info.get("master_port") or 0))
            state["role"] = f"slave of {following}"
        for field in ("epoch", "leads_epoch"):
            if field in info:
                state[field] = int(info[field])
        return state

    def _roles(self) -> None:
        known: dict[str, dict[str, object]] = {}
        while not self._stop.is_set():
            for name in self.cluster.nodes:
                now = self._state(name)
                if known.get(name) != now:
                    known[name] = now
                    self.rec.record({"type": "monitor", "f": "role", "node": name, **now})
            self._stop.wait(self.poll_interval)
