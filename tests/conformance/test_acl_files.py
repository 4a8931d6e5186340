"""Differential tests of where ACL users are kept: `user` lines of the configuration file (and
CONFIG REWRITE writing them back), the ACL file (`aclfile`, ACL LOAD, ACL SAVE), their
errors (a bad line refuses start-up, a bad ACL file changes nothing) and acl-pubsub-default.
Each test starts redis-server and a Rill node on the same files and compares what they
answer and write, with Redis 7.0's differences normalised as in test_acl.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

from bench.procs import free_port
from tests.conformance.harness import RawConnection
from tests.conformance.stream_support import as_dict, items, parse
from tests.conformance.test_acl import acl_list, as_72, same_description
from tests.conftest import ROOT, Server, start_redis, start_rill

USER_ACL = (
    "user alice on allcommands allkeys &* >alice\n"
    "user bob on -@all +@stream +acl ~set* &* >bob\n"
    "user default on nopass ~* &* +@all\n"
)


@pytest.fixture
def workdirs() -> Iterator[tuple[str, str]]:
    dirs = (tempfile.mkdtemp(prefix="acl-redis-"), tempfile.mkdtemp(prefix="acl-rill-"))
    yield dirs
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


def _write(d: str, name: str, text: str) -> str:
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def _both(workdirs: tuple[str, str], *, conf: str = "", acl: str | None = None, extra: tuple[str, ...] = ()
          ) -> tuple[Server, Server]:
    procs = []
    for d, start in zip(workdirs, (start_redis, start_rill)):
        args = list(extra)
        if acl is not None:
            _write(d, "users.acl", acl)
            args += ["--aclfile", os.path.join(d, "users.acl")]
        config = _write(d, "node.conf", conf) if conf else None
        procs.append(start(*args, dir=d, config=config))  # type: ignore[operator]
    return procs[0], procs[1]


def _stop(*procs: Server) -> None:
    for p in procs:
        p.stop()


def _lists_match(oracle: RawConnection, rill: RawConnection) -> None:
    theirs, ours = acl_list(oracle), acl_list(rill)
    assert len(theirs) == len(ours), (theirs, ours)
    for t, o in zip(theirs, ours):
        assert same_description(t, o), f"\n  redis: {t!r}\n  rill:  {o!r}"


def _user_lines(path: str) -> list[bytes]:
    with open(path, "rb") as f:
        return [line for line in f.read().split(b"\n") if line.startswith(b"user ")]


def _conns(a: Server, b: Server) -> tuple[RawConnection, RawConnection]:
    return RawConnection(a.port), RawConnection(b.port)


def test_users_come_from_the_acl_file_at_start_up(workdirs: tuple[str, str]) -> None:
    oracle, rill = _both(workdirs, acl=USER_ACL)
    try:
        o, r = _conns(oracle, rill)
        _lists_match(o, r)
        for args in (("alice", "SET", "k", "v"), ("bob", "XADD", "set1", "*", "f", "v"), ("bob", "XADD", "x", "*", "f", "v"),
                     ("bob", "GET", "set1"), ("bob", "ACL", "WHOAMI")):
            assert r.call("ACL", "DRYRUN", *args) == as_72(o.call("ACL", "DRYRUN", *args), args[0])
        for conn in (o, r):
            assert conn.call("AUTH", "alice", "alice") == b"+OK\r\n"
    finally:
        _stop(oracle, rill)


def test_acl_save_writes_the_file_and_acl_load_reads_it_back(workdirs: tuple[str, str]) -> None:
    oracle, rill = _both(workdirs, acl=USER_ACL)
    try:
        o, r = _conns(oracle, rill)
        for conn in (o, r):
            assert conn.call("ACL", "SETUSER", "eve", "+get", "allkeys", ">eve", "on") == b"+OK\r\n"
            assert conn.call("ACL", "SAVE") == b"+OK\r\n"
        theirs = _user_lines(os.path.join(workdirs[0], "users.acl"))
        ours = _user_lines(os.path.join(workdirs[1], "users.acl"))
        assert [line.split(b" ")[1] for line in ours] == [line.split(b" ")[1] for line in theirs]
        for t, line in zip(theirs, ours):
            assert same_description(t, line), (t, line)
        # ACL LOAD replaces every user but default in place: the other users' clients go.
        alice = _conns(oracle, rill)
        for conn in alice:
            assert conn.call("AUTH", "alice", "alice") == b"+OK\r\n"
        for conn in (o, r):
            assert conn.call("ACL", "LOAD") == b"+OK\r\n"
        for conn in alice:
            conn.sock.settimeout(5)
            with pytest.raises((ConnectionError, OSError)):
                conn.call("PING")
        _lists_match(o, r)
        assert r.call("ACL", "DRYRUN", "eve", "GET", "k") == b"+OK\r\n"
    finally:
        _stop(oracle, rill)


@pytest.mark.parametrize(
    "corruption",
    [
        "user alice on nopass ~* -@all\n",  # a duplicate
        "user default on nopass ~* -@all\n",  # the default user twice
        "user carol on +nosuchcommand\n",
        "user carol on bogus\n",
        "user carol on bogus allkeys ~a +nosuch\n",
        "usr carol on\n",
        "user\n",
        "user carol on #nothex\n",
    ],
    ids=["duplicate", "duplicate-default", "unknown-command", "syntax", "several", "keyword", "no-name", "hash"],
)
def test_a_bad_acl_file_is_refused_whole_and_changes_nothing(workdirs: tuple[str, str], corruption: str) -> None:
    oracle, rill = _both(workdirs, acl=USER_ACL)
    try:
        o, r = _conns(oracle, rill)
        for d in workdirs:
            _write(d, "users.acl", USER_ACL + corruption)
        theirs, ours = o.call("ACL", "LOAD"), r.call("ACL", "LOAD")
        # The text names each server's own file.
        assert ours.replace(workdirs[1].encode(), b"D") == theirs.replace(workdirs[0].encode(), b"D")
        assert ours.startswith(b"-ERR ")
        _lists_match(o, r)
    finally:
        _stop(oracle, rill)


def test_an_unclosed_selector_in_the_acl_file_is_refused(workdirs: tuple[str, str]) -> None:
    """Redis (7.0 and 7.2) crashes here: ACLLoadFromFile goes on with the selector arguments
    it just freed. Rill refuses the file with the error Redis puts together first."""
    rill = start_rill("--aclfile", _write(workdirs[1], "users.acl", USER_ACL), dir=workdirs[1])
    try:
        r = RawConnection(rill.port)
        before = acl_list(r)
        _write(workdirs[1], "users.acl", USER_ACL + "user carol on (~a +get\n")
        reply = r.call("ACL", "LOAD")
        path = os.path.join(workdirs[1], "users.acl")
        assert reply == (f"-ERR {path}:4: Unmatched parenthesis in selector definition.WARNING: ACL errors detected, "
                         "no change to the previously active ACL rules was performed\r\n").encode()
        assert acl_list(r) == before
    finally:
        rill.stop()


def test_acl_load_of_a_missing_file_says_so(workdirs: tuple[str, str]) -> None:
    oracle, rill = _both(workdirs, acl=USER_ACL)
    try:
        o, r = _conns(oracle, rill)
        for d in workdirs:
            os.unlink(os.path.join(d, "users.acl"))
        theirs, ours = o.call("ACL", "LOAD"), r.call("ACL", "LOAD")
        assert ours.replace(workdirs[1].encode(), b"D") == theirs.replace(workdirs[0].encode(), b"D")
    finally:
        _stop(oracle, rill)


CONF_USERS = (
    "user default on nopass ~* &* +@all -flushdb\n"
    "user app on >app-pw ~orders:* resetchannels +@stream +ping\n"
    "user ops on >ops-pw ~* &* +@all -flushall -config|set\n"
)


def test_user_lines_are_loaded_and_config_rewrite_keeps_them(workdirs: tuple[str, str]) -> None:
    oracle, rill = _both(workdirs, conf="# users\n" + CONF_USERS + "maxclients 100\n")
    try:
        o, r = _conns(oracle, rill)
        _lists_match(o, r)
        assert r.call("FLUSHDB") == as_72(o.call("FLUSHDB"), "default") == (
            b"-NOPERM User default has no permissions to run the 'flushdb' command\r\n")
        for conn in (o, r):
            assert conn.call("ACL", "SETUSER", "late", "on", ">l", "+get") == b"+OK\r\n"
            assert conn.call("ACL", "DELUSER", "ops") == b":1\r\n"
            assert conn.call("CONFIG", "REWRITE") == b"+OK\r\n"
        theirs = _user_lines(os.path.join(workdirs[0], "node.conf"))
        ours = _user_lines(os.path.join(workdirs[1], "node.conf"))
        assert len(theirs) == len(ours) == 3
        for t, line in zip(theirs, ours):
            assert same_description(t, line), (t, line)
        with open(os.path.join(workdirs[1], "node.conf")) as f:
            text = f.read()
        assert text.startswith("# users\nuser app on ")  # the first user line kept its place
    finally:
        _stop(oracle, rill)
    # Restarted on their rewritten files, both have the same users again.
    oracle = start_redis(dir=workdirs[0], config=os.path.join(workdirs[0], "node.conf"))
    rill = start_rill(dir=workdirs[1], config=os.path.join(workdirs[1], "node.conf"))
    try:
        o, r = _conns(oracle, rill)
        _lists_match(o, r)
        assert r.call("ACL", "DRYRUN", "default", "FLUSHDB").startswith(b"$")
    finally:
        _stop(oracle, rill)


def _refused(proc_args: list[str], cwd: str) -> str:
    done = subprocess.run(proc_args, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0, "the server started"
    return done.stdout + done.stderr


@pytest.mark.parametrize(
    "lines,message",
    [
        ("user alice on bogus\n", "Error in user declaration 'alice': Syntax error"),
        # Redis names the word of the line at the rule's index among the rules: '>a' for '~b'.
        ("user alice on >a ~* ~b\n", "Error in user declaration '>a': Adding a pattern after the * pattern"),
        ("user alice on\nuser alice off\n", "Error in user declaration 'alice': Duplicate user found."),
        ("user alice on +nosuchcommand\n",
         "Error loading ACL rule '+nosuchcommand' for the user named 'alice': Unknown command or category name in ACL"),
        ("user alice on\naclfile {dir}/users.acl\n", "Configuring Redis with users defined in redis.conf and at the "
         "same setting an ACL file path is invalid."),
    ],
    ids=["syntax", "pattern", "duplicate", "unknown-command", "both"],
)
def test_a_bad_user_line_refuses_start_up_as_redis_does(workdirs: tuple[str, str], lines: str, message: str) -> None:
    outputs = []
    for d, program in zip(workdirs, (["redis-server"], [sys.executable, "-m", "node.main", "node"])):
        _write(d, "users.acl", USER_ACL)
        conf = _write(d, "node.conf", lines.format(dir=d) + f"dir {d}\n")
        outputs.append(_refused([*program, conf, "--port", str(free_port()), "--logfile", ""],
                                ROOT if program[0] != "redis-server" else d))
    for out in outputs:
        assert message in out, out


def test_acl_pubsub_default_in_the_file_applies_to_its_users(workdirs: tuple[str, str]) -> None:
    acl = "user alice on nopass ~* +@all\nuser bob on nopass ~* &* +@all\n"
    oracle, rill = _both(workdirs, acl=acl, extra=("--acl-pubsub-default", "allchannels"))
    try:
        o, r = _conns(oracle, rill)
        _lists_match(o, r)
        for conn in (o, r):
            channels = as_dict(parse(conn.call("ACL", "GETUSER", "alice")))[b"channels"].value
            assert channels == b"&*"
            assert conn.call("CONFIG", "SET", "acl-pubsub-default", "resetchannels") == b"+OK\r\n"
            assert conn.call("ACL", "SETUSER", "carol") == b"+OK\r\n"
        _lists_match(o, r)
        assert [v.value for v in items(parse(r.call("ACL", "USERS")))] == [b"alice", b"bob", b"carol", b"default"]
    finally:
        _stop(oracle, rill)
