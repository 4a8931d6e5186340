"""Link faults through toxiproxy servers (driven with toxiproxy-python), per directed link (see
`topology`): a blackhole (a partition: data stops, connections stay open), refused
connections, latency, a bandwidth cap, a stall (one direction stops passing data without
closing), and a flapping link.

Which proxies carry a link is the network's business (`Network`): in the lab, the source's own
toxiproxy has one proxy per link and port, so any set of links can be cut; on a user's
deployment (`chaos.deployment`) one proxy in front of a node carries the links of many sources,
and a set of links that its proxies cannot separate from the links to keep raises
`NotApplicable` (the nemesis records the fault as not applied).

Healing a blackhole or a stall also drops the connections that crossed it: toxiproxy's timeout
toxic *discards* what it holds, so a connection that lived through it would resume with bytes
missing from the middle of its stream (a real network delays them instead). Dropping it makes
the peers reconnect, as they would after a long real partition.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, Protocol

import requests
from toxiproxy.api import APIConsumer  # type: ignore[import-untyped]
from toxiproxy.exceptions import NotFound  # type: ignore[import-untyped]
from toxiproxy.server import Toxiproxy  # type: ignore[import-untyped]

from chaos.topology import Link, Member, Proxy

# toxiproxy-python keeps the server's address in a class attribute: calls to the servers take
# turns.
_API_LOCK = threading.Lock()
API_TIMEOUT = 10.0


class NotApplicable(Exception):
    """A fault this cluster cannot apply as the scenario means it (its proxies do not separate
    the links to cut from the links to keep, no control over a process, no clock or disk
    control): the nemesis records it as not applied; it is not an error of the run."""


class Network(Protocol):
    """The members and the proxies between them, as `Links` needs them."""

    members: dict[str, Member]

    def links(self) -> list[Link]:
        """Every directed link the cluster can use."""
        ...

    def proxies(self, links: Sequence[Link], idle: Collection[str] = ()) -> list[Proxy]:
        """The proxies to act on to cut exactly these links (raises NotApplicable when that
        cannot be done). `idle`: members whose links to other nodes carry nothing now (a
        primary replicates from nobody), which may be cut or kept."""
        ...

    def own_servers(self) -> list[tuple[str, int]]:
        """The toxiproxy servers the lab started, which it may reset wholesale."""
        ...

    def describe(self, proxies: Sequence[Proxy]) -> str:
        """What a fault's record says about where it acted ("" where every link has its own)."""
        ...

    def check(self) -> None:
        """Refuses to go on when the proxies' APIs cannot be reached from here."""
        ...


def _call(api: tuple[str, int], method: str, path: str, body: dict[str, Any] | None = None) -> None:
    """One request to a toxiproxy server's API, without toxiproxy-python's shared address."""
    response = requests.request(method, f"http://{api[0]}:{api[1]}{path}", json=body, timeout=API_TIMEOUT)
    if response.status_code == 404:
        raise NotFound(response.content)
    response.raise_for_status()


def _on_each_server(net: Network, proxies: Sequence[Proxy], work: Callable[[Proxy], None]) -> None:
    """work(proxy) for every proxy: each server's proxies in turn, the servers at the same time.
    A partition is one moment, not a sweep: applied one request after the other (three per
    proxy, two proxies per link to a Rill node), a 29-link split took seconds on a loaded
    machine, the sentinels saw the primary down while its side's replicas still answered them,
    picked one of those and lost a failover-timeout and its retry on it."""
    by_server: dict[tuple[str, int], list[Proxy]] = {}
    for proxy in proxies:
        by_server.setdefault(proxy.api, []).append(proxy)
    errors: list[BaseException] = []

    def run(group: list[Proxy]) -> None:
        try:
            net.check()  # these threads inherit the namespace of the one that starts them
            for proxy in group:
                work(proxy)
        except Exception as exc:  # raised in the caller's thread below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(group,), daemon=True) for group in by_server.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


@contextlib.contextmanager
def _server(net: Network, api: tuple[str, int]) -> Iterator[Any]:
    net.check()
    with _API_LOCK:
        APIConsumer.host, APIConsumer.port = api
        yield Toxiproxy()


class Links:
    """The proxies of a network, addressed by directed link. What it changed is recorded, so
    that a fault heals by its name and `heal_all` undoes exactly what the lab did (on a user's
    deployment, nothing else is touched)."""

    def __init__(self, net: Network) -> None:
        self.net = net
        self._toxics: dict[tuple[Proxy, str], str] = {}  # (proxy, toxic name) -> the fault's name
        self._lock = threading.Lock()  # _toxics, written by the threads of several faults
        self._disabled: set[Proxy] = set()

    def between(self, side_a: Sequence[str], side_b: Sequence[str]) -> list[Link]:
        """Every existing link from a member of one side to a member of the other, both ways."""
        existing = set(self.net.links())
        pairs = [Link(a, b) for a in side_a for b in side_b] + [Link(b, a) for a in side_a for b in side_b]
        return [link for link in dict.fromkeys(pairs) if link in existing]  # once each, if the sides overlap

    def check(self, links: Sequence[Link], idle: Collection[str] = ()) -> None:
        """Raises NotApplicable unless these links can be cut (nothing is changed)."""
        self.net.proxies(links, idle)

    def add_toxic(self, links: Sequence[Link], name: str, kind: str, attributes: dict[str, int],
                  streams: Sequence[str] = ("upstream", "downstream"), idle: Collection[str] = ()) -> str:
        """Adds the toxic; returns where it acted, as `Network.describe` says."""
        proxies = self.net.proxies(links, idle)

        def poison(proxy: Proxy) -> None:
            for stream in streams:
                toxic = f"{_safe(name)}-{stream}"
                _call(proxy.api, "POST", f"/proxies/{proxy.name}/toxics",
                      {"name": toxic, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes})
                with self._lock:
                    self._toxics[(proxy, toxic)] = name
        _on_each_server(self.net, proxies, poison)
        return self.net.describe(proxies)

    def heal(self, name: str, reset: bool) -> None:
        """Removes the toxics the fault called `name` added; with `reset`, drops the connections
        through them (see the module docstring)."""
        with self._lock:
            mine = [key for key, fault in self._toxics.items() if fault == name]

        def cure(proxy: Proxy) -> None:
            for key in [k for k in mine if k[0] == proxy]:
                with contextlib.suppress(NotFound):  # gone already if heal_all got there first
                    _call(proxy.api, "DELETE", f"/proxies/{proxy.name}/toxics/{key[1]}")
                with self._lock:
                    self._toxics.pop(key, None)
            if reset:
                _call(proxy.api, "POST", f"/proxies/{proxy.name}", {"enabled": False})
                _call(proxy.api, "POST", f"/proxies/{proxy.name}", {"enabled": True})
        _on_each_server(self.net, list(dict.fromkeys(p for p, _ in mine)), cure)

    def set_enabled(self, links: Sequence[Link], enabled: bool, idle: Collection[str] = ()) -> None:
        """A disabled proxy closes its connections and refuses new ones (connection refused)."""
        for proxy in self.net.proxies(links, idle):
            with _server(self.net, proxy.api) as server:
                found = server.get_proxy(proxy.name)
                if enabled:
                    found.enable()
                    self._disabled.discard(proxy)
                else:
                    found.disable()
                    self._disabled.add(proxy)

    # -- the faults ------------------------------------------------------------------------

    def blackhole(self, links: Sequence[Link], name: str, idle: Collection[str] = ()) -> str:
        """Nothing passes either way; connections stay open (toxiproxy's timeout toxic with
        timeout 0), so peers see silence, not an error, as in a real partition."""
        return self.add_toxic(links, name, "timeout", {"timeout": 0}, idle=idle)

    def stall(self, links: Sequence[Link], name: str, stream: str = "downstream", idle: Collection[str] = ()) -> str:
        """One direction stops passing data without closing (the other still flows)."""
        return self.add_toxic(links, name, "timeout", {"timeout": 0}, streams=(stream,), idle=idle)

    def latency(self, links: Sequence[Link], name: str, ms: int, jitter_ms: int, idle: Collection[str] = ()) -> str:
        return self.add_toxic(links, name, "latency", {"latency": ms, "jitter": jitter_ms}, idle=idle)

    def bandwidth(self, links: Sequence[Link], name: str, kb_per_s: int, idle: Collection[str] = ()) -> str:
        return self.add_toxic(links, name, "bandwidth", {"rate": kb_per_s}, idle=idle)

    def heal_all(self) -> None:
        """Removes every toxic the lab added (dropping the connections through them) and enables
        every proxy it disabled: the end of a run, before the final reads. The lab's own
        servers are also reset wholesale."""
        with self._lock:
            touched = list(dict.fromkeys([*(p for p, _ in self._toxics), *self._disabled]))
            toxics = list(self._toxics)
        owned = set(self.net.own_servers())

        def restore(proxy: Proxy) -> None:
            if proxy.api not in owned:
                for _, toxic in [k for k in toxics if k[0] == proxy]:
                    # gone already if a fault still healing in its thread got there first
                    with contextlib.suppress(NotFound):
                        _call(proxy.api, "DELETE", f"/proxies/{proxy.name}/toxics/{toxic}")
            with contextlib.suppress(NotFound):  # a proxy the deployment no longer has
                _call(proxy.api, "POST", f"/proxies/{proxy.name}", {"enabled": False})
                _call(proxy.api, "POST", f"/proxies/{proxy.name}", {"enabled": True})
        _on_each_server(self.net, touched, restore)
        # every proxy enabled, every toxic removed
        _on_each_server(self.net, [Proxy(api, "") for api in owned], lambda server: _call(server.api, "POST", "/reset"))
        with self._lock:
            self._toxics.clear()
            self._disabled.clear()


def _safe(name: str) -> str:
    """A toxic name that survives a URL path (a fault's name has spaces and '#')."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


class Flapper:
    """A link that goes down and up every `period` seconds (connections refused while down),
    in a thread, until stopped. The schedule is fixed by the period, not by chance."""

    def __init__(self, links: Links, targets: Sequence[Link], period: float, idle: Collection[str] = ()) -> None:
        self.links, self.targets, self.period, self.idle = links, list(targets), period, tuple(idle)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flapper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        up = True
        while not self._stop.wait(self.period):
            up = not up
            self.links.set_enabled(self.targets, up, self.idle)
        self.links.set_enabled(self.targets, True, self.idle)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
