"""`rill node` as a process: start-up time, the redis-server style flags (--port --bind
--requirepass --dir --databases --maxclients --loglevel --logfile), a redis.conf-syntax
config file, and the fatal configuration errors that must exit with status 1.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time

import pytest
import redis

from tests.conformance.harness import RawConnection
from tests.conftest import ROOT, Server, free_port, start_rill, wait_for_port


def _rill_args(*args: str) -> list[str]:
    return [sys.executable, "-m", "node.main", "node", *args]


def _run_failing(*args: str) -> subprocess.CompletedProcess[str]:
    """Run a node that must refuse to start; it has 10 s to exit."""
    return subprocess.run(_rill_args(*args), cwd=ROOT, capture_output=True, text=True, timeout=10)


def _start(*args: str, workdir: str | None = None) -> Server:
    """A node started with exactly `args` (a config file may come first), logging to workdir."""
    workdir = workdir or tempfile.mkdtemp(prefix="rill-proc-")
    port = free_port()
    full = _rill_args(*args, "--port", str(port), "--logfile", os.path.join(workdir, "server.log"))
    proc = subprocess.Popen(full, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for_port(port, proc)
    return Server("rill", port, proc, workdir, full)


def test_a_node_starts_answers_and_exits_cleanly_on_sigterm() -> None:
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="rill-startup-")
    proc = subprocess.Popen(
        _rill_args("--port", str(port), "--dir", workdir, "--logfile", os.path.join(workdir, "server.log")),
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc, timeout=30)
        conn = RawConnection(port)
        assert conn.call("PING") == b"+PONG\r\n"
        conn.close()
    finally:
        proc.terminate()
        assert proc.wait(30) == 0


def test_flags_set_port_databases_maxclients_and_dir() -> None:
    workdir = os.path.realpath(tempfile.mkdtemp(prefix="rill-flags-"))
    node = start_rill("--databases", "4", "--maxclients", "2", dir=workdir)
    try:
        first = RawConnection(node.port)
        assert first.call("CONFIG", "GET", "databases") == b"*2\r\n$9\r\ndatabases\r\n$1\r\n4\r\n"
        assert first.call("SELECT", "3") == b"+OK\r\n"
        assert first.call("SELECT", "4") == b"-ERR DB index is out of range\r\n"
        # Redis reports the data directory as an absolute path, and runs inside it.
        dir_reply = first.call("CONFIG", "GET", "dir")
        assert dir_reply.endswith(workdir.encode() + b"\r\n")
        second = RawConnection(node.port)
        assert second.call("PING") == b"+PONG\r\n"
        third = RawConnection(node.port)
        assert third.read_reply() == b"-ERR max number of clients reached\r\n"
        for conn in (first, second, third):
            conn.close()
        assert "ready" in node.log
    finally:
        assert node.stop() == 0


def _wait_for_address(host: str, port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the node exited"
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise TimeoutError(f"nothing listening on {host}:{port}")


def test_bind_listens_on_the_given_address_only() -> None:
    workdir = tempfile.mkdtemp(prefix="rill-bind-")
    port = free_port()
    args = _rill_args("--port", str(port), "--bind", "127.0.0.2", "--logfile", os.path.join(workdir, "server.log"))
    node = Server("rill", port, subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), workdir, args)
    try:
        _wait_for_address("127.0.0.2", port, node.proc)
        client = redis.Redis(host="127.0.0.2", port=node.port)
        assert client.ping()
        client.close()
        with pytest.raises(redis.ConnectionError):
            redis.Redis(host="127.0.0.1", port=node.port, socket_connect_timeout=2).ping()
    finally:
        node.stop()


def test_requirepass_flag_requires_auth() -> None:
    node = start_rill("--requirepass", "pa ss")
    try:
        conn = RawConnection(node.port)
        assert conn.call("PING") == b"-NOAUTH Authentication required.\r\n"
        assert conn.call("AUTH", "pa ss") == b"+OK\r\n"
        assert conn.call("PING") == b"+PONG\r\n"
        conn.close()
        assert node.client(password="pa ss").ping()
    finally:
        node.stop()


def test_loglevel_and_logfile_flags_control_the_log() -> None:
    quiet = start_rill("--loglevel", "warning")
    verbose = start_rill("--loglevel", "verbose")
    try:
        for node in (quiet, verbose):
            client = node.client()
            assert client.ping()  # start-up, and its log line, are done once a command ran
            client.close()
        assert "ready" not in quiet.log  # the start-up line is a notice
        assert "ready: pid=%d port=%d" % (verbose.proc.pid, verbose.port) in verbose.log
    finally:
        assert quiet.stop() == 0
        assert verbose.stop() == 0
    # A warning-level event (the shutdown line) is still written at "warning".
    assert "Shutdown (SIGTERM)" in quiet.log


def test_config_file_in_redis_conf_syntax_then_flags_override_it() -> None:
    workdir = tempfile.mkdtemp(prefix="rill-conf-")
    conf = os.path.join(workdir, "rill.conf")
    with open(conf, "w") as f:
        f.write(
            "# Rill test configuration\n"
            "\n"
            "maxclients 123\n"
            'requirepass "with space"\n'
            "stream-node-max-entries 50\n"
            "   hz 20   \n"
            "client-output-buffer-limit pubsub 64mb 16mb 90\n"
            'save ""\n'
        )
    node = _start(conf, "--stream-node-max-entries", "77", workdir=workdir)
    try:
        client = node.client(password="with space", decode_responses=True)
        assert client.config_get("maxclients") == {"maxclients": "123"}
        assert client.config_get("stream-node-max-entries") == {"stream-node-max-entries": "77"}
        assert client.config_get("hz") == {"hz": "20"}
        assert client.config_get("client-output-buffer-limit") == {
            "client-output-buffer-limit": "normal 0 0 0 slave 268435456 67108864 60 pubsub 67108864 16777216 90"
        }
        assert client.info("server")["config_file"] == os.path.realpath(conf)
        client.close()
    finally:
        assert node.stop() == 0


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ("port 7000\nbogus-directive yes\n", ["at line 2", ">>> 'bogus-directive yes'", "Bad directive or wrong number of arguments"]),
        ("maxclients abc\n", ["at line 1", ">>> 'maxclients abc'", "argument couldn't be parsed into an integer"]),
        ("maxclients 1 2\n", ["at line 1", "Bad directive or wrong number of arguments"]),
        ('requirepass "unbalanced\n', ["at line 1", "Unbalanced quotes in configuration line"]),
        ("loglevel loud\n", ["argument(s) must be one of the following: debug, verbose, notice, warning, nothing"]),
    ],
    ids=["unknown-directive", "bad-integer", "too-many-arguments", "unbalanced-quotes", "bad-enum"],
)
def test_a_bad_config_file_exits_1_with_a_clear_error(lines: str, expected: list[str]) -> None:
    workdir = tempfile.mkdtemp(prefix="rill-badconf-")
    conf = os.path.join(workdir, "bad.conf")
    with open(conf, "w") as f:
        f.write(lines)
    result = _run_failing(conf)
    assert result.returncode == 1
    assert result.stderr.startswith("*** FATAL CONFIG FILE ERROR (Rill "), result.stderr
    assert f"Reading the configuration file {conf}," in result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--bogus", "1"], ["Reading the command line, at --bogus", ">>> 'bogus \"1\"'", "Bad directive"]),
        (["--maxclients", "abc"], [">>> 'maxclients \"abc\"'", "argument couldn't be parsed into an integer"]),
        (["--port", "70000"], ["argument must be between 0 and 65535 inclusive"]),
        (["--port", "1", "2"], ["Bad directive or wrong number of arguments"]),
        (["--dir", "/nonexistent/rill"], ["Can't chdir to '/nonexistent/rill': No such file or directory"]),
        (["/nonexistent/rill.conf"], ["Fatal error, can't open config file '/nonexistent/rill.conf': No such file or directory"]),
    ],
    ids=["unknown-flag", "bad-integer", "out-of-range", "too-many-values", "missing-dir", "missing-config-file"],
)
def test_a_bad_flag_exits_1_with_a_clear_error(args: list[str], expected: list[str]) -> None:
    result = _run_failing(*args)
    assert result.returncode == 1
    assert result.stderr.startswith("*** FATAL CONFIG FILE ERROR (Rill "), result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr


def test_a_port_in_use_exits_1() -> None:
    holder = start_rill()
    try:
        result = _run_failing("--port", str(holder.port), "--logfile", os.path.join(holder.dir, "second.log"))
        assert result.returncode == 1
        with open(os.path.join(holder.dir, "second.log")) as f:
            assert "Could not start" in f.read()
    finally:
        holder.stop()
