"""The lab on a user's own deployment: nodes, sentinels and toxiproxies the user brought up,
described by their addresses (a JSON file, `rill chaos run --target deployment --deployment
FILE`) or found in a docker compose project (`chaos.compose`, `--target compose`). The same
workload, nemesis, monitor and checkers run against it; what the lab cannot do there is
recorded as not applied, never faked.

What a deployment gives the lab, and what it does not:

- **Who is who**: each node and sentinel by the address the lab reaches it at (`address`,
  around any proxy) and the address the cluster names it by (`announced`: what the sentinels
  hand clients, what a primary lists in ROLE), so that replies and events can be put on members.
  The lab names them n1.., s1.. in the order given (plans and histories use those names;
  `labels` maps them back).
- **Links**: no namespaces, so a link can be cut only where a toxiproxy carries it. By
  convention a node `X` may have, on its toxiproxy (`toxiproxy`: the API's host:port), the
  proxies `X` (its RESP port) and `X-replication` (a Rill node's replication port), which carry
  every node's and sentinel's links to X when the cluster reaches X through them
  (`through_proxy`: X announces the proxy's address and the sentinels monitor it), and `X-c1`,
  `X-c2`, which carry the links of the lab's two client groups (`clients`: where the lab's
  workers reach those proxies). One proxy carries many links: a fault is applied only when
  every link it cuts is carried by proxies that carry no link it keeps (`proxies`); links to
  and between sentinels have no proxy.
- **Processes**: `control` holds command templates (`kill`, `start`, `pause`, `resume`, and
  `locate`, which prints a member's new `host:port` after a start), run without a shell, each
  word formatted with the member's fields (`{name}`, `{host}`, `{port}` and any other string
  field of its entry, such as `{container}`); a member's own entry may override them. A fault
  without the commands it needs is not applied.
- **Never**: clocks (the clock shim runs in the lab's own processes), disks (the disk nemesis
  is the lab's own filesystem), a sentinel's config file, the cluster's settings.

At the end of a run, and whatever happens, every toxic the lab added is removed, every proxy it
disabled is enabled, every process it paused continued and every process it killed started.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import urllib.error
import urllib.request
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from chaos.clocks import Clock
from chaos.cluster import ADMIN_TIMEOUT, Cluster
from chaos.diskfs import DiskControl
from chaos.faults import NotApplicable
from chaos.steps import client_names
from chaos.targets import SERVICE
from chaos.topology import Link, Member, Proxy, member_links

CONTROLS = ("kill", "start", "pause", "resume", "locate")
COMMAND_TIMEOUT = 60.0
# What each process fault needs of a member's control (a crash is frozen, cut, killed, restarted).
NEEDS = {"kill": ("kill", "start"), "bounce": ("kill", "start"), "partition-bounce": ("kill", "start"),
         "kill-all": ("kill", "start"), "pause": ("pause", "resume")}
NO_CLOCK = "no clock control on a deployment (the clock shim runs only in the lab's own processes)"
NO_DISK = "no disk control on a deployment (the disk nemesis is the lab's own filesystem under each node's dir)"
UNSUPPORTED = {"clock-step": NO_CLOCK, "clock-skew": NO_CLOCK, "clock-drift": NO_CLOCK, "power-loss": NO_DISK, "disk-full": NO_DISK,
               "disk-eio": NO_DISK,
               "stale-sentinel": "no sentinel config files on a deployment (a stale-config restart rewrites one)",
               # Found on the compose cluster: a killed container's address vanishes, a client
               # connecting meanwhile leaves toxiproxy dialling it, and the proxy cannot be reset
               # (its API call hangs) until that dial times out, minutes later.
               "crash": "no host crash on a deployment (its proxies cannot drop what they hold once the node's "
                        "address is gone: toxiproxy hangs dialling it)"}


class DeploymentError(Exception):
    """A deployment that cannot be described or driven (the message says what to fix)."""


def parse_address(text: str, what: str) -> tuple[str, int]:
    host, colon, port = str(text).rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DeploymentError(f"{what}: expected host:port, not {text!r}")
    return host.strip("[]"), int(port)


@dataclass(frozen=True)
class Route:
    """A proxy in front of member `to`, carrying the links of `sources` to it."""

    proxy: Proxy
    to: str
    sources: frozenset[str]


@dataclass
class RemoteProcess:
    """A node or sentinel of the deployment, driven by its control's commands. `alive` and
    `paused` are what the lab did to it (it does not poll the deployment for them)."""

    member: Member
    label: str  # the user's name for it
    address: tuple[str, int]  # where the lab reaches it, around the proxies
    fields: dict[str, str]  # the template fields
    control: dict[str, str]  # command templates
    password_env: str = ""
    paused: bool = False
    running: bool = True
    clock: Clock | None = None  # never: no clock control on a deployment
    disk: DiskControl | None = None  # never: no disk control
    commands: list[str] = field(default_factory=list)  # what the lab ran, for the record

    def can(self, *actions: str) -> str | None:
        """Why these actions cannot be done (None: they can)."""
        missing = [a for a in actions if not self.control.get(a)]
        return f"no {'/'.join(missing)} command for {self.label} ({self.member.name})" if missing else None

    def _run(self, action: str) -> str:
        template = self.control.get(action)
        if not template:
            raise NotApplicable(f"no {action} command for {self.label}")
        values = {**self.fields, "host": self.address[0], "port": str(self.address[1])}
        argv = [word.format_map(values) for word in shlex.split(template)]
        self.commands.append(" ".join(argv))
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DeploymentError(f"{action} {self.label}: {' '.join(argv)}: {exc}") from None
        if done.returncode != 0:
            raise DeploymentError(f"{action} {self.label}: `{' '.join(argv)}` exited with {done.returncode}: "
                                  f"{(done.stderr or done.stdout).strip()[-500:]}")
        return done.stdout

    def start(self) -> None:
        if self.running:
            return
        self._run("start")
        self.running, self.paused = True, False
        if self.control.get("locate"):  # e.g. a published port the engine chose again
            self.address = _located(self._run("locate"), self.label)

    def kill(self) -> None:
        if not self.running:
            return
        if self.paused:  # overlapping faults: a container engine refuses to kill a frozen container
            self.resume()
        self._run("kill")
        self.running, self.paused = False, False

    def pause(self) -> None:
        if self.running and not self.paused:
            self._run("pause")
            self.paused = True

    def resume(self) -> None:
        if self.running and self.paused:
            self._run("resume")
            self.paused = False

    def alive(self) -> bool:
        return self.running

    def admin(self, timeout: float = ADMIN_TIMEOUT) -> redis.Redis:
        password = os.environ.get(self.password_env) if self.password_env else None
        # No retries: the lab's observer wants this moment's answer (redis-py retries a refused
        # connection for seconds by default).
        return redis.Redis(self.address[0], self.address[1], password=password or None, socket_timeout=timeout,
                           socket_connect_timeout=timeout, decode_responses=True, retry=Retry(NoBackoff(), 0))


def _located(output: str, label: str) -> tuple[str, int]:
    """The first IPv4 host:port a `locate` command printed (`docker port` prints one per
    address family); 0.0.0.0 means this machine."""
    for line in output.split():
        host, _, port = line.rpartition(":")
        if host and "[" not in host and ":" not in host and port.isdigit():
            return ("127.0.0.1" if host == "0.0.0.0" else host), int(port)
    raise DeploymentError(f"locate {label}: no host:port in {output.strip()!r}")


class Deployment(Cluster):
    """A user's deployment as the lab's cluster and network (`faults.Network`)."""

    def __init__(self, description: dict[str, Any], source: str) -> None:
        super().__init__({}, str(description.get("service") or SERVICE))
        self.source = source  # what it was described by (a file, a compose project)
        self.description = description
        self.password_env = str(description.get("password_env") or "")
        self.labels: dict[str, str] = {}
        self.routes: list[Route] = []
        self.client_addresses: dict[str, dict[str, tuple[str, int]]] = {c: {} for c in client_names()}
        control = _control(description.get("control"), "control")
        for kind, key, prefix in (("node", "nodes", "n"), ("sentinel", "sentinels", "s")):
            entries = description.get(key)
            if not isinstance(entries, list) or not entries:
                raise DeploymentError(f"a deployment lists its {key}: \"{key}\": [{{\"name\": ..., \"address\": "
                                      "\"host:port\"}, ...]")
            for k, entry in enumerate(entries, 1):
                self._add(kind, f"{prefix}{k}", entry, control, sentinel_password=kind == "sentinel")
        if len(self.nodes) < 2:
            raise DeploymentError("a deployment needs a primary and at least one replica")
        for group in client_names():
            self.members[group] = Member(group, "client", "", "", "", ())

    def _add(self, kind: str, name: str, entry: Any, control: dict[str, str], sentinel_password: bool) -> None:
        if not isinstance(entry, dict) or "address" not in entry:
            raise DeploymentError(f"{kind} {name}: expected {{\"name\": ..., \"address\": \"host:port\", ...}}")
        label = str(entry.get("name") or name)
        if label in self.labels.values():
            raise DeploymentError(f"two members are called {label!r}")
        address = parse_address(entry["address"], f"{label}'s address")
        announced = parse_address(entry.get("announced") or entry["address"], f"{label}'s announced address")
        self.members[name] = Member(name, kind, "", "", announced[0], (announced[1],))
        self.labels[name] = label
        fields = {k: str(v) for k, v in entry.items() if isinstance(v, (str, int)) and not isinstance(v, bool)}
        fields["name"] = label
        own = {**control, **_control(entry, label)}
        password_env = str(self.description.get("sentinel_password_env" if sentinel_password else "password_env") or "")
        proc = RemoteProcess(self.members[name], label, address, fields, own, password_env)
        (self.nodes if kind == "node" else self.sentinels)[name] = proc
        if kind == "node":
            self._add_routes(name, label, entry)

    def _add_routes(self, name: str, label: str, entry: dict[str, Any]) -> None:
        """The proxies in front of a node, by the naming convention (module docstring)."""
        clients = entry.get("clients") or {}
        if not isinstance(clients, dict) or any(g not in self.client_addresses for g in clients):
            raise DeploymentError(f"{label}'s clients: expected {{\"c1\": \"host:port\", \"c2\": \"host:port\"}}")
        api_text = entry.get("toxiproxy")
        if not api_text:
            for group, text in clients.items():
                self.client_addresses[group][name] = parse_address(text, f"{label}'s {group} address")
            return
        api = parse_address(api_text, f"{label}'s toxiproxy API")
        found = toxiproxy_listens(api)
        nodes = {f"n{k}" for k in range(1, len(self.description["nodes"]) + 1)}
        sentinels = {f"s{k}" for k in range(1, len(self.description["sentinels"]) + 1)}
        if entry.get("through_proxy"):
            for proxy, sources in ((label, nodes | sentinels), (f"{label}-replication", nodes)):
                if proxy in found:
                    self.routes.append(Route(Proxy(api, proxy), name, frozenset(sources - {name})))
        for group in client_names():
            proxy = f"{label}-{group}"
            if group in clients:
                where = parse_address(clients[group], f"{label}'s {group} address")
            elif proxy in found:
                host, port = parse_address(found[proxy], f"{proxy}'s listen address")
                where = (api[0] if host in ("0.0.0.0", "::", "") else host, port)
            else:
                continue
            self.client_addresses[group][name] = where
            if proxy in found:
                self.routes.append(Route(Proxy(api, proxy), name, frozenset({group})))

    # -- faults.Network ----------------------------------------------------------------------

    def links(self) -> list[Link]:
        return member_links(self.members)

    def carriers(self, link: Link) -> list[Route]:
        return [r for r in self.routes if r.to == link.dst and link.src in r.sources]

    def proxies(self, links: Sequence[Link], idle: Collection[str] = ()) -> list[Proxy]:
        """The proxies that cut exactly `links` (links from an `idle` node to other nodes may be
        cut or not); NotApplicable names a link no proxy carries, or one the cut would take
        with it."""
        free = {link for link in self.links() if link.src in idle and self.members[link.dst].kind == "node"}
        wanted = set(links) | free
        chosen: dict[Proxy, Route] = {}
        for link in links:
            if link in free:
                continue
            routes = self.carriers(link)
            if not routes:
                raise NotApplicable(f"no proxy carries {self._show(link)} here")
            chosen.update((r.proxy, r) for r in routes)
        for route in chosen.values():
            for source in sorted(route.sources):
                taken = Link(source, route.to)
                if taken not in wanted:
                    cut = next(link for link in links if route in self.carriers(link))
                    raise NotApplicable(f"one proxy ({route.proxy.name}) carries {self._show(cut)} and "
                                        f"{self._show(taken)}: it cannot cut the one and keep the other")
        return list(chosen)

    def own_servers(self) -> list[tuple[str, int]]:
        return []  # the user's: only what the lab did is undone

    def faults_present(self) -> list[str]:
        """The lab's proxies that are disabled or carry toxics: a run starts on a clean slate."""
        found = []
        for api in dict.fromkeys(r.proxy.api for r in self.routes):
            url = f"http://{api[0]}:{api[1]}/proxies"
            try:
                with urllib.request.urlopen(url, timeout=10) as reply:
                    proxies = json.load(reply)
            except (OSError, ValueError) as exc:
                raise DeploymentError(f"the toxiproxy API at {api[0]}:{api[1]} does not answer ({exc})") from None
            for route in (r for r in self.routes if r.proxy.api == api):
                state = proxies.get(route.proxy.name, {})
                if not state.get("enabled", True) or state.get("toxics"):
                    found.append(f"{route.proxy.name} ({'disabled' if not state.get('enabled', True) else ''}"
                                 f"{' '.join(t.get('name', '?') for t in state.get('toxics') or [])})")
        return found

    def describe(self, proxies: Sequence[Proxy]) -> str:
        return f" at the proxies {', '.join(p.name for p in proxies)}"

    def check(self) -> None:
        return None

    def _show(self, link: Link) -> str:
        return f"{self.labels.get(link.src, link.src)}>{self.labels.get(link.dst, link.dst)}"

    # -- the cluster ---------------------------------------------------------------------------

    def unsupported(self, fault: str, victim: str) -> str | None:
        if fault in UNSUPPORTED:
            return UNSUPPORTED[fault]
        needs = NEEDS.get(fault)
        if needs is None:
            return None
        victims = list(self.nodes) if victim == "all" or fault == "partition-bounce" else [victim]
        for name in victims:
            proc = self.nodes.get(name) or self.sentinels.get(name)
            why = proc.can(*needs) if isinstance(proc, RemoteProcess) else None
            if why:
                return why
        return None

    def restore(self) -> list[str]:
        """Continues what the lab paused and starts what it killed; returns what failed."""
        errors = []
        for proc in self.processes():
            try:
                proc.resume()
                proc.start()
            except (DeploymentError, NotApplicable) as exc:
                errors.append(str(exc))
        return errors

    def routes_for(self, group: str) -> dict[str, list[Any]]:
        """Where client group `group` connects for each node's announced address."""
        out: dict[str, list[Any]] = {}
        for name, proc in self.nodes.items():
            assert isinstance(proc, RemoteProcess)
            where = self.client_addresses[group].get(name, proc.address)
            member = self.members[name]
            out[f"{member.announced_ip}:{member.ports[0]}"] = list(where)
        return out

    def sentinel_addresses(self) -> list[list[Any]]:
        return [list(proc.address) for proc in self.sentinels.values() if isinstance(proc, RemoteProcess)]

    def summary(self) -> dict[str, Any]:
        """What the run's result records of the deployment (no password)."""
        return {
            "source": self.source,
            "members": {name: self.labels[name] for name in [*self.nodes, *self.sentinels]},
            "announced": {name: f"{m.announced_ip}:{m.ports[0]}" for name, m in self.members.items() if m.ports},
            "proxies": [{"proxy": r.proxy.name, "api": f"{r.proxy.api[0]}:{r.proxy.api[1]}", "to": r.to,
                         "from": sorted(r.sources)} for r in self.routes],
            "controls": sorted({a for p in self.processes() if isinstance(p, RemoteProcess)
                                for a in CONTROLS if p.control.get(a)}),
        }


def _control(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise DeploymentError(f"{where}: expected an object of command templates")
    return {k: str(v) for k, v in raw.items() if k in CONTROLS and v}


def toxiproxy_listens(api: tuple[str, int]) -> dict[str, str]:
    """The proxies a toxiproxy server holds: name -> listen address (its API's GET /proxies)."""
    url = f"http://{api[0]}:{api[1]}/proxies"
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            proxies = json.load(reply)
    except (OSError, urllib.error.URLError, ValueError) as exc:
        raise DeploymentError(f"the toxiproxy API at {api[0]}:{api[1]} does not answer ({exc})") from None
    return {str(name): str(p.get("listen", "")) for name, p in proxies.items()}


def load_description(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except ValueError as exc:
        raise DeploymentError(f"{path}: not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise DeploymentError(f"{path}: expected a JSON object (docs/chaos.md, *Your own deployment*)")
    return raw
