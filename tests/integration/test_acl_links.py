"""ACL users on the links between processes: a replica authenticating to its primary as a user
that may only replicate (masteruser/masterauth; +psync +replconf +info), refused with the
reason in both logs when its rules or password do not allow it, and `rill sentinel`s that
reach the nodes as an ACL user (sentinel auth-user/auth-pass), reach each other as one
(sentinel sentinel-user/sentinel-pass), serve ACL themselves (user lines, ACL SETUSER, kept
across a config rewrite) and fail over with only the commands a sentinel needs."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator

import pytest
import redis

from tests.conformance.sentinel.procs import cluster, wait_until
from tests.conftest import Server, start_rill

ADMIN = {"username": "admin", "password": "apw"}
USERS = (
    "user default off\n"
    "user admin on >apw ~* &* +@all\n"
    "user replica on >rpw -@all +psync +replconf +info\n"
    # What a sentinel runs on a node (Redis's documented sentinel user, and FENCE for fenced mode).
    "user sentinel on >spw allchannels -@all +multi +slaveof +ping +exec +subscribe +config|rewrite +role +publish "
    "+info +client|setname +client|kill +script|kill +fence\n"
)


def _conf(extra: str = "") -> str:
    fd, path = tempfile.mkstemp(prefix="rill-acl-", suffix=".conf")
    with os.fdopen(fd, "w") as f:
        f.write(USERS + extra)
    return path


def _admin(proc: Server) -> redis.Redis:
    return proc.client(decode_responses=True, **ADMIN)


def _log_entries(client: redis.Redis) -> list[dict[str, object]]:
    return [dict(e) for e in client.acl_log()]


@pytest.fixture
def primary() -> Iterator[Server]:
    node = start_rill(config=_conf())
    yield node
    node.stop()


def _replica(primary: Server, user: str, password: str) -> Server:
    return start_rill("--replicaof", "127.0.0.1", str(primary.port), "--masteruser", user, "--masterauth", password,
                      config=_conf())


def _link_status(replica: Server) -> str:
    return str(_admin(replica).info("replication")["master_link_status"])


def test_a_replica_replicates_as_a_user_that_may_only_replicate(primary: Server) -> None:
    replica = _replica(primary, "replica", "rpw")
    try:
        wait_until(lambda: _link_status(replica) == "up", 30, "the replica's link")
        writer = _admin(primary)
        writer.xadd("orders", {"n": "1"}, id="1-1")
        wait_until(lambda: _admin(replica).xlen("orders") == 1, 30, "the write to reach the replica")
        # The user can do nothing else.
        app = primary.client(username="replica", password="rpw")
        with pytest.raises(redis.exceptions.NoPermissionError):
            app.xadd("orders", {"n": "2"})
        with pytest.raises(redis.exceptions.NoPermissionError):
            app.config_get("masterauth")
        app.close()
        # (The server may see that close after the kill below: wait for it, or it counts two.)
        wait_until(lambda: all(c["user"] != "replica" for c in writer.client_list(_type="normal")), 30,
                   "the server to see the client's close")
        # Its replica stream is a client of user `replica` for CLIENT KILL USER.
        assert writer.execute_command("CLIENT", "KILL", "USER", "replica") == 1
        # Without REPLCONF the next hello is refused: the link stays down, both sides say why.
        writer.execute_command("ACL", "SETUSER", "replica", "-replconf")
        writer.execute_command("CLIENT", "KILL", "USER", "replica")
        wait_until(lambda: "no permissions to run the 'replconf' command" in replica.log, 30, "the refusal")
        assert _link_status(replica) == "down"
        entry = _log_entries(writer)[0]
        assert (entry["reason"], entry["object"], entry["username"]) == ("command", "replconf", "replica")
        writer.execute_command("ACL", "SETUSER", "replica", "+replconf")
        wait_until(lambda: _link_status(replica) == "up", 60, "the link back once allowed")
        writer.xadd("orders", {"n": "3"}, id="3-1")
        wait_until(lambda: _admin(replica).xlen("orders") == 2, 30, "the next write")
        writer.close()
    finally:
        replica.stop()


def test_a_replica_with_a_wrong_password_is_refused_and_logged(primary: Server) -> None:
    replica = _replica(primary, "replica", "wrong")
    try:
        wait_until(lambda: "WRONGPASS" in replica.log, 30, "the replica to report the refusal")
        assert _link_status(replica) == "down"
        entries = _log_entries(_admin(primary))
        assert entries and (entries[0]["reason"], entries[0]["username"]) == ("auth", "replica")
    finally:
        replica.stop()


def test_the_default_user_may_not_replicate_without_psync(primary: Server) -> None:
    """A replica without masteruser is the default user; here default is off, then on but
    without PSYNC: refused both ways."""
    replica = start_rill("--replicaof", "127.0.0.1", str(primary.port), config=_conf())
    try:
        wait_until(lambda: "NOAUTH" in replica.log, 30, "the refusal of an unauthenticated replica")
        _admin(primary).execute_command("ACL", "SETUSER", "default", "on", "nopass", "+@all", "-psync")
        wait_until(lambda: "no permissions to run the 'psync' command" in replica.log, 60, "the refusal without PSYNC")
        assert _link_status(replica) == "down"
    finally:
        replica.stop()


def _sentinel_conf(port: int, d: str, master: int, down_after: int = 2000) -> str:
    return (
        f"port {port}\nbind 127.0.0.1\ndir {d}\nlogfile {d}/sentinel.log\n"
        "user default off\nuser admin on >apw +@all\nuser peer on >ppw +@all\n"
        f"sentinel monitor mymaster 127.0.0.1 {master} 2\n"
        f"sentinel down-after-milliseconds mymaster {down_after}\nsentinel failover-timeout mymaster 10000\n"
        "sentinel auth-user mymaster sentinel\nsentinel auth-pass mymaster spw\n"
        "sentinel sentinel-user peer\nsentinel sentinel-pass ppw\n"
    )


def test_sentinels_with_acl_users_monitor_reach_each_other_and_fail_over() -> None:
    primary = start_rill(config=_conf())
    replica = _replica(primary, "replica", "rpw")
    try:
        wait_until(lambda: _link_status(replica) == "up", 30, "the replica's link")
        with cluster() as c:
            for name in ("s1", "s2"):
                c.rill_sentinel(name, lambda port, d: _sentinel_conf(port, d, primary.port))
            admins = {name: redis.Redis(port=c.ports[name], decode_responses=True, **ADMIN) for name in ("s1", "s2")}
            # A sentinel's own ACL: the default user is off, ACL answers as a node's.
            anonymous = redis.Redis(port=c.ports["s1"])
            with pytest.raises(redis.exceptions.AuthenticationError):
                anonymous.ping()
            anonymous.close()
            assert admins["s1"].execute_command("ACL", "WHOAMI") == "admin"
            assert "user peer on" in " ".join(admins["s1"].execute_command("ACL", "LIST"))

            def peers_healthy() -> bool:
                for client in admins.values():
                    sentinels = client.execute_command("SENTINEL", "SENTINELS", "mymaster")
                    if len(sentinels) != 1 or "s_down" in sentinels[0]["flags"]:
                        return False
                    if client.execute_command("SENTINEL", "MASTER", "mymaster")["flags"] != "master":
                        return False
                return True

            # Each reached the other (sentinel-user) and the master (auth-user): nothing is
            # down after several down-after periods.
            wait_until(peers_healthy, 30, "the sentinels to see each other and the master")
            time.sleep(5)
            assert peers_healthy()
            assert admins["s1"].execute_command("SENTINEL", "FAILOVER", "mymaster") == "OK"

            def promoted() -> bool:
                addr = admins["s2"].execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
                return addr is not None and int(addr[1]) == replica.port

            wait_until(promoted, 60, "the failover")
            assert _admin(replica).info("replication")["role"] == "master"
            # CONFIG REWRITE (sent by the sentinel inside its MULTI) kept the node's users.
            # A rewrite of the sentinel's file keeps its users.
            admins["s1"].execute_command("ACL", "SETUSER", "extra", "on", ">x", "+ping")
            admins["s1"].execute_command("SENTINEL", "FLUSHCONFIG")
            text = c.read_conf("s1")
            assert "user extra on sanitize-payload #" in text and "user peer on" in text and "user default off" in text
            for client in admins.values():
                client.close()
    finally:
        replica.stop()
        primary.stop()
