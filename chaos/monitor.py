"""The observer: what the cluster said about itself during a run, as `monitor` events.

- Every sentinel's event channels (PSUBSCRIBE *): `+switch-master`, `+sdown`, `+odown`,
  `+failover-end`, `+convert-to-slave`, ..., with the payload's addresses named (n1, s2).
- Every node's ROLE, polled a few times a second, recorded when it changes (`role`:
  master / slave / down), which is what the report marks as role changes.

It connects to real addresses from the hub namespace, around the proxies, so faults never
blind it (a paused process just stops answering).
"""

from __future__ import annotations

import threading

import redis

from chaos.cluster import Cluster
from chaos.history import Recorder

# Sentinel events worth a line in the history (hello traffic and the failover state machine's
# many intermediate steps are left out).
EVENTS = frozenset({"+switch-master", "+sdown", "-sdown", "+odown", "-odown", "+try-failover", "+elected-leader",
                    "+promoted-slave", "+failover-end", "+convert-to-slave", "+failover-end-for-timeout",
                    "-failover-abort-not-elected", "-failover-abort-no-good-slave", "+tilt", "-tilt"})


class Monitor:
    def __init__(self, cluster: Cluster, rec: Recorder, poll_interval: float = 0.25) -> None:
        self.cluster = cluster
        self.rec = rec
        self.poll_interval = poll_interval
        self._stop = threading.Event()
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

    def _name(self, words: list[str]) -> list[str]:
        """The payload's `ip port` pairs replaced by member names where known."""
        out: list[str] = []
        i = 0
        while i < len(words):
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
            self.cluster.lab.check_in_hub()
            client = redis.Redis(proc.member.real_ip, proc.member.ports[0], socket_timeout=1.0,
                                 socket_connect_timeout=0.5, decode_responses=True)
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.psubscribe("*")
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if message and message.get("channel") in EVENTS:
                        words = self._name(str(message["data"]).split())
                        self.rec.record({"type": "monitor", "f": message["channel"], "sentinel": sentinel,
                                         "payload": " ".join(words)})
            except (redis.RedisError, OSError):
                self._stop.wait(0.5)  # killed or paused: try again
            finally:
                pubsub.close()
                client.close()

    def _roles(self) -> None:
        known: dict[str, str] = {}
        while not self._stop.is_set():
            for name in self.cluster.nodes:
                role = self.cluster.role(name)
                now = "down" if role is None else str(role[0])
                if role is not None and role[0] == "slave":
                    following = self.cluster.name_of(str(role[1]), int(role[2]))
                    now = f"slave of {following}"
                if known.get(name) != now:
                    known[name] = now
                    self.rec.record({"type": "monitor", "f": "role", "node": name, "role": now})
            self._stop.wait(self.poll_interval)
