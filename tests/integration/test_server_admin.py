"""Server and admin commands on real Rill nodes: INFO figures that must follow what the node
does, CLIENT (LIST/KILL/UNBLOCK/REPLY/SETINFO), CONFIG changes that take effect at once
(requirepass, proto-max-bulk-len, REWRITE), DEBUG, MEMORY, MONITOR, graceful SHUTDOWN and
signals, and the clients that read these replies (redis-py, redis-cli).

Tests that change server-wide state start a private node; the others share the session node.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import redis

from tests.conformance.harness import RawConnection, encode
from tests.conftest import Server, start_rill


@pytest.fixture
def node() -> Iterator[Server]:
    """A private node for tests that change server-wide state."""
    proc = start_rill()
    yield proc
    proc.stop()


def _info(conn: RawConnection, section: str) -> dict[str, str]:
    reply = conn.call("INFO", section)
    body = reply.split(b"\r\n", 1)[1]
    out = {}
    for line in body.decode().split("\r\n"):
        if line and not line.startswith("#") and ":" in line:
            key, value = line.split(":", 1)
            out[key] = value
    return out


def _wait_for(predicate: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.01)
    raise AssertionError("condition not reached in time")


def _closed(conn: RawConnection, timeout: float = 5.0) -> bool:
    """Whether the server closed the connection (EOF) within timeout."""
    conn.sock.settimeout(timeout)
    try:
        return conn.sock.recv(1) == b""
    except ConnectionResetError:
        return True


# -- INFO -------------------------------------------------------------------------------------


def test_info_reports_version_mode_port_and_process(r: redis.Redis, rill_node: Server) -> None:
    info = r.info("server")
    assert info["redis_version"] == "8.10.0"
    assert info["redis_mode"] == "standalone"
    assert info["tcp_port"] == rill_node.port
    assert info["process_id"] == rill_node.proc.pid
    assert re.fullmatch(r"[0-9a-f]{40}", info["run_id"])
    assert info["listener0"]["port"] == rill_node.port


def test_info_is_a_bulk_string_in_resp2_and_verbatim_text_in_resp3(rill_node: Server) -> None:
    conn = RawConnection(rill_node.port)
    try:
        assert conn.call("INFO", "cluster") == b"$30\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n"
        conn.call("HELLO", "3")
        assert conn.call("INFO", "cluster") == b"=34\r\ntxt:# Cluster\r\ncluster_enabled:0\r\n\r\n"
    finally:
        conn.close()


def test_info_counts_blocked_clients_and_their_keys(rill_node: Server) -> None:
    admin, reader = RawConnection(rill_node.port), RawConnection(rill_node.port)
    try:
        reader_id = int(reader.call("CLIENT", "ID")[1:-2])
        reader.send("XREAD", "BLOCK", "0", "STREAMS", "blocked-a", "blocked-b", "$", "$")
        _wait_for(lambda: _info(admin, "clients")["blocked_clients"] == "1")
        clients = _info(admin, "clients")
        assert clients["total_blocking_keys"] == "2"
        assert clients["clients_in_timeout_table"] == "0"
        assert "flags=b" in admin.call("CLIENT", "LIST", "ID", str(reader_id)).decode()
        assert admin.call("CLIENT", "UNBLOCK", str(reader_id)) == b":1\r\n"
        assert reader.read_reply() == b"*-1\r\n"
        assert _info(admin, "clients")["blocked_clients"] == "0"
    finally:
        admin.close()
        reader.close()


def test_info_persistence_and_replication_follow_writes(r: redis.Redis) -> None:
    before = r.info("persistence")
    repl_before = r.info("replication")
    r.xadd("changes", {"f": "v"})
    after = r.info("persistence")
    repl = r.info("replication")
    assert after["rdb_changes_since_last_save"] == before["rdb_changes_since_last_save"] + 1
    assert after["rdb_last_save_time"] == r.lastsave().timestamp()
    assert repl["role"] == "master"
    assert repl["master_repl_offset"] > repl_before["master_repl_offset"]
    assert re.fullmatch(r"[0-9a-f]{40}", repl["master_replid"])
    role = r.role()
    assert role[0] == b"master" and role[1] == repl["master_repl_offset"] and role[2] == []


def test_info_stats_measure_load_and_traffic(r: redis.Redis) -> None:
    before = r.info("stats")
    deadline = time.monotonic() + 0.6
    pipe_rounds = 0
    while time.monotonic() < deadline:
        pipe = r.pipeline(transaction=False)
        for _ in range(50):
            pipe.ping()
        pipe.execute()
        pipe_rounds += 1
    after = r.info("stats")
    assert after["instantaneous_ops_per_sec"] > 0
    assert after["total_commands_processed"] >= before["total_commands_processed"] + 50 * pipe_rounds
    assert after["total_net_input_bytes"] > before["total_net_input_bytes"] + 14 * 50 * pipe_rounds
    assert after["total_net_output_bytes"] > before["total_net_output_bytes"] + 7 * 50 * pipe_rounds
    assert after["total_connections_received"] >= 1


def test_config_resetstat_zeroes_error_and_command_counters(node: Server) -> None:
    conn = RawConnection(node.port)
    try:
        conn.call("NO-SUCH-COMMAND")
        conn.call("CONFIG", "SET", "hz", "x")
        assert _info(conn, "stats")["total_error_replies"] == "2"
        assert conn.call("CONFIG", "RESETSTAT") == b"+OK\r\n"
        assert _info(conn, "stats")["total_error_replies"] == "0"
        assert _info(conn, "errorstats") == {}
        stats = _info(conn, "commandstats")
        assert stats["cmdstat_config|resetstat"].startswith("calls=1,")
        assert "cmdstat_config|set" not in stats
    finally:
        conn.close()


def test_info_memory_reports_process_memory_in_redis_units(r: redis.Redis) -> None:
    memory = r.info("memory")
    assert memory["used_memory_rss"] > 1_000_000
    assert memory["used_memory_peak"] >= memory["used_memory"]
    human = re.compile(r"\d+B|\d+\.\d\d[KMGTP]")
    for field in ("used_memory_human", "used_memory_rss_human", "total_system_memory_human", "maxmemory_human"):
        assert human.fullmatch(str(memory[field])), (field, memory[field])
    assert memory["maxmemory_human"] == "0B"


def test_info_everything_parses_with_redis_py(r: redis.Redis) -> None:
    r.ping()
    info = r.info("everything")
    assert "cmdstat_ping" in info and info["cmdstat_ping"]["calls"] >= 1
    assert info["cluster_enabled"] == 0
    assert "used_cpu_user" in info


# -- CLIENT -----------------------------------------------------------------------------------


def test_client_list_shows_names_library_and_filters(rill_node: Server) -> None:
    client = rill_node.client(client_name="worker-7")
    try:
        my_id = client.client_id()
        mine = [c for c in client.client_list() if int(c["id"]) == my_id]
        assert len(mine) == 1
        entry = mine[0]
        # redis-py announces itself with CLIENT SETINFO on connect (Redis 7.2).
        assert entry["name"] == "worker-7" and entry["lib-name"] == "redis-py" and entry["lib-ver"]
        assert entry["cmd"] == "client|list" and entry["flags"] == "N" and entry["db"] == "0"
        by_id = client.client_list(client_id=[my_id])
        assert [int(c["id"]) for c in by_id] == [my_id]
        assert my_id in [int(c["id"]) for c in client.client_list(_type="normal")]
        assert client.client_list(_type="pubsub") == []
        assert client.client_info()["id"] == my_id
    finally:
        client.close()


def test_client_list_reports_age_and_idle_seconds(rill_node: Server) -> None:
    idle, observer = RawConnection(rill_node.port), RawConnection(rill_node.port)
    try:
        idle_id = idle.call("CLIENT", "ID")[1:-2].decode()
        time.sleep(1.2)
        fields = dict(f.split("=", 1) for f in observer.call("CLIENT", "LIST", "ID", idle_id).decode().split()[1:])
        assert int(fields["age"]) >= 1 and int(fields["idle"]) >= 1, fields
        idle.call("PING")
        fields = dict(f.split("=", 1) for f in observer.call("CLIENT", "LIST", "ID", idle_id).decode().split()[1:])
        # The PING came 1.2 s after the connection: idle restarted then, so it is at least a
        # second less than the age, however long the CLIENT LIST took to come.
        assert int(fields["idle"]) <= int(fields["age"]) - 1 and fields["cmd"] == "ping", fields
    finally:
        idle.close()
        observer.close()


def test_client_setinfo_validates_and_shows_in_client_info(rill_node: Server) -> None:
    conn = RawConnection(rill_node.port)
    try:
        assert conn.call("CLIENT", "SETINFO", "LIB-NAME", "mylib") == b"+OK\r\n"
        assert conn.call("CLIENT", "SETINFO", "lib-ver", "1.2.3") == b"+OK\r\n"
        assert conn.call("CLIENT", "SETINFO", "lib-name", "a b") == (
            b"-ERR lib-name cannot contain spaces, newlines or special characters.\r\n"
        )
        assert conn.call("CLIENT", "SETINFO", "color", "red") == b"-ERR Unrecognized option 'color'\r\n"
        line = conn.call("CLIENT", "INFO").decode()
        assert " lib-name=mylib lib-ver=1.2.3\n" in line
    finally:
        conn.close()


def test_client_kill_by_id_closes_that_connection_only(rill_node: Server) -> None:
    killer, victim = RawConnection(rill_node.port), RawConnection(rill_node.port)
    try:
        victim_id = int(victim.call("CLIENT", "ID")[1:-2])
        assert killer.call("CLIENT", "KILL", "ID", str(victim_id)) == b":1\r\n"
        assert _closed(victim)
        assert killer.call("PING") == b"+PONG\r\n"
        assert killer.call("CLIENT", "KILL", "ID", str(victim_id)) == b":0\r\n"
    finally:
        killer.close()
        victim.close()


def test_client_kill_old_form_may_kill_the_caller_after_replying(rill_node: Server) -> None:
    conn = RawConnection(rill_node.port)
    try:
        addr = "%s:%d" % conn.sock.getsockname()
        assert conn.call("CLIENT", "KILL", addr) == b"+OK\r\n"
        assert _closed(conn)
    finally:
        conn.close()


def test_client_kill_filters_skip_the_caller_unless_told(rill_node: Server) -> None:
    conn = RawConnection(rill_node.port)
    try:
        my_id = conn.call("CLIENT", "ID")[1:-2].decode()
        assert conn.call("CLIENT", "KILL", "ID", my_id) == b":0\r\n"
        laddr = "127.0.0.1:%d" % rill_node.port
        addr = "%s:%d" % conn.sock.getsockname()
        assert conn.call("CLIENT", "KILL", "ADDR", addr, "LADDR", laddr, "SKIPME", "no") == b":1\r\n"
        assert _closed(conn)
    finally:
        conn.close()


def test_client_unblock_with_error_fails_the_blocked_command(rill_node: Server) -> None:
    admin, reader = RawConnection(rill_node.port), RawConnection(rill_node.port)
    try:
        reader_id = reader.call("CLIENT", "ID")[1:-2].decode()
        assert admin.call("CLIENT", "UNBLOCK", reader_id) == b":0\r\n"  # not blocked yet
        reader.send("XREAD", "BLOCK", "0", "STREAMS", "unblock-me", "$")
        _wait_for(lambda: b"flags=b" in admin.call("CLIENT", "LIST", "ID", reader_id))
        assert admin.call("CLIENT", "UNBLOCK", reader_id, "ERROR") == b":1\r\n"
        assert reader.read_reply() == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
        assert reader.call("PING") == b"+PONG\r\n"
    finally:
        admin.close()
        reader.close()


def test_client_reply_off_on_and_skip(rill_node: Server) -> None:
    conn = RawConnection(rill_node.port)
    try:
        commands = [
            ("CLIENT", "REPLY", "OFF"), ("ECHO", "hidden-1"), ("ECHO", "hidden-2"), ("CLIENT", "REPLY", "ON"),
            ("ECHO", "shown-1"), ("CLIENT", "REPLY", "SKIP"), ("ECHO", "skipped"), ("ECHO", "shown-2"),
        ]
        conn.send_raw(b"".join(encode(c) for c in commands))
        expected = b"+OK\r\n$7\r\nshown-1\r\n$7\r\nshown-2\r\n"
        received = b""
        conn.sock.settimeout(5)
        while len(received) < len(expected):
            received += conn.sock.recv(4096)
        assert received == expected
    finally:
        conn.close()


def test_client_no_evict_and_no_touch_show_in_flags(rill_node: Server) -> None:
    conn = RawConnection(rill_node.port)
    try:
        conn.call("CLIENT", "NO-EVICT", "on")
        conn.call("CLIENT", "NO-TOUCH", "on")
        assert b" flags=eT " in conn.call("CLIENT", "INFO")
        conn.call("CLIENT", "NO-EVICT", "off")
        assert b" flags=T " in conn.call("CLIENT", "INFO")
    finally:
        conn.close()


# -- MONITOR, DEBUG, MEMORY -------------------------------------------------------------------


def test_monitor_streams_other_clients_commands(rill_node: Server) -> None:
    watcher, sender = RawConnection(rill_node.port), RawConnection(rill_node.port)
    try:
        assert watcher.call("MONITOR") == b"+OK\r\n"
        sender.call("SELECT", "1")
        sender.call("ECHO", "hello world")
        sender.call("SELECT", "0")
        addr = "%s:%d" % sender.sock.getsockname()
        lines = [watcher.read_reply() for _ in range(3)]
        pattern = re.compile(rb'\+\d{10}\.\d{6} \[(\d) ' + re.escape(addr.encode()) + rb'\] (.*)\r\n')
        parsed = [pattern.fullmatch(line) for line in lines]
        assert all(parsed), lines
        assert [(m.group(1), m.group(2)) for m in parsed if m] == [
            (b"1", b'"SELECT" "1"'), (b"1", b'"ECHO" "hello world"'), (b"0", b'"SELECT" "0"')
        ]
        assert b"flags=O" in sender.call("CLIENT", "LIST", "TYPE", "normal")
    finally:
        watcher.close()
        sender.close()


def _server_time(reply: bytes) -> float:
    """A TIME reply in seconds."""
    match = re.fullmatch(rb"\*2\r\n\$\d+\r\n(\d+)\r\n\$\d+\r\n(\d+)\r\n", reply)
    assert match, reply
    return int(match[1]) + int(match[2]) / 1e6


def test_debug_sleep_blocks_the_whole_server(rill_node: Server) -> None:
    """Judged on the server's own clock: the sleeper's TIME before and after DEBUG SLEEP
    bound the sleep, and another client's TIME must not fall inside it. The sleep lasts
    0.3 s from some moment between `before` and `after - 0.3`, so it surely covers
    (after - 0.3, before + 0.3). Repeated until the other client's command came while the
    sleeper's were being served (not before them), which makes the check count."""
    sleeper, other = RawConnection(rill_node.port), RawConnection(rill_node.port)
    try:
        for _ in range(20):
            sleeper.send_raw(encode(["TIME"]) + encode(["DEBUG", "SLEEP", "0.3"]) + encode(["TIME"]))
            other_time = _server_time(other.call("TIME"))
            before = _server_time(sleeper.read_reply())
            assert sleeper.read_reply() == b"+OK\r\n"
            after = _server_time(sleeper.read_reply())
            assert after - before >= 0.3
            assert not after - 0.3 < other_time < before + 0.3, "another client was served during DEBUG SLEEP"
            if other_time > before:
                return
        pytest.fail("the other client's TIME was served before the sleeper's every time")
    finally:
        sleeper.close()
        other.close()


def test_debug_digest_is_equal_for_equal_data_on_two_nodes(node: Server, rill_node: Server) -> None:
    a, b = node.client(), rill_node.client()
    try:
        b.flushall()
        assert a.execute_command("DEBUG", "DIGEST") == b"0" * 40
        for client in (a, b):
            for i in range(1, 50):
                client.xadd("events", {"n": str(i)}, id=f"{i}-0")
            client.xdel("events", "49-0")
            client.set("greeting", "hello")
        assert a.execute_command("DEBUG", "DIGEST") == b.execute_command("DEBUG", "DIGEST") != b"0" * 40
        # Same entries, different last ID: the stream counters are part of the digest.
        a.xadd("s", {"f": "v"}, id="1-0")
        b.xadd("s", {"f": "v"}, id="1-0")
        b.xadd("s", {"f": "v"}, id="2-0")
        b.xdel("s", "2-0")
        assert a.xrange("s") == b.xrange("s")
        assert a.execute_command("DEBUG", "DIGEST-VALUE", "s") != b.execute_command("DEBUG", "DIGEST-VALUE", "s")
        assert a.execute_command("DEBUG", "DIGEST") != b.execute_command("DEBUG", "DIGEST")
        assert a.execute_command("DEBUG", "DIGEST-VALUE", "missing") == [b"0" * 40]
    finally:
        a.close()
        b.close()


def test_memory_usage_grows_with_the_stream_and_memory_stats_is_a_map(r: redis.Redis, rill_node: Server) -> None:
    r.xadd("mem", {"f": "v"})
    small = r.memory_usage("mem")
    for i in range(500):
        r.xadd("mem", {"field": "x" * 50, "n": str(i)})
    large = r.memory_usage("mem")
    assert 0 < small < large
    assert r.memory_usage("missing") is None
    r3 = rill_node.client(protocol=3)
    try:
        stats = r3.memory_stats()
        assert stats["keys.count"] >= 1 and stats["total.allocated"] > 0
        assert isinstance(stats["dataset.percentage"], float)
    finally:
        r3.close()


# -- CONFIG that takes effect at once -----------------------------------------------------------


def test_config_set_requirepass_keeps_authenticated_sessions(node: Server) -> None:
    old = RawConnection(node.port)
    try:
        assert old.call("CONFIG", "SET", "requirepass", "s3cret") == b"+OK\r\n"
        assert old.call("PING") == b"+PONG\r\n"  # already in: not locked out
        new = RawConnection(node.port)
        try:
            assert new.call("PING") == b"-NOAUTH Authentication required.\r\n"
            assert new.call("AUTH", "wrong") == b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
            assert new.call("AUTH", "s3cret") == b"+OK\r\n"
            # After AUTH the pre-authentication request limits no longer apply.
            big = "x" * 100_000
            assert new.call("ECHO", big) == b"$100000\r\n" + big.encode() + b"\r\n"
        finally:
            new.close()
        waiting = RawConnection(node.port)
        try:
            assert waiting.call("PING").startswith(b"-NOAUTH")
            assert old.call("CONFIG", "SET", "requirepass", "") == b"+OK\r\n"
            assert waiting.call("PING") == b"+PONG\r\n"  # no password: no AUTH needed
        finally:
            waiting.close()
    finally:
        old.close()


def test_config_set_proto_max_bulk_len_applies_to_open_connections(node: Server) -> None:
    open_before = RawConnection(node.port)
    admin = RawConnection(node.port)
    try:
        assert admin.call("CONFIG", "SET", "proto-max-bulk-len", "1mb") == b"+OK\r\n"
        assert admin.call("CONFIG", "GET", "proto-max-bulk-len") == b"*2\r\n$18\r\nproto-max-bulk-len\r\n$7\r\n1048576\r\n"
        for conn in (open_before, RawConnection(node.port)):
            ok = "y" * 1_000_000
            assert conn.call("ECHO", ok).endswith(b"\r\n")
            conn.send_raw(b"*2\r\n$4\r\nECHO\r\n$2000000\r\n")
            assert conn.read_reply() == b"-ERR Protocol error: invalid bulk length\r\n"
            assert _closed(conn)
            conn.close()
    finally:
        admin.close()


def test_config_rewrite_writes_the_config_file(tmp_path: object) -> None:
    workdir = str(tmp_path)
    conf = os.path.join(workdir, "rill.conf")
    with open(conf, "w") as f:
        f.write("# test configuration\nmaxclients 500\n")
    proc = _start_with_config(conf, workdir)
    try:
        client = proc.client()
        assert client.config_get("maxclients") == {"maxclients": "500"}
        client.config_set("maxclients", "77")
        client.config_set("stream-node-max-entries", "42")
        assert client.config_rewrite()
        client.close()
    finally:
        proc.stop()
    with open(conf) as f:
        text = f.read()
    assert "maxclients 77" in text and "stream-node-max-entries 42" in text
    proc = _start_with_config(conf, workdir)
    try:
        client = proc.client()
        assert client.config_get("maxclients") == {"maxclients": "77"}
        assert client.config_get("stream-node-max-entries") == {"stream-node-max-entries": "42"}
        assert client.info("server")["config_file"] == os.path.realpath(conf)
        client.close()
    finally:
        proc.stop()


def test_config_rewrite_keeps_a_value_with_newlines_and_quotes_on_one_line(tmp_path: object) -> None:
    # A value must not spill onto a line of its own (which would inject a directive).
    workdir = str(tmp_path)
    conf = os.path.join(workdir, "rill.conf")
    with open(conf, "w") as f:
        f.write("maxclients 500\n")
    secret = 'a\ndir /nowhere "q" \\ \x01 \u00e9'
    proc = _start_with_config(conf, workdir)
    try:
        client = proc.client()
        client.config_set("requirepass", secret)
        client.auth(secret)
        assert client.config_rewrite()
        client.close()
    finally:
        proc.stop()
    with open(conf) as f:
        lines = f.read().splitlines()
    assert not any(line.startswith("dir /nowhere") for line in lines)
    proc = _start_with_config(conf, workdir)
    try:
        client = proc.client(password=secret)
        assert client.config_get("requirepass") == {"requirepass": secret}
        client.close()
    finally:
        proc.stop()


def _start_with_config(conf: str, workdir: str) -> Server:
    from tests.conftest import ROOT, free_port, wait_for_port

    port = free_port()
    args = [sys.executable, "-m", "node.main", "node", conf, "--port", str(port),
            "--logfile", os.path.join(workdir, "server.log")]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for_port(port, proc)
    return Server("rill", port, proc, workdir, args)


# -- shutdown -----------------------------------------------------------------------------------


def _command_reply_size(port: int) -> int:
    conn = RawConnection(port)
    try:
        return len(conn.call("COMMAND"))
    finally:
        conn.close()


def _kernel_send_buffer_max() -> int:
    with open("/proc/sys/net/ipv4/tcp_wmem") as f:
        return int(f.read().split()[2])


def test_shutdown_flushes_pending_replies_and_exits_zero(node: Server) -> None:
    size = _command_reply_size(node.port)
    # More replies than the kernel's socket buffers hold, so the server must keep some: the
    # node's send buffer grows up to tcp_wmem's maximum (with BBR it does, even towards a
    # reader with a 4 KB receive buffer). Every request arrives in one read, so every command
    # runs whatever the server then holds.
    rounds = (_kernel_send_buffer_max() + 1_000_000) // size
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(("127.0.0.1", node.port))
    slow.sendall(encode(["COMMAND"]) * rounds)
    caller = RawConnection(node.port)
    try:
        # The server has run every command and holds replies it could not send yet.
        _wait_for(lambda: int(_info(caller, "clients")["client_recent_max_output_buffer"]) > 100_000)
        assert _info(caller, "clients")["connected_clients"] == "2"
        caller.send("SHUTDOWN")
        assert _closed(caller, timeout=10)  # no reply on success, as in Redis
        received = 0
        slow.settimeout(10)
        while True:
            chunk = slow.recv(1 << 20)
            if not chunk:
                break
            received += len(chunk)
        assert received == size * rounds
        assert node.proc.wait(10) == 0
        log = node.log
        assert re.search(r"Shutdown \(SHUTDOWN from client id=\d+ addr=127\.0\.0\.1:\d+\): closed 2 client", log), log
    finally:
        slow.close()
        caller.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_shuts_down_gracefully(sig: signal.Signals) -> None:
    proc = start_rill()
    conn = RawConnection(proc.port)
    try:
        assert conn.call("PING") == b"+PONG\r\n"
        proc.proc.send_signal(sig)
        assert proc.proc.wait(10) == 0
        assert _closed(conn)
        assert f"Shutdown ({sig.name}): closed 1 client connection(s)" in proc.log
        lines = [line for line in proc.log.splitlines() if "Shutdown" in line or "bye" in line]
        assert len(lines) == 1, lines
    finally:
        conn.close()
        proc.kill()


def test_shutdown_is_refused_inside_multi_and_keeps_serving(node: Server) -> None:
    conn = RawConnection(node.port)
    try:
        assert conn.call("MULTI") == b"+OK\r\n"
        assert conn.call("SHUTDOWN") == b"-ERR Command not allowed inside a transaction\r\n"
        assert conn.call("DISCARD") == b"+OK\r\n"
        assert conn.call("SHUTDOWN", "ABORT") == b"-ERR No shutdown in progress.\r\n"
        assert conn.call("PING") == b"+PONG\r\n"
        conn.send("SHUTDOWN", "NOSAVE", "NOW", "FORCE")
        assert _closed(conn)
        assert node.proc.wait(10) == 0
    finally:
        conn.close()


# -- clients that read these replies ---------------------------------------------------------


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_parses_admin_replies(rill_node: Server, protocol: int) -> None:
    client = rill_node.client(protocol=protocol)
    try:
        table = client.command()
        assert table["xadd"]["arity"] == -5 and "write" in table["xadd"]["flags"]
        assert client.command_count() == len(table)
        # redis-py decodes some of these replies in one protocol and not in the other.
        assert [_text(k) for k in client.command_getkeys("XADD", "s", "*", "f", "v")] == ["s"]
        config = {_text(k): _text(v) for k, v in client.config_get("stream-node-*").items()}
        assert config == {"stream-node-max-entries": "100", "stream-node-max-bytes": "4096"}
        seconds, micros = client.time()
        assert abs(seconds - time.time()) < 5 and 0 <= micros < 1_000_000
        assert client.slowlog_get() == [] and client.slowlog_len() == 0
        assert client.info("keyspace") is not None
        assert client.client_getname() is None
    finally:
        client.close()


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def test_redis_cli_interactive_session_loads_command_docs(node: Server) -> None:
    binary = shutil.which("redis-cli")
    assert binary, "redis-cli is installed by `make system-deps`"
    pid, fd = pty.fork()
    if pid == 0:  # the child: redis-cli on a terminal, as a person runs it
        os.execve(binary, [binary, "-p", str(node.port)], {**os.environ, "REDISCLI_HISTFILE": "/dev/null"})
    output = b""

    def pump(until: bytes, timeout: float = 10.0) -> bool:
        nonlocal output
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    return until in output
                output += chunk
                # linenoise asks the terminal where the cursor is; answer as a terminal would.
                for _ in range(chunk.count(b"\x1b[6n")):
                    os.write(fd, b"\x1b[1;80R")
                if until in output:
                    return True
        return False

    try:
        assert pump(b"> "), output
        os.write(fd, b"ping\r")
        assert pump(b"PONG"), output
    finally:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        os.close(fd)
    conn = RawConnection(node.port)
    try:
        # redis-cli builds its command hints from COMMAND DOCS when a session starts.
        assert _info(conn, "commandstats")["cmdstat_command|docs"].startswith("calls=1,")
    finally:
        conn.close()
