"""The `rill sentinel` process: start-up as redis-sentinel starts (a configuration file it can
rewrite, command-line directives, an id kept across restarts), the commands a sentinel
serves and the ones it does not, AUTH, shutdown, SIMULATE-FAILURE, notification scripts, and
its state surviving a restart after a failover."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time

import pytest
import redis

from bench.procs import free_port
from tests.conformance.sentinel.procs import cluster, wait_until
from tests.conftest import ROOT, wait_for_port


def _run(args: list[str], timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "node.main", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_a_sentinel_needs_a_configuration_file() -> None:
    done = _run(["sentinel"])
    assert done.returncode == 1
    assert "Sentinel needs config file on disk to save state. Exiting..." in done.stdout + done.stderr


def test_a_bad_directive_is_a_fatal_configuration_error(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "sentinel.conf")
    with open(path, "w") as f:
        f.write("port 1\nsentinel monitor m 127.0.0.1 6379 0\n")
    done = _run(["sentinel", path])
    assert done.returncode == 1
    out = done.stdout + done.stderr
    assert "*** FATAL CONFIG FILE ERROR" in out and "Quorum must be 1 or greater." in out


def _conf(port: int, d: str, extra: str = "") -> str:
    return f"port {port}\nbind 127.0.0.1\ndir {d}\nlogfile {d}/sentinel.log\n{extra}"


def test_it_picks_an_id_persists_it_and_keeps_it_across_restarts() -> None:
    with cluster() as c:
        c.rill_sentinel("x", _conf)
        text = c.read_conf("x")
        match = re.search(r"^sentinel myid ([0-9a-f]{40})$", text, re.M)
        assert match, text
        client = redis.Redis(port=c.ports["x"])
        assert client.execute_command("SENTINEL", "MYID") == match.group(1).encode()
        client.close()
        c.servers["x"].proc.terminate()
        assert c.servers["x"].proc.wait(10) == 0
        c.restart("x")
        client = redis.Redis(port=c.ports["x"])
        assert client.execute_command("SENTINEL", "MYID") == match.group(1).encode()
        client.close()


def test_command_line_directives_follow_the_file_and_node_sentinel_starts_one() -> None:
    d = os.path.realpath(tempfile.mkdtemp(prefix="sentinel-cli-"))
    path = os.path.join(d, "sentinel.conf")
    with open(path, "w") as f:
        f.write(f"port 1\ndir {d}\n")
    port = free_port()
    for args in (["sentinel", path, "--port", str(port), "--bind", "127.0.0.1"],
                 ["node", path, "--sentinel", "--port", str(port), "--bind", "127.0.0.1"]):
        proc = subprocess.Popen([sys.executable, "-m", "node.main", *args], cwd=ROOT, stdout=subprocess.DEVNULL)
        try:
            wait_for_port(port, proc)
            client = redis.Redis(port=port)
            assert client.execute_command("ROLE") == [b"sentinel", []]
            client.close()
        finally:
            proc.terminate()
            proc.wait(10)
    with open(path) as f:
        assert f"port {port}" in f.read()


def test_only_sentinel_commands_exist_and_hello_says_sentinel() -> None:
    with cluster() as c:
        c.rill_sentinel("x", _conf)
        client = redis.Redis(port=c.ports["x"], protocol=3)
        assert client.ping()
        hello = client.execute_command("HELLO", "3")
        assert hello[b"mode"] == b"sentinel" and hello[b"proto"] == 3
        for args in (("XADD", "s", "*", "f", "v"), ("GET", "k"), ("CONFIG", "GET", "port"), ("SELECT", "0")):
            with pytest.raises(redis.ResponseError, match="unknown command"):
                client.execute_command(*args)
        client.execute_command("CLIENT", "SETINFO", "LIB-NAME", "x")
        info = client.info()
        assert info["redis_mode"] == "sentinel" and info["sentinel_masters"] == 0
        assert set(client.info("sentinel")) == {
            "sentinel_masters", "sentinel_tilt", "sentinel_tilt_since_seconds", "sentinel_running_scripts",
            "sentinel_scripts_queue_length", "sentinel_simulate_failure_flags"}
        client.close()


def test_requirepass_is_asked_for() -> None:
    with cluster() as c:
        c.rill_sentinel("x", lambda port, d: _conf(port, d, "requirepass sekret\n"))
        client = redis.Redis(port=c.ports["x"])
        with pytest.raises(redis.AuthenticationError):
            client.execute_command("SENTINEL", "MASTERS")
        client.close()
        client = redis.Redis(port=c.ports["x"], password="sekret")
        assert client.execute_command("SENTINEL", "MASTERS") == []
        client.close()


def test_shutdown_and_sigterm_stop_it_cleanly() -> None:
    with cluster() as c:
        c.rill_sentinel("x", _conf)
        client = redis.Redis(port=c.ports["x"])
        with pytest.raises(redis.ConnectionError):
            client.execute_command("SHUTDOWN")
        assert c.servers["x"].proc.wait(10) == 0
        c.restart("x")
        c.servers["x"].proc.send_signal(signal.SIGTERM)
        assert c.servers["x"].proc.wait(10) == 0


def _single_sentinel_over_a_pair(c: object, extra: str = "") -> None:
    from tests.conformance.sentinel.procs import Cluster

    assert isinstance(c, Cluster)
    c.node("m")
    c.node("r1", replica_of="m")
    master = c.ports["m"]
    c.rill_sentinel("x", lambda port, d: _conf(
        port, d, f"sentinel monitor mymaster 127.0.0.1 {master} 1\nsentinel down-after-milliseconds mymaster 1000\n"
        + extra))

    def sees_replica() -> bool:
        # Listed, and its own INFO read (a replica whose INFO never came cannot be promoted).
        client = redis.Redis(port=c.ports["x"], decode_responses=True)
        try:
            replicas = client.execute_command("SENTINEL", "REPLICAS", "mymaster")
        finally:
            client.close()
        return len(replicas) == 1 and replicas[0]["master-link-status"] == "ok"

    wait_until(sees_replica, 30, "the sentinel to discover the replica and read its INFO")


def test_simulated_crash_after_election_exits_99() -> None:
    with cluster() as c:
        _single_sentinel_over_a_pair(c)
        client = redis.Redis(port=c.ports["x"])
        assert client.execute_command("SENTINEL", "SIMULATE-FAILURE", "CRASH-AFTER-ELECTION") == b"OK"
        assert client.info("sentinel")["sentinel_simulate_failure_flags"] == 1
        client.execute_command("SENTINEL", "FAILOVER", "mymaster")
        client.close()
        assert c.servers["x"].proc.wait(20) == 99


def test_the_notification_script_gets_warning_events() -> None:
    d = tempfile.mkdtemp(prefix="sentinel-script-")
    out = os.path.join(d, "events")
    script = os.path.join(d, "notify.sh")
    with open(script, "w") as f:
        f.write(f'#!/bin/sh\necho "$1|$2" >> {out}\n')
    os.chmod(script, stat.S_IRWXU)
    with cluster() as c:
        _single_sentinel_over_a_pair(c, f"sentinel notification-script mymaster {script}\n")
        c.kill("m")

        def seen() -> list[str]:
            if not os.path.exists(out):
                return []
            with open(out) as f:
                return f.read().splitlines()

        lines = wait_until(lambda: any(x.startswith("+switch-master|") for x in seen()) and seen(), 60,
                           "+switch-master to reach the script")
        types = [x.split("|")[0] for x in lines]
        assert "+sdown" in types and "+odown" in types and "+promoted-slave" in types
        assert f"+sdown|master mymaster 127.0.0.1 {c.ports['m']}" in lines


def test_its_state_survives_a_restart_after_a_failover() -> None:
    with cluster() as c:
        _single_sentinel_over_a_pair(c)
        c.kill("m")

        def switched() -> bool:
            client = redis.Redis(port=c.ports["x"], decode_responses=True)
            try:
                addr = client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
            finally:
                client.close()
            return int(addr[1]) == c.ports["r1"]

        wait_until(switched, 60, "the failover")
        time.sleep(0.5)
        c.servers["x"].proc.terminate()
        c.servers["x"].proc.wait(10)
        text = c.read_conf("x")
        assert f"sentinel monitor mymaster 127.0.0.1 {c.ports['r1']} 1" in text
        assert "sentinel config-epoch mymaster 1" in text and "sentinel current-epoch 1" in text
        assert f"sentinel known-replica mymaster 127.0.0.1 {c.ports['m']}" in text
        c.restart("x")
        client = redis.Redis(port=c.ports["x"], decode_responses=True)
        fields = client.execute_command("SENTINEL", "MASTER", "mymaster")
        client.close()
        # redis-py parses SENTINEL MASTER into a dict with typed values.
        assert int(fields["port"]) == c.ports["r1"] and int(fields["config-epoch"]) == 1


def test_it_authenticates_to_nodes_with_auth_user_and_auth_pass() -> None:
    with cluster() as c:
        c.node("m")
        master = c.ports["m"]
        admin = redis.Redis(port=master)
        # An ACL user with what a sentinel needs, and the default user locked out.
        admin.execute_command("ACL", "SETUSER", "watcher", "on", ">w-pass", "allchannels", "+@all")
        admin.execute_command("ACL", "SETUSER", "default", "off")
        admin.close()
        c.rill_sentinel("x", lambda port, d: _conf(
            port, d, f"sentinel monitor mymaster 127.0.0.1 {master} 1\nsentinel down-after-milliseconds mymaster 2000\n"
            "sentinel auth-user mymaster watcher\nsentinel auth-pass mymaster w-pass\n"))

        def linked() -> bool:
            client = redis.Redis(port=c.ports["x"], decode_responses=True)
            try:
                fields = client.execute_command("SENTINEL", "MASTER", "mymaster")
            finally:
                client.close()
            return bool(fields["runid"]) and fields["flags"] == "master" and fields["role-reported"] == "master"

        # The run id comes from INFO, which only an authenticated sentinel gets.
        wait_until(linked, 30, "the sentinel to authenticate and read the master's INFO")
        watcher = redis.Redis(port=master, username="watcher", password="w-pass", decode_responses=True)
        names = [entry["name"] for entry in watcher.client_list()]
        watcher.close()
        assert any(re.fullmatch(r"sentinel-[0-9a-f]{8}-(cmd|pubsub)", n) for n in names), names
