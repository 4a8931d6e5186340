"""Link faults through the members' toxiproxies (driven with toxiproxy-python), per directed
link (see `topology`): a blackhole (a partition: data stops, connections stay open), refused
connections, latency, a bandwidth cap, a stall (one direction stops passing data without
closing), and a flapping link.

Healing a blackhole or a stall also drops the connections that crossed it: toxiproxy's timeout
toxic *discards* what it holds, so a connection that lived through it would resume with bytes
missing from the middle of its stream (a real network delays them instead). Dropping it makes
the peers reconnect, as they would after a long real partition.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from toxiproxy.api import APIConsumer  # type: ignore[import-untyped]
from toxiproxy.server import Toxiproxy  # type: ignore[import-untyped]

from chaos.topology import TOXIPROXY_API_PORT, Lab, Link

# toxiproxy-python keeps the server's address in a class attribute: calls to the members'
# servers take turns.
_API_LOCK = threading.Lock()


@contextlib.contextmanager
def _server(lab: Lab, host: str) -> Iterator[Any]:
    lab.check_in_hub()
    with _API_LOCK:
        APIConsumer.host, APIConsumer.port = host, TOXIPROXY_API_PORT
        yield Toxiproxy()


class Links:
    """The proxies of a lab, addressed by directed link."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self._toxics: dict[tuple[str, str], str] = {}  # (proxy, toxic name) -> the member whose server has it

    def proxies(self, links: Sequence[Link]) -> list[tuple[str, str]]:
        """(member whose toxiproxy holds it, proxy name) of every proxy of these links."""
        out = []
        for link in links:
            for port in self.lab.members[link.dst].ports:
                out.append((link.src, self.lab.proxy_name(link, port)))
        return out

    def between(self, side_a: Sequence[str], side_b: Sequence[str]) -> list[Link]:
        """Every existing link from a member of one side to a member of the other, both ways."""
        existing = set(self.lab.links())
        pairs = [Link(a, b) for a in side_a for b in side_b] + [Link(b, a) for a in side_a for b in side_b]
        return [link for link in dict.fromkeys(pairs) if link in existing]  # once each, if the sides overlap

    def add_toxic(self, links: Sequence[Link], name: str, kind: str, attributes: dict[str, int],
                  streams: Sequence[str] = ("upstream", "downstream")) -> None:
        for member, proxy_name in self.proxies(links):
            with _server(self.lab, self.lab.members[member].real_ip) as server:
                proxy = server.get_proxy(proxy_name)
                for stream in streams:
                    toxic = f"{_safe(name)}-{stream}"
                    proxy.add_toxic(type=kind, name=toxic, stream=stream, attributes=attributes)
                    self._toxics[(proxy_name, toxic)] = member

    def remove_toxics(self, links: Sequence[Link], name: str, reset: bool) -> None:
        """Removes the toxics called `name` from these links; with `reset`, drops the
        connections through them (see the module docstring)."""
        for member, proxy_name in self.proxies(links):
            with _server(self.lab, self.lab.members[member].real_ip) as server:
                proxy = server.get_proxy(proxy_name)
                for key in [k for k in self._toxics if k[0] == proxy_name and k[1].startswith(f"{_safe(name)}-")]:
                    proxy.destroy_toxic(key[1])
                    del self._toxics[key]
                if reset:
                    proxy.disable()
                    proxy.enable()

    def set_enabled(self, links: Sequence[Link], enabled: bool) -> None:
        """A disabled proxy closes its connections and refuses new ones (connection refused)."""
        for member, proxy_name in self.proxies(links):
            with _server(self.lab, self.lab.members[member].real_ip) as server:
                proxy = server.get_proxy(proxy_name)
                if enabled:
                    proxy.enable()
                else:
                    proxy.disable()

    # -- the faults ------------------------------------------------------------------------

    def blackhole(self, links: Sequence[Link], name: str) -> None:
        """Nothing passes either way; connections stay open (toxiproxy's timeout toxic with
        timeout 0), so peers see silence, not an error, as in a real partition."""
        self.add_toxic(links, name, "timeout", {"timeout": 0})

    def stall(self, links: Sequence[Link], name: str, stream: str = "downstream") -> None:
        """One direction stops passing data without closing (the other still flows)."""
        self.add_toxic(links, name, "timeout", {"timeout": 0}, streams=(stream,))

    def latency(self, links: Sequence[Link], name: str, ms: int, jitter_ms: int) -> None:
        self.add_toxic(links, name, "latency", {"latency": ms, "jitter": jitter_ms})

    def bandwidth(self, links: Sequence[Link], name: str, kb_per_s: int) -> None:
        self.add_toxic(links, name, "bandwidth", {"rate": kb_per_s})

    def heal(self, links: Sequence[Link], name: str, reset: bool) -> None:
        self.remove_toxics(links, name, reset)

    def heal_all(self) -> None:
        """Removes every toxic (dropping the connections through them) and enables every proxy:
        the end of a run, before the final reads."""
        pending = {proxy for proxy, _ in self._toxics}
        for member in self.lab.members.values():
            with _server(self.lab, member.real_ip) as server:
                for proxy_name in pending:
                    proxy = server.get_proxy(proxy_name)
                    if proxy is not None:
                        proxy.disable()
                server.reset()  # every proxy enabled, every toxic removed
        self._toxics.clear()


def _safe(name: str) -> str:
    """A toxic name that survives a URL path (a fault's name has spaces and '#')."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


class Flapper:
    """A link that goes down and up every `period` seconds (connections refused while down),
    in a thread, until stopped. The schedule is fixed by the period, not by chance."""

    def __init__(self, links: Links, targets: Sequence[Link], period: float) -> None:
        self.links, self.targets, self.period = links, list(targets), period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flapper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        up = True
        while not self._stop.wait(self.period):
            up = not up
            self.links.set_enabled(self.targets, up)
        self.links.set_enabled(self.targets, True)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
