"""The lab's network: one network namespace per process (node, sentinel, client group), every
link between them through a toxiproxy, so any node can be cut off from any set of peers.

Why namespaces. Sentinel hands every client and every replica the same address for the
primary (its announced address), discovers replicas from the primary's INFO and its peers
from hello messages. To cut the link B→A but not C→A, that one address must lead somewhere
different depending on who connects. In a namespace per member it does, without NAT:

    member X's namespace                                   hub namespace
    ┌────────────────────────────────────────────┐         ┌───────────────────────┐
    │ the process (node / sentinel / workers)    │         │ bridge br0 10.77.0.254 │
    │   connects to A's *announced* address ───┐ │         │ (the lab itself runs   │
    │   127.0.1.a:port (loopback: local here)  │ │         │  here: toxiproxy APIs, │
    │ toxiproxy of X listens on it  ◄──────────┘ │         │  monitor, final reads) │
    │   and forwards to A's *real* address ──────┼─ eth0 ──┤                       │
    │   10.77.0.a:port over the bridge           │ 10.77.0.x└───────────────────────┘
    └────────────────────────────────────────────┘

- Every member has an announced address on loopback (nodes 127.0.1.k, sentinels 127.0.2.k)
  and a real address on the bridge (10.77.0.x/24). A process listens on both; it announces
  only the loopback one (`replica-announce-ip`, `sentinel announce-ip`).
- 127.0.0.0/8 is local in every namespace, so in X's namespace A's announced address is served
  by X's own toxiproxy (one per namespace, API on X's real address), which forwards to A's real
  address. So every directed link X→A is one toxiproxy proxy per port of A (a Rill node has two:
  RESP and its gRPC replication port), in X's toxiproxy, and faults act per directed link.
- The lab runs in the hub namespace and reaches every member at its real address, around the
  proxies: faults never blind the observer.
- Nothing is added to the machine's own namespace. Namespaces are named
  `rillchaos-<lab pid>-<member>`; `cleanup_stale` removes those of labs that are gone (killing
  the processes left in them) and `destroy` removes this lab's, also on exit.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

PREFIX = "rillchaos"
SUBNET = "10.77.0"
HUB_IP = f"{SUBNET}.254"
TOXIPROXY_API_PORT = 8474
_CLONE_NEWNET = 0x40000000


class LabError(Exception):
    """The lab cannot be set up (no root, a missing tool, a namespace command that failed)."""


@dataclass(frozen=True)
class Member:
    """One process of the cluster (a node or a sentinel) or one group of clients, alone in
    its namespace."""

    name: str  # "n1", "s2", "c1"
    kind: str  # "node", "sentinel", "client"
    ns: str
    real_ip: str
    announced_ip: str  # "" for clients, which nobody connects to
    ports: tuple[int, ...] = ()  # where it listens (the same on both addresses)

    @property
    def address(self) -> tuple[str, int]:
        """The announced address of its first port, as peers and clients name it."""
        return self.announced_ip, self.ports[0]


@dataclass(frozen=True)
class Link:
    """A directed link: `src` connects to `dst` (to each of dst's ports)."""

    src: str
    dst: str


def member_links(members: dict[str, Member]) -> list[Link]:
    """Every directed link a cluster can use: any node may replicate from any other; sentinels
    watch every node and talk to each other; clients reach every node and every sentinel.
    Nobody connects to a client group, and nodes never connect to sentinels."""
    out = []
    for src in members.values():
        for dst in members.values():
            if src.name == dst.name or dst.kind == "client":
                continue
            if src.kind == "node" and dst.kind == "sentinel":
                continue
            out.append(Link(src.name, dst.name))
    return out


@dataclass(frozen=True)
class Proxy:
    """One toxiproxy proxy: the API (host, port) of the server that holds it, and its name there."""

    api: tuple[str, int]
    name: str


@dataclass
class Lab:
    """The namespaces, addresses and toxiproxies of one run."""

    members: dict[str, Member]
    workdir: str
    toxiproxy_seed: int = 1
    pid: int = field(default_factory=os.getpid)
    _toxiproxies: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _created: list[str] = field(default_factory=list)
    _home_ns: int | None = None

    @property
    def hub(self) -> str:
        return f"{PREFIX}-{self.pid}-hub"

    def links(self) -> list[Link]:
        return member_links(self.members)

    def proxy_name(self, link: Link, port: int) -> str:
        return f"{link.src}>{link.dst}:{port}"

    def proxies(self, links: Sequence[Link], idle: Collection[str] = ()) -> list[Proxy]:
        """Each link's own proxies (one per port of its destination) in its source's toxiproxy:
        any set of links can be cut exactly here (`idle` changes nothing)."""
        return [Proxy((self.members[link.src].real_ip, TOXIPROXY_API_PORT), self.proxy_name(link, port))
                for link in links for port in self.members[link.dst].ports]

    def own_servers(self) -> list[tuple[str, int]]:
        return [(member.real_ip, TOXIPROXY_API_PORT) for member in self.members.values()]

    def describe(self, proxies: Sequence[Proxy]) -> str:
        return ""  # each link has its own proxies: the links say it all

    def check(self) -> None:
        self.check_in_hub()

    # -- set-up and tear-down --------------------------------------------------------------

    def create(self) -> None:
        """Creates the hub and the members' namespaces, and starts a toxiproxy in each member
        namespace with the proxies of that member's outgoing links. Undone by `destroy`, which
        also runs at exit."""
        require_root()
        atexit.register(self.destroy)
        cleanup_stale()
        self._ip("netns", "add", self.hub)
        self._created.append(self.hub)
        # Into the hub before anything connects to a real address: from the machine's own
        # namespace, 10.77.0.x would be routed to its default gateway, off this machine.
        self.enter_hub()
        self._ip("-n", self.hub, "link", "set", "lo", "up")
        self._ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        self._ip("-n", self.hub, "addr", "add", f"{HUB_IP}/24", "dev", "br0")
        self._ip("-n", self.hub, "link", "set", "br0", "up")
        for member in self.members.values():
            self._ip("netns", "add", member.ns)
            self._created.append(member.ns)

        def wire(index: int, member: Member) -> None:
            veth = f"v{index}"
            self._ip("-n", member.ns, "link", "set", "lo", "up")
            self._ip("-n", self.hub, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", member.ns)
            self._ip("-n", self.hub, "link", "set", veth, "master", "br0", "up")
            self._ip("-n", member.ns, "addr", "add", f"{member.real_ip}/24", "dev", "eth0")
            self._ip("-n", member.ns, "link", "set", "eth0", "up")
        # the members' links, a few at a time: 55 `ip` commands one after the other are seconds
        # of a run on a loaded machine
        with ThreadPoolExecutor(4) as pool:
            for done in [pool.submit(wire, index, member) for index, member in enumerate(self.members.values())]:
                done.result()
        for member in self.members.values():
            self._start_toxiproxy(member)
        for member in self.members.values():
            self.wait_for_tcp(member.real_ip, TOXIPROXY_API_PORT, 15.0, f"toxiproxy of {member.name}")

    def _start_toxiproxy(self, member: Member) -> None:
        proxies = []
        for link in self.links():
            if link.src != member.name:
                continue
            dst = self.members[link.dst]
            for port in dst.ports:
                proxies.append({"name": self.proxy_name(link, port), "listen": f"{dst.announced_ip}:{port}",
                                "upstream": f"{dst.real_ip}:{port}", "enabled": True})
        config = os.path.join(self.workdir, f"toxiproxy-{member.name}.json")
        with open(config, "w", encoding="utf-8") as f:
            json.dump(proxies, f)
        log = open(os.path.join(self.workdir, f"toxiproxy-{member.name}.log"), "wb")  # noqa: SIM115
        env = {**os.environ, "LOG_LEVEL": "warn"}
        argv = [toxiproxy_binary(), "-host", member.real_ip, "-port", str(TOXIPROXY_API_PORT),
                "-config", config, "-seed", str(self.toxiproxy_seed)]
        self._toxiproxies[member.name] = subprocess.Popen(
            self.exec_argv(member, argv), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        log.close()

    def exec_argv(self, member: Member, argv: Sequence[str]) -> list[str]:
        """The command line that runs `argv` inside the member's namespace (`ip netns exec`
        execs it: the pid is the program's own, so signals reach it directly)."""
        return ["ip", "netns", "exec", member.ns, *argv]

    def enter_hub(self) -> None:
        """Moves this thread (and the threads it starts later) into the hub namespace, where
        every member's real address is reachable. `create` does it; `destroy` moves it back."""
        if self._home_ns is None:
            self._home_ns = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        _setns(f"/run/netns/{self.hub}")

    def check_in_hub(self) -> None:
        """Refuses to go on unless this thread is in the hub namespace: every connection to a
        member's real address goes through here first (from anywhere else it would leave the
        machine through the default route)."""
        try:
            here = os.stat("/proc/thread-self/ns/net").st_ino
            hub = os.stat(f"/run/netns/{self.hub}").st_ino
        except OSError as exc:
            raise LabError(f"the lab's hub namespace is gone ({exc})") from None
        if here != hub:
            raise LabError("refusing to reach a lab address from outside the lab's hub namespace")

    def wait_for_tcp(self, host: str, port: int, timeout: float, what: str) -> None:
        """Until something accepts on host:port, a member's real address (from the hub)."""
        self.check_in_hub()
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection((host, port), timeout=0.5):
                    return
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise LabError(f"{what} not listening on {host}:{port} after {timeout}s ({exc})") from None
                time.sleep(0.05)

    def destroy(self) -> None:
        """Stops the toxiproxies and removes the namespaces (the processes in them must be
        stopped first: `cluster` does that). Safe to call twice."""
        for proc in self._toxiproxies.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self._toxiproxies.clear()
        if self._home_ns is not None:
            _setns_fd(self._home_ns)
            os.close(self._home_ns)
            self._home_ns = None
        for ns in reversed(self._created):
            _kill_namespace_processes(ns)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        self._created.clear()

    def _ip(self, *args: str) -> None:
        result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise LabError(f"ip {' '.join(args)}: {result.stderr.strip()}")


def build_lab(nodes: int, sentinels: int, clients: int, node_ports: Sequence[int], sentinel_port: int,
              workdir: str, toxiproxy_seed: int = 1) -> Lab:
    """The members and their addresses: nodes n1.. (127.0.1.k), sentinels s1.. (127.0.2.k),
    client groups c1.. (no announced address)."""
    pid = os.getpid()
    members: dict[str, Member] = {}
    host = 1

    def add(name: str, kind: str, announced: str, ports: tuple[int, ...]) -> None:
        nonlocal host
        members[name] = Member(name, kind, f"{PREFIX}-{pid}-{name}", f"{SUBNET}.{host}", announced, ports)
        host += 1

    for k in range(1, nodes + 1):
        add(f"n{k}", "node", f"127.0.1.{k}", tuple(node_ports))
    for k in range(1, sentinels + 1):
        add(f"s{k}", "sentinel", f"127.0.2.{k}", (sentinel_port,))
    for k in range(1, clients + 1):
        add(f"c{k}", "client", "", ())
    if host > 250:
        raise LabError("too many members for one /24")
    return Lab(members, workdir, toxiproxy_seed, pid)


def require_root() -> None:
    if os.geteuid() != 0:
        raise LabError("the chaos lab creates network namespaces: run it as root")
    if shutil.which("ip") is None:
        raise LabError("`ip` (iproute2) is not installed")


def toxiproxy_binary() -> str:
    """toxiproxy's server: $RILL_TOXIPROXY, else `toxiproxy-server` next to this Python (the
    venv, where `make chaos-deps` puts it) or on PATH."""
    candidates = [os.environ.get("RILL_TOXIPROXY", ""),
                  os.path.join(os.path.dirname(sys.executable), "toxiproxy-server"),
                  shutil.which("toxiproxy-server") or ""]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    raise LabError("toxiproxy-server not found: `make chaos-deps` builds it into the venv "
                   "(go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0)")


def lab_namespaces() -> list[str]:
    result = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return [line.split()[0] for line in result.stdout.splitlines() if line.startswith(f"{PREFIX}-")]


def cleanup_stale(names: Iterable[str] | None = None) -> list[str]:
    """Removes the namespaces of labs whose process is gone (a lab killed with SIGKILL leaves
    them), after killing the processes it had started in them. Returns what it removed."""
    removed = []
    for ns in lab_namespaces() if names is None else names:
        owner = ns.split("-")[1] if ns.count("-") >= 2 else ""
        if owner.isdigit() and _alive(int(owner)):
            continue
        _kill_namespace_processes(ns)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        removed.append(ns)
    _unmount_orphans()
    return removed


def _unmount_orphans() -> None:
    """Lazily unmounts the disk nemesis' filesystems (under a lab's `rillchaos-` work
    directory) whose FUSE process is gone: a lab killed with SIGKILL leaves them behind."""
    try:
        with open("/proc/mounts", encoding="utf-8") as f:
            mounts = [line.split()[1] for line in f if line.split()[2].startswith("fuse") and "/rillchaos-" in line]
    except OSError:
        return
    for mountpoint in mounts:
        try:
            os.stat(mountpoint)
        except OSError:  # ENOTCONN: its daemon died
            subprocess.run(["fusermount3", "-u", "-z", mountpoint], capture_output=True, check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_namespace_processes(ns: str) -> None:
    """SIGKILLs the processes a lab started in `ns` (listed by `ip netns pids`), by pid."""
    result = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=False)
    for word in result.stdout.split():
        if word.isdigit() and int(word) != os.getpid():
            try:
                os.kill(int(word), signal.SIGKILL)  # a stopped one too
            except ProcessLookupError:
                pass


def _setns(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        _setns_fd(fd)
    finally:
        os.close(fd)


def _setns_fd(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise LabError(f"setns: {os.strerror(err)}")
