"""A Docker engine for the deploy tests: the one that already answers (DOCKER_HOST, or the
default socket), else a private `dockerd` started here and stopped at the end with
everything it changed on the host undone.

What a private dockerd needs on a shared Linux machine (found on the 2-core Firecracker VM
the suite runs on: kernel 6.x with overlayfs, bridge, veth and nf_tables, no systemd):

* Its own everything: socket, pid file, exec root and data root in a temporary directory
  (deleted at the end, so no image or volume outlives the session; the base image is cached
  as a tarball instead, see base_image.py), its own bridge and its own address pool, so it
  never meets another engine's `docker0`, `172.17.0.0/16` or state. One private engine at a
  time per machine (a lock): two would fight over the ip_forward setting below.
* `--iptables=false`: dockerd leaves the host's firewall alone. Left on, it installs its
  DOCKER* chains and, when it has to switch IP forwarding on, sets the FORWARD policy to
  DROP, which cuts off other users' bridges and namespaces, and stays after it exits.
  Published ports still work without it (docker-proxy, the userland proxy, listens on
  127.0.0.1); containers reach each other over their network's bridge. What is lost is the
  way out, which image builds need (apt, PyPI): one MASQUERADE rule for the pool's traffic
  to anywhere outside the pool, plus net.ipv4.ip_forward = 1 while the engine runs, both
  removed at the end. The rule must exclude traffic inside the pool: bridged packets go
  through POSTROUTING too (br_netfilter), and masquerading them would show every container
  to its peers as the gateway's address. `iptables` is Debian's nf_tables variant;
  `iptables-legacy` is the fallback for kernels without nf_tables.
* Storage: overlay2 works here (the data root is on ext4); vfs, which works anywhere but
  copies every layer in full, is the fallback when dockerd refuses overlay2 (overlay on
  overlay, in a container).
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

# Tried in this order; RILL_TEST_DOCKER_STORAGE=vfs (a comma-separated list) overrides it.
STORAGE_DRIVERS = ("overlay2", "vfs")
_LOCK_PATH = os.path.join(tempfile.gettempdir(), "rill-deploy-dockerd.lock")
_LOCK_WAIT_S = 1200.0  # another session's whole deploy suite
_START_TIMEOUT_S = 60.0


class EngineError(Exception):
    """No Docker engine could be found or started."""


@dataclass
class Engine:
    """A Docker engine and the environment that points the docker clients at it."""

    env: dict[str, str]
    private: bool
    storage_driver: str = ""
    server_version: str = ""

    def run(self, args: Sequence[str], timeout: float = 120.0, check: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """A docker client command (`docker`, `docker-compose`, ...) against this engine;
        `env` adds variables (values the command line should not show)."""
        done = subprocess.run(list(args), env={**self.env, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout)
        if check and done.returncode != 0:
            raise EngineError(f"{' '.join(args)} exited with {done.returncode}:\n"
                              f"{done.stderr[-4000:] or done.stdout[-4000:]}")
        return done

    def docker(self, *args: str, timeout: float = 120.0, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(["docker", *args], timeout=timeout, check=check)


def _server_version(env: dict[str, str]) -> str | None:
    try:
        done = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], env=env,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


@contextlib.contextmanager
def docker_engine() -> Iterator[Engine]:
    """The running engine if one answers, else a private one for the duration."""
    if shutil.which("docker") is None or shutil.which("dockerd") is None:
        raise EngineError("docker is not installed: `make deploy-deps` installs Debian's docker.io")
    env = dict(os.environ)
    version = _server_version(env)
    if version is not None:
        yield Engine(env, private=False, server_version=version)
        return
    with _machine_lock(), _private_engine() as engine:
        yield engine


@contextlib.contextmanager
def _machine_lock() -> Iterator[None]:
    with open(_LOCK_PATH, "a+") as lock:
        deadline = time.monotonic() + _LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise EngineError(f"another session held {_LOCK_PATH} for {_LOCK_WAIT_S:.0f} s") from None
                time.sleep(1.0)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _used_networks() -> list[ipaddress.IPv4Network]:
    out = subprocess.run(["ip", "-4", "route", "show"], capture_output=True, text=True, check=True).stdout
    nets = []
    for line in out.splitlines():
        word = line.split()[0]
        if word != "default":
            with contextlib.suppress(ValueError):
                nets.append(ipaddress.IPv4Network(word, strict=False))
    return nets


def _free_pool() -> ipaddress.IPv4Network:
    """A 10.x.0.0/16 no route of this host overlaps."""
    used = _used_networks()
    candidates = [ipaddress.IPv4Network(f"10.{b}.0.0/16") for b in range(200, 250)]
    random.shuffle(candidates)
    for pool in candidates:
        if not any(pool.overlaps(n) for n in used):
            return pool
    raise EngineError("no free 10.200-249.0.0/16 address pool for a private Docker engine")


def _iptables() -> str:
    for tool in ("iptables", "iptables-legacy"):
        if shutil.which(tool) and subprocess.run([tool, "-t", "nat", "-S"], capture_output=True).returncode == 0:
            return tool
    raise EngineError("neither iptables nor iptables-legacy can read the nat table")


def _sh(*args: str) -> None:
    subprocess.run(list(args), check=True, capture_output=True)


@contextlib.contextmanager
def _private_engine() -> Iterator[Engine]:
    workdir = tempfile.mkdtemp(prefix="rill-dockerd-")
    pool = _free_pool()
    bridge = f"rilldk{os.getpid() % 100000}"
    gateway = f"{pool.network_address + 1}/24"
    masquerade = ["POSTROUTING", "-s", str(pool), "!", "-d", str(pool), "-j", "MASQUERADE"]
    iptables = _iptables()
    with open("/proc/sys/net/ipv4/ip_forward", encoding="ascii") as f:
        forwarding_was = f.read().strip()
    proc: subprocess.Popen[bytes] | None = None
    try:
        _sh("ip", "link", "add", bridge, "type", "bridge")
        _sh("ip", "addr", "add", gateway, "dev", bridge)
        _sh("ip", "link", "set", bridge, "up")
        _sh(iptables, "-t", "nat", "-A", *masquerade)
        if forwarding_was != "1":
            with open("/proc/sys/net/ipv4/ip_forward", "w", encoding="ascii") as f:
                f.write("1")
        sock = os.path.join(workdir, "docker.sock")
        env = {**os.environ, "DOCKER_HOST": f"unix://{sock}"}
        failures = []
        drivers = os.environ.get("RILL_TEST_DOCKER_STORAGE", ",".join(STORAGE_DRIVERS)).split(",")
        for driver in drivers:
            proc, version, log = _start_dockerd(workdir, sock, bridge, pool, driver, env)
            if version is not None:
                yield Engine(env, private=True, storage_driver=driver, server_version=version)
                break
            failures.append(f"--storage-driver {driver}:\n{log}")
            proc = None
        else:
            raise EngineError("dockerd did not start:\n" + "\n".join(failures))
    finally:
        if proc is not None:
            _stop_dockerd(proc)
        _cleanup_host(workdir, bridge, pool, iptables, masquerade, forwarding_was)


def _start_dockerd(workdir: str, sock: str, bridge: str, pool: ipaddress.IPv4Network, driver: str,
                   env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str | None, str]:
    """dockerd with one storage driver: the process and its version once it answers, or
    the process (stopped) and None with its log's tail when it does not."""
    root = os.path.join(workdir, driver)
    log_path = os.path.join(workdir, f"dockerd-{driver}.log")
    args = ["dockerd", "--host", f"unix://{sock}", "--data-root", os.path.join(root, "data"),
            "--exec-root", os.path.join(root, "exec"), "--pidfile", os.path.join(root, "dockerd.pid"),
            "--storage-driver", driver, "--bridge", bridge, "--iptables=false", "--ip6tables=false",
            "--default-address-pool", f"base={pool},size=24"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        version = _server_version(env)
        if version is not None:
            return proc, version, ""
        time.sleep(0.5)
    _stop_dockerd(proc)
    with open(log_path, encoding="utf-8", errors="replace") as f:
        return proc, None, "".join(f.readlines()[-20:])


def _stop_dockerd(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM: dockerd stops its containers and its containerd, then exits."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _cleanup_host(workdir: str, bridge: str, pool: ipaddress.IPv4Network, iptables: str,
                  masquerade: list[str], forwarding_was: str) -> None:
    """Undo what _private_engine changed, whatever state it got to."""
    subprocess.run([iptables, "-t", "nat", "-D", *masquerade], capture_output=True)
    if forwarding_was != "1":
        with open("/proc/sys/net/ipv4/ip_forward", "w", encoding="ascii") as f:
            f.write(forwarding_was)
    # Our bridge, and the bridges of networks dockerd left behind (it keeps them when it
    # stops with networks defined): every bridge with an address in our pool.
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        words = line.split()
        if len(words) > 3 and ipaddress.IPv4Interface(words[3]).ip in pool:
            subprocess.run(["ip", "link", "del", words[1]], capture_output=True)
    subprocess.run(["ip", "link", "del", bridge], capture_output=True)
    # Mounts dockerd may have left under the work directory (a killed dockerd), deepest first.
    with open("/proc/self/mounts", encoding="utf-8") as f:
        mounts = [line.split()[1] for line in f if line.split()[1].startswith(workdir)]
    for mount in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True)
    shutil.rmtree(workdir, ignore_errors=True)
