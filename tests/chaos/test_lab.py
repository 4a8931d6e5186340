"""The lab's network with real processes: an announced address leads through the caller's own
toxiproxy, so one directed link can be cut while another path to the same node still works;
healing restores it; nothing is left behind (namespaces, processes), also after a lab that died."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import pytest
import redis

from chaos.faults import Links
from chaos.topology import PREFIX, LabError, Link, build_lab, cleanup_stale, lab_namespaces


def _ping_from(lab, member: str, host: str, port: int, *command: str) -> str:  # type: ignore[no-untyped-def]
    """redis-cli PING (or `command`) run inside a member's namespace (through its proxies)."""
    result = subprocess.run(lab.exec_argv(lab.members[member], ["timeout", "2", "redis-cli", "-h", host, "-p",
                                                                 str(port), *(command or ["PING"])]),
                            capture_output=True, text=True, timeout=10)
    return result.stdout.strip() or f"exit {result.returncode}"


def test_one_directed_link_is_cut_while_the_same_address_still_works_from_elsewhere() -> None:
    workdir = tempfile.mkdtemp(prefix="rillchaos-test-")
    lab = build_lab(2, 0, 1, [6379], 26379, workdir)
    server = None
    try:
        lab.create()  # and moves this thread into the hub namespace
        lab.check_in_hub()
        n1 = lab.members["n1"]
        server = subprocess.Popen(lab.exec_argv(n1, ["redis-server", "--port", "6379", "--save", "",
                                                     "--bind", f"{n1.real_ip} {n1.announced_ip}",
                                                     "--protected-mode", "no", "--dir", workdir]),
                                  stdout=subprocess.DEVNULL)
        admin = redis.Redis(n1.real_ip, 6379, socket_timeout=2)
        deadline = time.monotonic() + 10
        while True:
            try:
                admin.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
        host, port = n1.address
        assert host.startswith("127.")
        assert _ping_from(lab, "c1", host, port) == "PONG"
        assert _ping_from(lab, "n2", host, port) == "PONG"
        # the node sees its peers at their namespaces' real addresses: the proxies forwarded them
        assert f"addr={lab.members['c1'].real_ip}:" in _ping_from(lab, "c1", host, port, "CLIENT", "INFO")

        links = Links(lab)
        links.blackhole([Link("c1", "n1")], "cut")
        assert _ping_from(lab, "c1", host, port) != "PONG"  # silence: redis-cli times out
        assert _ping_from(lab, "n2", host, port) == "PONG"  # same address, other source: untouched
        links.heal("cut", reset=True)
        assert _ping_from(lab, "c1", host, port) == "PONG"

        links.set_enabled([Link("n2", "n1")], False)  # refused, not silent
        assert _ping_from(lab, "n2", host, port) != "PONG"
        links.heal_all()
        assert _ping_from(lab, "n2", host, port) == "PONG"
    finally:
        if server is not None:
            server.kill()
            server.wait()
        lab.destroy()
    assert not [ns for ns in lab_namespaces() if ns.startswith(f"{PREFIX}-{os.getpid()}-")]
    # Back in the machine's own namespace, where a lab address would be routed off the
    # machine: the lab refuses to connect.
    with pytest.raises(LabError):
        lab.check_in_hub()


def test_stale_namespaces_of_a_dead_lab_are_removed_with_their_processes() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # its pid now names a lab that no longer runs
    ns = f"{PREFIX}-{gone.pid}-n1"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        leftover = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "60"])
        time.sleep(0.2)
        mine = f"{PREFIX}-{os.getpid()}-keep"
        subprocess.run(["ip", "netns", "add", mine], check=True)
        try:
            removed = cleanup_stale()
            assert ns in removed
            assert mine not in removed  # a running lab's namespaces are left alone
            assert leftover.wait(5) == -9
            assert ns not in lab_namespaces()
        finally:
            subprocess.run(["ip", "netns", "del", mine], check=False)
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


@pytest.mark.parametrize("command", [["scenarios"], ["targets"]])
def test_the_cli_lists(command: list[str]) -> None:
    result = subprocess.run([sys.executable, "-m", "chaos", *command], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "kill-primary" in result.stdout if command == ["scenarios"] else "redis-server + redis-sentinel" in result.stdout


def test_a_target_whose_programs_are_missing_says_why_and_runs_nothing(tmp_path: str) -> None:
    # Only the venv's programs on PATH: `rill` is there, redis-server is not.
    env = {**os.environ, "PATH": os.path.dirname(sys.executable)}
    result = subprocess.run([sys.executable, "-m", "chaos", "run", "--target", "redis", "--scenario", "kill-primary",
                             "--out", str(tmp_path)], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0
    assert '"status": "not available"' in result.stdout
    assert "redis-server is not installed" in result.stdout


def test_check_names_the_bad_line_of_a_history(tmp_path: str) -> None:
    path = os.path.join(str(tmp_path), "h.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"type": "meta", "time": 0}\n{"type": "bogus"}\n{"type": "meta", "time": 1}\n')
    result = subprocess.run([sys.executable, "-m", "chaos", "check", path], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1
    assert "h.jsonl:2: not an event" in result.stderr
