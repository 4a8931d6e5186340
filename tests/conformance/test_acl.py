"""Differential tests of ACLs against redis-server: ACL SETUSER's rules and errors, what
ACL LIST / GETUSER / USERS / CAT / WHOAMI / DRYRUN / LOG answer, AUTH and HELLO … AUTH,
the -NOPERM and -WRONGPASS texts, key patterns on the key arguments Redis's key specs name
(XREADGROUP's after STREAMS included), channel patterns, selectors, transactions, the INFO
counters, CLIENT KILL USER, and the clients of a deleted user. RESP2 and RESP3, byte for byte.

The oracle is Redis 7.0; Rill follows 7.2, which differs in three ways these tests normalise
explicitly, after checking Rill's form (docs/compatibility.md, *ACL*):

* 7.2 shows every user's `sanitize-payload` flag (ACL LIST, GETUSER's flags); 7.0 does not.
* 7.2 keeps command rules in the order they were given (ACL LIST, GETUSER's commands); 7.0
  rebuilds them from the bitmap. Where the rules differ only in order, the tests compare
  them as sets (and `test_command_rules_keep_their_order` pins 7.2's order).
* 7.2's ACL LOG entries add `entry-id`, `timestamp-created` and `timestamp-last-updated`.
* 7.2's refusals name the user (`User u has no permissions to run the 'get' command`) where
  7.0's say `this user` (`as_72` rewrites the oracle's text to 7.2's before comparing).

The servers are this module's own (ACL state is server-wide): each test starts from the
default user alone, an empty log and zeroed counters.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator, Sequence

import pytest

from tests.conformance.harness import Arg, Pair, RawConnection
from tests.conformance.stream_support import as_dict, items, parse
from tests.conftest import Server, start_redis, start_rill

SANITIZE = b"sanitize-payload"
# A user every test keeps, that restores the others (a test may take everything from default).
ADMIN = ("ACL", "SETUSER", "admin", "on", ">admin-pw", "~*", "&*", "+@all")


def as_72(reply: bytes, user: str) -> bytes:
    """The oracle's reply in Redis 7.2's words: refusals name the user and say "a key" / "a
    channel", HELLO's NOAUTH names <proto> (bulk lengths adjusted)."""
    named = b"User " + user.encode()
    reply = reply.replace(b"-NOPERM this user has no permissions to access one of the keys used as arguments",
                          b"-NOPERM No permissions to access a key")
    reply = reply.replace(b"-NOPERM this user has no permissions to access one of the channels used as arguments",
                          b"-NOPERM No permissions to access a channel")
    reply = reply.replace(b"the HELLO AUTH <user> <pass> option", b"the HELLO <proto> AUTH <user> <pass> option")
    reply = re.sub(rb"-NOPERM this user has", b"-NOPERM " + named + b" has", reply)

    def bulk(match: re.Match[bytes]) -> bytes:
        text = named + match.group(1)
        return b"$%d\r\n%s\r\n" % (len(text), text)

    return re.sub(rb"\$\d+\r\nThis user( has no permissions[^\r]*)\r\n", bulk, reply)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Server, Server]]:
    redis_server = start_redis()
    rill = start_rill()
    for proc in (redis_server, rill):
        conn = RawConnection(proc.port)
        assert conn.call(*ADMIN) == b"+OK\r\n"
        conn.close()
    yield redis_server, rill
    redis_server.stop()
    rill.stop()


def _hello_masked(reply: bytes) -> bytes:
    """HELLO's reply without what differs by construction: the version and client id."""
    reply = re.sub(rb"\$7\r\nversion\r\n\$\d+\r\n[0-9.]+\r\n", b"$7\r\nversion\r\n$1\r\nV\r\n", reply)
    return re.sub(rb"\$2\r\nid\r\n:\d+\r\n", b"$2\r\nid\r\n:0\r\n", reply)


def _reset(conn: RawConnection) -> None:
    """Back to the default user and the admin alone."""
    assert conn.call("AUTH", "admin", "admin-pw") == b"+OK\r\n"
    conn.call("ACL", "SETUSER", "default", "reset", "on", "nopass", "~*", "&*", "+@all")
    users = parse(conn.call("ACL", "USERS"))
    others = [u.value for u in items(users) if u.value not in (b"default", b"admin")]
    if others:
        conn.call("ACL", "DELUSER", *others)
    for setting in (("acl-pubsub-default", "resetchannels"), ("acllog-max-len", "128"), ("requirepass", "")):
        conn.call("CONFIG", "SET", *setting)
    conn.call("ACL", "LOG", "RESET")
    conn.call("CONFIG", "RESETSTAT")
    conn.call("FLUSHALL")
    conn.call("AUTH", "default", "any")  # nopass: back to the default user


def _make_pair(servers: tuple[Server, Server], proto: int) -> Iterator[Pair]:
    redis_server, rill = servers
    p = Pair(redis_server.port, rill.port, proto)
    _reset(p.oracle)
    _reset(p.rill)
    yield p
    _reset(p.oracle)
    _reset(p.rill)
    p.close()


@pytest.fixture
def pair(servers: tuple[Server, Server]) -> Iterator[Pair]:
    yield from _make_pair(servers, 2)


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def pair_any(servers: tuple[Server, Server], request: pytest.FixtureRequest) -> Iterator[Pair]:
    yield from _make_pair(servers, request.param)


class Clients:
    """One more connection to each server (another client of the pair's servers)."""

    def __init__(self, pair: Pair, proto: int | None = None) -> None:
        self.oracle = RawConnection(pair.oracle.sock.getpeername()[1])
        self.rill = RawConnection(pair.rill.sock.getpeername()[1])
        if (proto or pair.proto) == 3:
            self.oracle.call("HELLO", "3")
            self.rill.call("HELLO", "3")
        self.proto = proto or pair.proto
        self.user = "default"

    def both(self, *args: Arg) -> tuple[bytes, bytes]:
        """Replies (oracle's in 7.2's words for the user this client authenticated as)."""
        expected, actual = self.oracle.call(*args), self.rill.call(*args)
        if args[:1] in (("AUTH",), ("auth",)) and actual == b"+OK\r\n":
            self.user = str(args[1]) if len(args) == 3 else "default"
        if args[:1] == ("HELLO",):
            expected, actual = _hello_masked(expected), _hello_masked(actual)
        return as_72(expected, self.user), actual

    def check(self, *args: Arg) -> bytes:
        expected, actual = self.both(*args)
        assert actual == expected, f"{args}\n  redis: {expected!r}\n  rill:  {actual!r}"
        return actual

    def close(self) -> None:
        self.oracle.close()
        self.rill.close()


# -- normalising Redis 7.0's differences ------------------------------------------------------


def _rules_of(line: bytes) -> tuple[list[bytes], list[bytes]]:
    """A user description split into what precedes the command rules (flags, passwords,
    keys, channels) and the command rules; 7.2's `sanitize-payload` is checked and dropped."""
    words = line.split(b" ")
    if SANITIZE in words:
        words.remove(SANITIZE)
    head = [w for w in words if w[:1] not in (b"+", b"-")]
    rules = [w for w in words if w[:1] in (b"+", b"-")]
    return head, rules


def same_description(redis_line: bytes, rill_line: bytes) -> bool:
    """Equal descriptions, once `sanitize-payload` is dropped and the command rules after
    +@all/-@all compared as sets (selectors compared the same way, each in its turn)."""
    theirs = redis_line.split(b" (")
    ours = rill_line.split(b" (")
    if len(theirs) != len(ours):
        return False
    for t, o in zip(theirs, ours):
        t_head, t_rules = _rules_of(t.rstrip(b")"))
        o_head, o_rules = _rules_of(o.rstrip(b")"))
        if t_head != o_head or t_rules[:1] != o_rules[:1] or set(t_rules[1:]) != set(o_rules[1:]):
            return False
    return True


def acl_list(conn: RawConnection) -> list[bytes]:
    return [item.value for item in items(parse(conn.call("ACL", "LIST")))]


def check_acl_list(pair: Pair) -> None:
    theirs, ours = acl_list(pair.oracle), acl_list(pair.rill)
    assert len(theirs) == len(ours), (theirs, ours)
    for t, o in zip(theirs, ours):
        name = o.split(b" ")[1]
        flags = o.split(b" (")[0].split(b" ")
        assert SANITIZE in flags or b"skip-sanitize-payload" in flags, f"7.2 shows the sanitize flag: {o!r}"
        assert same_description(t, o), f"user {name!r}\n  redis: {t!r}\n  rill:  {o!r}"


def getuser(conn: RawConnection, name: str) -> dict[bytes, object]:
    reply = parse(conn.call("ACL", "GETUSER", name))
    if reply.value is None:
        return {}
    out: dict[bytes, object] = {}
    for key, value in as_dict(reply).items():
        if key == b"flags":
            out[key] = sorted(v.value for v in items(value) if v.value != SANITIZE)
        elif key == b"passwords":
            out[key] = [v.value for v in items(value)]
        elif key == b"commands":
            rules = value.value.split(b" ")
            out[key] = (rules[0], sorted(rules[1:]))
        elif key == b"selectors":
            out[key] = [
                {k: (v.value.split(b" ")[0], sorted(v.value.split(b" ")[1:])) if k == b"commands" else v.value
                 for k, v in as_dict(sel).items()}
                for sel in items(value)
            ]
        else:
            out[key] = value.value
    return out


def check_getuser(pair: Pair, name: str) -> None:
    expected, actual = pair.both("ACL", "GETUSER", name)
    assert parse(actual).kind == parse(expected).kind
    assert getuser(pair.rill, name) == getuser(pair.oracle, name)


def auth_as(pair: Clients, user: str, password: str = "pw") -> None:
    for conn in (pair.oracle, pair.rill):
        reply = conn.call("AUTH", user, password)
        assert reply == b"+OK\r\n", reply
    pair.user = user


def check_dryrun(pair: Pair, user: str, *args: Arg) -> None:
    expected, actual = pair.oracle.call("ACL", "DRYRUN", user, *args), pair.rill.call("ACL", "DRYRUN", user, *args)
    assert actual == as_72(expected, user), f"DRYRUN {user} {args}\n  redis: {expected!r}\n  rill:  {actual!r}"


# -- ACL SETUSER: rules, and the refusal of a bad one ------------------------------------------

# Rule lists both servers describe the same way (up to 7.2's sanitize-payload and rule order).
RULE_SETS: list[Sequence[str]] = [
    (),
    ("on",),
    ("on", "nopass"),
    ("on", ">pw", ">other"),
    ("on", ">pw", "<pw"),
    ("on", "#" + "a" * 64),
    ("on", ">pw", "resetpass"),
    ("on", "nopass", ">pw"),
    ("~orders:*",),
    ("~a*", "~b*", "~a*"),
    ("%R~r*", "%W~w*", "%RW~rw*"),
    ("%R~k*", "%W~k*"),
    ("~a*", "allkeys"),
    ("~a*", "resetkeys"),
    ("allkeys",),
    ("&news.*",),
    ("&a", "&b", "&a"),
    ("allchannels",),
    ("&a", "resetchannels"),
    ("+@all",),
    ("allcommands",),
    ("nocommands",),
    ("+@stream",),
    ("+@all", "-@dangerous"),
    ("+@read", "+@stream"),
    ("-@all", "+get", "+set"),
    ("+xadd", "+xread", "+ping"),
    ("+config|get",),
    ("+client|list", "+client|info"),
    ("+config", "-config|set"),
    ("+@all", "-config|set"),
    ("+select|0",),
    ("+select|0", "+select|1"),
    ("-@all", "+acl|whoami"),
    ("on", "nopass", "~*", "&*", "+@all", "reset"),
    ("on", "(~k* +get)"),
    ("on", "(~k*", "+get)", "(%R~r* +xread)"),
    ("on", "(~k* +get)", "clearselectors"),
    ("on", "skip-sanitize-payload"),
    ("+@stream", "+@stream", "-xadd"),
    ("+@admin",),
]


@pytest.mark.parametrize("rules", RULE_SETS, ids=[" ".join(r) or "(none)" for r in RULE_SETS])
def test_setuser_describes_the_user_as_redis(pair_any: Pair, rules: Sequence[str]) -> None:
    pair_any.check("ACL", "SETUSER", "u", *rules)
    check_acl_list(pair_any)
    check_getuser(pair_any, "u")
    pair_any.check("ACL", "USERS")


# Rule lists one of whose rules is wrong: refused with the same error, nothing changed.
BAD_RULES: list[Sequence[str]] = [
    ("+nosuchcommand",),
    ("on", "+get", "+nosuchcommand"),
    ("+@nosuchcategory",),
    ("-@nosuchcategory",),
    ("bogus",),
    ("#abc",),
    ("#" + "A" * 64,),
    ("!abc",),
    ("<neverset",),
    ("!" + "b" * 64,),
    ("~*", "~a*"),
    ("allkeys", "%R~a*"),
    ("&*", "&a"),
    ("allchannels", "&b"),
    ("+select|",),
    ("+config|get|x",),
    ("+config|nosuch",),
    ("-get|x",),
    ("-config|nosuch",),
    ("%X~a",),
    ("%~a",),
    ("%RR~a",),
    ("(~a",),
    ("on", "(+get ~k*"),
    ("(+nosuch)",),
    ("(bogus)",),
    ("~a\tb",),
    ("&a b",),
    ("+",),
    ("-",),
    ("+@",),
    ("get",),
]


@pytest.mark.parametrize("rules", BAD_RULES, ids=[" ".join(r) for r in BAD_RULES])
def test_a_bad_rule_is_refused_and_changes_nothing(pair_any: Pair, rules: Sequence[str]) -> None:
    pair_any.check("ACL", "SETUSER", "u", "on", ">pw", "~k*", "+get")
    pair_any.check("ACL", "SETUSER", "u", *rules)
    check_getuser(pair_any, "u")
    pair_any.check("ACL", "SETUSER", "new", *rules)
    pair_any.check("ACL", "GETUSER", "new")  # not created
    pair_any.check("ACL", "USERS")


@pytest.mark.parametrize("name", ["a b", "a\tb", "a\nb", "a\x00b", "a\rb"])
def test_usernames_with_spaces_are_refused(pair_any: Pair, name: str) -> None:
    pair_any.check("ACL", "SETUSER", name)
    pair_any.check("ACL", "USERS")


def test_command_rules_keep_their_order(pair: Pair) -> None:
    """Redis 7.2 (acl.tcl "ACL GETUSER provides correct results"), with Rill's commands."""
    r = pair.rill

    def commands(*rules: str) -> bytes:
        assert r.call("ACL", "SETUSER", "adv", *rules) == b"+OK\r\n"
        return getuser(r, "adv").get(b"commands")  # type: ignore[return-value]

    def exact(*rules: str) -> bytes:
        commands(*rules)
        return as_dict(parse(r.call("ACL", "GETUSER", "adv")))[b"commands"].value  # type: ignore[no-any-return]

    assert exact("+@all", "-@stream", "-@slow", "+xlen") == b"+@all -@stream -@slow +xlen"
    assert exact("-@stream") == b"+@all -@slow +xlen -@stream"
    assert exact("+@stream") == b"+@all -@slow +xlen +@stream"
    assert exact("-@all") == b"-@all"
    assert exact("-@string", "-@slow", "+@all") == b"+@all"
    assert exact("-@all", "+@STREAM", "+@stream", "+@StReAm") == b"-@all +@stream"
    assert exact("-@all", "+XLEN", "+xlen", "+xLeN") == b"-@all +xlen"
    assert exact("-@all", "+@stream", "+@slow", "+@string", "+@string", "+@slow", "+@stream") == (
        b"-@all +@string +@slow +@stream")
    assert exact("-@all", "+xadd", "-xlen", "+xlen", "-xadd") == b"-@all +xlen -xadd"
    assert exact("-@all", "+client|list", "+client|list", "+config|get", "+config", "+acl|list", "-acl") == (
        b"-@all +client|list +config -acl")
    assert exact("-@all", "+select|0", "+select|0", "+debug|digest", "+debug") == b"-@all +select|0 +debug"
    assert exact("-@all", "-@dangerous") == b"-@all -@dangerous"
    assert exact("-@all", "+config", "+config|get", "-config|set", "+config") == b"-@all +config"


def test_new_users_show_sanitize_payload_as_in_redis_7_2(pair: Pair) -> None:
    pair.rill.call("ACL", "SETUSER", "fresh")
    assert b"user fresh off sanitize-payload resetchannels -@all" in acl_list(pair.rill)
    assert b"user default on nopass sanitize-payload ~* &* +@all" in acl_list(pair.rill)
    flags = getuser(pair.rill, "fresh")[b"flags"]
    assert flags == [b"off"]
    raw = as_dict(parse(pair.rill.call("ACL", "GETUSER", "fresh")))[b"flags"]
    assert [v.value for v in items(raw)] == [b"off", SANITIZE]


def test_password_hashes_not_passwords_are_shown(pair_any: Pair) -> None:
    pair_any.check("ACL", "SETUSER", "u", "on", ">secret", "#" + "0123456789abcdef" * 4)
    check_getuser(pair_any, "u")
    ours = getuser(pair_any.rill, "u")[b"passwords"]
    assert b"secret" not in ours and len(ours) == 2  # type: ignore[operator, arg-type]
    auth_as(pair_any, "u", "secret")


# -- AUTH and HELLO -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("AUTH", "u", "pw"), ("AUTH", "u", "wrong"), ("AUTH", "nosuch", "pw"), ("AUTH", "off", "pw"),
        ("AUTH", "nopw", "anything"), ("AUTH", "pw"), ("AUTH", "a", "b", "c"), ("AUTH", "default", "x"),
        ("HELLO", "3", "AUTH", "u", "pw"), ("HELLO", "2", "AUTH", "u", "wrong"), ("HELLO", "3", "AUTH", "nosuch", "x"),
        ("HELLO", "2", "AUTH", "u", "wrong", "SETNAME", "n"), ("HELLO", "2", "AUTH", "u"),
        ("HELLO", "2", "SETNAME", "a", "SETNAME", "b", "AUTH", "u", "pw"),
    ],
    ids=lambda a: " ".join(a),
)
def test_auth_and_hello_auth_answer_as_redis(pair: Pair, args: tuple[str, ...]) -> None:
    pair.check("ACL", "SETUSER", "u", "on", ">pw", "+@all", "~*")
    pair.check("ACL", "SETUSER", "off", "off", ">pw", "+@all")
    pair.check("ACL", "SETUSER", "nopw", "on", "nopass", "+@all")
    fresh = Clients(pair)
    try:
        fresh.check(*args)
        fresh.check("ACL", "WHOAMI")
        fresh.check("CLIENT", "GETNAME")
    finally:
        fresh.close()


def test_a_failed_auth_in_a_pipeline_gets_its_reply(pair: Pair) -> None:
    """Redis 7.2 sends no WRONGPASS when earlier replies of the pipeline are still pending
    (addAuthErrReply); 7.0 and Rill do (docs/compatibility.md)."""
    fresh = Clients(pair)
    try:
        for conn in (fresh.oracle, fresh.rill):
            conn.send_raw(b"*1\r\n$4\r\nPING\r\n*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$1\r\nx\r\n*1\r\n$4\r\nPING\r\n")
        replies = [[conn.read_reply() for _ in range(3)] for conn in (fresh.oracle, fresh.rill)]
        assert replies[0] == replies[1] == [
            b"+PONG\r\n", b"-WRONGPASS invalid username-password pair or user is disabled.\r\n", b"+PONG\r\n"]
    finally:
        fresh.close()


def test_the_last_auth_option_of_hello_counts_as_in_redis_7_2(pair: Pair) -> None:
    """acl.tcl "When an authentication chain is used in the HELLO cmd, the last auth cmd has
    precedence" (Redis 7.0 checked each AUTH option in turn: the first wrong one failed)."""
    r = pair.rill
    r.call("ACL", "SETUSER", "secure-user1", ">supass", "on", "+@all")
    r.call("ACL", "SETUSER", "secure-user2", ">supass", "on", "+@all")
    r.call("HELLO", "2", "AUTH", "secure-user", "pass", "AUTH", "secure-user2", "supass", "AUTH", "secure-user1", "supass")
    assert r.call("ACL", "WHOAMI") == b"$12\r\nsecure-user1\r\n"
    reply = r.call("HELLO", "2", "AUTH", "secure-user", "supass", "AUTH", "secure-user2", "supass", "AUTH", "secure-user1",
                   "pass")
    assert reply == b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    assert r.call("ACL", "WHOAMI") == b"$12\r\nsecure-user1\r\n"
    assert r.call("HELLO", "2", "AUTH", "secure-user1", "wrong", "SETNAME", "x").startswith(b"-WRONGPASS")
    assert r.call("CLIENT", "GETNAME") == b"$-1\r\n"
    assert r.call("AUTH", "admin", "admin-pw") == b"+OK\r\n"


def test_a_password_on_the_default_user_requires_auth(pair_any: Pair) -> None:
    pair_any.check("ACL", "SETUSER", "default", ">secret")
    fresh = Clients(pair_any, proto=2)
    try:
        fresh.check("PING")
        fresh.check("GET", "k")
        fresh.check("HELLO", "3")
        fresh.check("AUTH", "wrong")
        fresh.check("AUTH", "secret")
        fresh.check("ACL", "WHOAMI")
        fresh.check("PING")
    finally:
        fresh.close()
    # requirepass is the default user's password too, and CONFIG SET of it resets the others.
    pair_any.check("CONFIG", "SET", "requirepass", "other")
    pair_any.check("ACL", "GETUSER", "default")
    check_acl_list(pair_any)
    fresh = Clients(pair_any, proto=2)
    try:
        fresh.check("AUTH", "secret")
        fresh.check("AUTH", "other")
    finally:
        fresh.close()


def test_a_disabled_default_user_leaves_new_clients_unauthenticated(pair: Pair) -> None:
    pair.check("ACL", "SETUSER", "ops", "on", ">pw", "+@all", "~*")
    pair.check("ACL", "SETUSER", "default", "off")
    fresh = Clients(pair)
    try:
        fresh.check("PING")
        fresh.check("AUTH", "default", "x")
        fresh.check("HELLO", "2", "AUTH", "ops", "pw", "SETNAME", "me")
        fresh.check("CLIENT", "GETNAME")
    finally:
        fresh.close()


def test_hello_works_for_other_users_when_default_has_no_commands(pair: Pair) -> None:
    pair.check("ACL", "SETUSER", "secure", ">pw", "on", "+@all")
    pair.check("ACL", "SETUSER", "default", "-@all")
    fresh = Clients(pair)
    try:
        fresh.check("PING")
        expected, actual = fresh.both("HELLO", "2", "AUTH", "secure", "pw")
        assert parse(actual).kind == parse(expected).kind == "*"
        fresh.check("PING")
    finally:
        fresh.close()


# -- what a restricted user may run -------------------------------------------------------------

# (rules, commands run as that user): each reply compared byte for byte.
PERMISSION_CASES: list[tuple[Sequence[str], list[Sequence[Arg]]]] = [
    (("-@all",), [("GET", "k"), ("PING",), ("XADD", "s", "1-1", "f", "v"), ("CONFIG", "GET", "port"), ("ACL", "WHOAMI"),
                  ("AUTH", "u", "pw"), ("HELLO", "2"), ("NOSUCH",), ("GET",), ("CONFIG", "NOSUCH")]),
    (("+@stream", "~orders:*"), [
        ("XADD", "orders:1", "1-1", "f", "v"), ("XADD", "other", "1-1", "f", "v"), ("XLEN", "orders:1"),
        ("XRANGE", "orders:1", "-", "+"), ("XREAD", "COUNT", "1", "STREAMS", "orders:1", "other", "0", "0"),
        ("XREAD", "STREAMS", "orders:1", "0"), ("XREAD", "STREAMS", "other", "0"),
        ("XGROUP", "CREATE", "orders:1", "g", "0"), ("XGROUP", "CREATE", "x", "g", "0"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "orders:1", ">"),
        ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "orders:1", "secret", ">", ">"),
        ("XREADGROUP", "GROUP", "orders:1", "STREAMS", "STREAMS", "x", ">"),
        ("XACK", "orders:1", "g", "1-1"), ("XACK", "secret", "g", "1-1"),
        ("XINFO", "STREAM", "orders:1"), ("XINFO", "STREAM", "secret"), ("XINFO", "HELP"),
        ("XTRIM", "orders:1", "MAXLEN", "0"), ("XDEL", "secret", "1-1"), ("GET", "orders:1"), ("PING",),
    ]),
    (("+@stream", "%R~ro:*", "%W~wo:*"), [
        ("XADD", "ro:1", "1-1", "f", "v"), ("XADD", "wo:1", "1-1", "f", "v"), ("XLEN", "ro:1"), ("XLEN", "wo:1"),
        ("XRANGE", "wo:1", "-", "+"), ("XREAD", "STREAMS", "ro:1", "0"), ("XREAD", "STREAMS", "wo:1", "0"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "ro:1", ">"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "wo:1", ">"),
        ("XDEL", "wo:1", "1-1"), ("XDEL", "ro:1", "1-1"), ("XTRIM", "wo:1", "MAXLEN", "0"),
    ]),
    (("+@string", "+@keyspace", "%R~r*", "%W~w*", "~rw*"), [
        ("SET", "w1", "v"), ("SET", "r1", "v"), ("SET", "w1", "v", "GET"), ("SET", "rw1", "v", "GET"),
        ("GET", "r1"), ("GET", "w1"), ("MSET", "w1", "a", "w2", "b"), ("MSET", "w1", "a", "r2", "b"),
        ("DEL", "w1", "r1"), ("EXISTS", "r1"), ("RENAME", "rw1", "w3"), ("RENAME", "r1", "w3"), ("COPY", "r1", "w4"),
        ("APPEND", "w1", "x"), ("GETDEL", "rw1"), ("GETDEL", "w1"), ("GETEX", "r1"), ("INCR", "rw1"),
        ("KEYS", "*"), ("SCAN", "0"), ("DBSIZE",), ("TYPE", "r1"), ("EXPIRE", "w1", "10"), ("TTL", "r1"),
    ]),
    (("+@all", "~k*"), [
        ("GET", "k1"), ("GET", "x"), ("MGET", "k1", "x", "k2"), ("WATCH", "x"), ("UNLINK", "k1", "x"),
        ("COMMAND", "GETKEYS", "get", "x"), ("OBJECT", "ENCODING", "x"), ("MEMORY", "USAGE", "x"),
        ("TOUCH", "k1", "x"), ("PUBLISH", "ch", "m"),
    ]),
    (("+@all", "-config", "+config|get"), [
        ("CONFIG", "GET", "port"), ("CONFIG", "SET", "timeout", "0"), ("CONFIG", "HELP"), ("CLIENT", "ID"),
    ]),
    (("+@all", "-@dangerous"), [
        ("FLUSHALL",), ("CONFIG", "GET", "port"), ("KEYS", "*"), ("INFO", "server"),
        ("REPLICAOF", "NO", "ONE"), ("SLAVEOF", "NO", "ONE"), ("SHUTDOWN", "NOSAVE"), ("MONITOR",),
        ("CLIENT", "LIST"), ("CLIENT", "ID"), ("ACL", "WHOAMI"), ("ACL", "LIST"), ("SAVE",), ("ROLE",), ("PING",),
    ]),
    (("-@all", "+select|0", "+select|2"), [("SELECT", "0"), ("SELECT", "1"), ("SELECT", "2"), ("SELECT",)]),
    (("-@all", "+client|id", "+acl|whoami"), [
        ("CLIENT", "ID"), ("CLIENT", "LIST"), ("CLIENT",), ("CLIENT", "NOSUCH"), ("ACL", "WHOAMI"), ("ACL", "USERS"),
    ]),
    (("+@all", "resetchannels", "&news.*", "&exact"), [
        ("PUBLISH", "news.1", "m"), ("PUBLISH", "other", "m"), ("PUBLISH", "exact", "m"), ("SPUBLISH", "news.2", "m"),
        ("SPUBLISH", "x", "m"), ("PUBSUB", "CHANNELS"), ("PUBSUB", "NUMSUB", "secret"),
    ]),
    (("-@all", "+get", "~a*", "(+xlen ~b*)", "(%R~c* +@read)"), [
        ("GET", "a1"), ("GET", "b1"), ("XLEN", "b1"), ("XLEN", "a1"), ("GET", "c1"), ("XLEN", "c1"), ("SET", "c1", "v"),
        ("MGET", "a1", "c1"), ("MGET", "a1", "b1"), ("EXISTS", "b1", "c1"),
    ]),
    (("+@all", "-@all", "+multi", "+exec", "+discard", "+get", "~k*"), [
        ("MULTI",), ("GET", "k1"), ("GET", "x"), ("SET", "k1", "v"), ("EXEC",),
        ("MULTI",), ("GET", "k1"), ("EXEC",),
    ]),
]


@pytest.mark.parametrize("rules,commands", PERMISSION_CASES, ids=[" ".join(c[0]) for c in PERMISSION_CASES])
def test_a_restricted_user_is_refused_as_redis_refuses_it(
    pair_any: Pair, rules: Sequence[str], commands: list[Sequence[Arg]]
) -> None:
    for key in ("orders:1", "r1", "ro:1", "k1"):
        pair_any.check("DEL", key)
    pair_any.check("XADD", "ro:1", "1-1", "f", "v")
    pair_any.check("SET", "r1", "v")
    pair_any.check("ACL", "SETUSER", "u", "on", ">pw", *rules)
    user = Clients(pair_any)
    try:
        auth_as(user, "u")
        for args in commands:
            expected, actual = user.both(*args)
            if expected[:1] != b"-" and actual[:1] != b"-":
                continue  # allowed on both (what it answers is another suite's business)
            assert actual == expected, f"{args}\n  redis: {expected!r}\n  rill:  {actual!r}"
    finally:
        user.close()
    check_dryrun(pair_any, "u", "GET", "nothing")


# (rules, commands) for ACL DRYRUN: the verbose refusal texts.
DRYRUN_CASES: list[tuple[Sequence[str], list[Sequence[Arg]]]] = [
    (("+@stream", "~orders:*"), [
        ("XADD", "orders:1", "*", "f", "v"), ("XADD", "x", "*", "f", "v"), ("GET", "orders:1"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "orders:1", "x", ">", ">"), ("XREAD", "STREAMS", "x", "0"),
        ("XREAD", "STREAMS", "orders:1"), ("XADD",), ("XADD", "a"),
    ]),
    (("+@all", "resetchannels", "&a*"), [("PUBLISH", "a1", "m"), ("PUBLISH", "b", "m"), ("SUBSCRIBE", "a", "b"),
                                          ("PSUBSCRIBE", "a*"), ("PSUBSCRIBE", "a1*"), ("SSUBSCRIBE", "b")]),
    (("-@all", "+config|get"), [("CONFIG", "GET", "x"), ("CONFIG", "SET", "x", "y"), ("CONFIG",), ("CONFIG", "NOSUCH")]),
    ((), [("NOSUCH", "x"), ("GET",), ("PING",)]),
]


@pytest.mark.parametrize("rules,commands", DRYRUN_CASES, ids=[" ".join(c[0]) or "(none)" for c in DRYRUN_CASES])
def test_dryrun_answers_as_redis(pair_any: Pair, rules: Sequence[str], commands: list[Sequence[Arg]]) -> None:
    pair_any.check("ACL", "SETUSER", "u", "on", ">pw", *rules)
    for args in commands:
        check_dryrun(pair_any, "u", *args)
    check_dryrun(pair_any, "nosuch", "GET", "k")
    pair_any.check("ACL", "DRYRUN", "u")


def test_subscribe_and_psubscribe_follow_channel_patterns(pair_any: Pair) -> None:
    pair_any.check("ACL", "SETUSER", "u", "on", ">pw", "+@all", "resetchannels", "&news.*", "&exact")
    user = Clients(pair_any)
    try:
        auth_as(user, "u")
        user.check("SUBSCRIBE", "secret")
        user.check("PSUBSCRIBE", "news.1")
        user.check("PSUBSCRIBE", "news.*")
        user.check("SUBSCRIBE", "news.1", "secret")
        if user.proto == 3:
            user.check("SSUBSCRIBE", "exact")
    finally:
        user.close()


def test_pubsub_default_allchannels_applies_to_new_users_only(pair: Pair) -> None:
    pair.check("ACL", "SETUSER", "before", "on", ">pw", "+@all")
    pair.check("CONFIG", "SET", "acl-pubsub-default", "allchannels")
    pair.check("ACL", "SETUSER", "after", "on", ">pw", "+@all")
    pair.check("ACL", "SETUSER", "reset", "reset", "on", ">pw", "+@all")
    check_acl_list(pair)
    check_dryrun(pair, "before", "PUBLISH", "c", "m")
    check_dryrun(pair, "after", "PUBLISH", "c", "m")


def test_subscribers_are_closed_when_their_channel_is_revoked(pair_any: Pair) -> None:
    pair_any.check("ACL", "SETUSER", "ps", "on", ">pw", "+@all", "resetchannels", "&keep", "&drop")
    keep = Clients(pair_any)
    drop = Clients(pair_any)
    try:
        auth_as(keep, "ps")
        auth_as(drop, "ps")
        keep.check("SUBSCRIBE", "keep")
        drop.check("SUBSCRIBE", "drop")
        pair_any.check("ACL", "SETUSER", "ps", "resetchannels", "&keep")
        for conn in (drop.oracle, drop.rill):
            with pytest.raises((ConnectionError, OSError)):
                conn.sock.settimeout(5)
                conn.read_reply()
        pair_any.check("PUBLISH", "keep", "still here")
        expected, actual = keep.oracle.read_reply(), keep.rill.read_reply()
        assert actual == expected
    finally:
        keep.close()
        drop.close()


def test_a_blocked_read_is_refused_when_its_rules_change_before_it_wakes(pair: Pair) -> None:
    """acl.tcl "blocked command gets rejected when reprocessed after permission change"
    (Redis 7.2 runs a woken command through processCommand again; 7.0 served it)."""
    r = pair.rill
    r.call("ACL", "SETUSER", "b", "on", ">pw", "+@all", "~*")
    user = RawConnection(pair.rill.sock.getpeername()[1])
    try:
        assert user.call("AUTH", "b", "pw") == b"+OK\r\n"
        user.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
        deadline = time.monotonic() + 10
        while b"blocked_clients:1" not in r.call("INFO", "clients"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        r.call("ACL", "SETUSER", "b", "resetkeys")
        r.call("XADD", "s", "1-1", "f", "v")
        assert user.read_reply() == b"-NOPERM No permissions to access a key\r\n"
        assert user.call("PING") == b"+PONG\r\n"
    finally:
        user.close()
    entry = as_dict(items(parse(r.call("ACL", "LOG")))[0])
    assert (entry[b"reason"].value, entry[b"object"].value) == (b"key", b"s")


# -- transactions ----------------------------------------------------------------------------------


def test_a_refused_command_aborts_the_transaction(pair_any: Pair) -> None:
    pair_any.check("ACL", "SETUSER", "t", "on", ">pw", "+multi", "+exec", "+get", "~k*")
    user = Clients(pair_any)
    try:
        auth_as(user, "t")
        for args in (("MULTI",), ("GET", "k"), ("SET", "k", "v"), ("GET", "x"), ("EXEC",)):
            user.check(*args)
    finally:
        user.close()
    expected, actual = pair_any.both("ACL", "LOG", "1")
    assert _log_view(actual) == _log_view(expected)


def test_rules_changed_between_queueing_and_exec_refuse_the_command(pair_any: Pair) -> None:
    pair_any.check("ACL", "SETUSER", "t", "on", ">pw", "+multi", "+exec", "+xlen", "+xadd", "~*", "&*")
    user = Clients(pair_any)
    try:
        auth_as(user, "t")
        for args in (("MULTI",), ("XLEN", "s"), ("XADD", "s", "1-1", "f", "v"), ("XLEN", "other")):
            user.check(*args)
        pair_any.check("ACL", "SETUSER", "t", "-xadd", "resetkeys", "~s")
        user.check("EXEC")
    finally:
        user.close()
    pair_any.check("XLEN", "s")
    expected, actual = pair_any.both("ACL", "LOG")
    assert _log_view(actual) == _log_view(expected)


# -- ACL LOG and the counters -------------------------------------------------------------------------

# The fields both versions have; 7.2 adds entry-id, timestamp-created, timestamp-last-updated.
_LOG_FIELDS = (b"count", b"reason", b"context", b"object", b"username")


def _log_view(reply: bytes) -> list[tuple[object, ...]]:
    out = []
    for entry in items(parse(reply)):
        fields = as_dict(entry)
        info = fields[b"client-info"].value
        cmd = info.split(b" cmd=")[1].split(b" ")[0]
        out.append((*(fields[f].value for f in _LOG_FIELDS), cmd, fields[b"age-seconds"].kind))
    return out


def test_acl_log_records_refusals_and_failed_logins_as_redis(pair_any: Pair) -> None:
    pair_any.check("ACL", "SETUSER", "antirez", ">foo", "on", "+set", "~object:1234", "+multi", "+exec",
                   "resetchannels", "+publish")
    user = Clients(pair_any)
    try:
        auth_as(user, "antirez", "foo")
        for args in (("GET", "foo"), ("GET", "foo"), ("SET", "somekeynotallowed", "1"),
                     ("PUBLISH", "somechannelnotallowed", "m"), ("MULTI",), ("INCR", "foo"), ("EXEC",),
                     ("CLIENT", "ID"), ("AUTH", "antirez", "wrong"), ("AUTH", "nosuch", "x"),
                     ("HELLO", "2", "AUTH", "antirez", "bad")):
            user.check(*args)
    finally:
        user.close()
    expected, actual = pair_any.both("ACL", "LOG")
    assert _log_view(actual) == _log_view(expected)
    expected, actual = pair_any.both("ACL", "LOG", "2")
    assert _log_view(actual) == _log_view(expected)
    for args in (("ACL", "LOG", "0"), ("ACL", "LOG", "-1"), ("ACL", "LOG", "x"), ("ACL", "LOG", "1", "2")):
        pair_any.check(*args)
    # INFO's counters are Redis 7.2's (7.0 has none).
    acl_lines = [line for line in pair_any.rill.call("INFO", "stats").split(b"\r\n") if line.startswith(b"acl_")]
    assert acl_lines == [b"acl_access_denied_auth:3", b"acl_access_denied_cmd:4", b"acl_access_denied_key:1",
                         b"acl_access_denied_channel:1"]
    pair_any.check("ACL", "LOG", "RESET")
    pair_any.check("ACL", "LOG")


def test_acl_log_entries_are_grouped_and_numbered_as_in_redis_7_2(pair: Pair) -> None:
    r = pair.rill
    r.call("ACL", "SETUSER", "user1", ">foo")
    assert r.call("AUTH", "user1", "doo").startswith(b"-WRONGPASS")
    first = as_dict(items(parse(r.call("ACL", "LOG")))[0])
    time.sleep(0.01)
    for _ in range(10):
        r.call("AUTH", "user1", "doo")
    latest = as_dict(items(parse(r.call("ACL", "LOG")))[0])
    assert latest[b"entry-id"] == first[b"entry-id"] and latest[b"count"].value == 11
    assert latest[b"timestamp-created"] == first[b"timestamp-created"]
    assert latest[b"timestamp-last-updated"].value > first[b"timestamp-last-updated"].value
    r.call("ACL", "SETUSER", "user2", ">doo")
    r.call("AUTH", "user2", "foo")
    assert as_dict(items(parse(r.call("ACL", "LOG")))[0])[b"entry-id"].value == first[b"entry-id"].value + 1


def test_acl_log_keeps_at_most_acllog_max_len_entries(pair: Pair) -> None:
    pair.check("CONFIG", "SET", "acllog-max-len", "5")
    pair.check("ACL", "SETUSER", "u", "on", ">pw", "+set")
    user = Clients(pair)
    try:
        auth_as(user, "u")
        for j in range(10):
            user.check("SET", f"obj:{j}", "1")
    finally:
        user.close()
    expected, actual = pair.both("ACL", "LOG")
    assert _log_view(actual) == _log_view(expected)
    assert len(_log_view(actual)) == 5


# -- the other subcommands ----------------------------------------------------------------------------


def test_acl_cat_lists_redis_categories_and_their_shared_commands(pair_any: Pair) -> None:
    pair_any.check("ACL", "CAT")
    shared = {v.value for v in items(parse(pair_any.rill.call("COMMAND", "LIST")))} & {
        v.value for v in items(parse(pair_any.oracle.call("COMMAND", "LIST")))}
    for category in [v.value.decode() for v in items(parse(pair_any.rill.call("ACL", "CAT")))]:
        expected, actual = pair_any.both("ACL", "CAT", category)
        theirs = {v.value for v in items(parse(expected))} & shared
        ours = {v.value for v in items(parse(actual))}
        assert ours & shared == theirs, (category, (ours & shared) ^ theirs)
    for args in (("ACL", "CAT", "nosuch"), ("ACL", "CAT", "STREAM", "x"), ("ACL", "CAT", "x" * 200)):
        pair_any.check(*args)


def test_fence_is_admin_and_dangerous(pair: Pair) -> None:
    r = pair.rill
    assert b"fence" in {v.value for v in items(parse(r.call("ACL", "CAT", "admin")))}
    assert b"fence" in {v.value for v in items(parse(r.call("ACL", "CAT", "dangerous")))}
    r.call("ACL", "SETUSER", "app", "on", ">pw", "+@all", "-@dangerous", "~*")
    assert r.call("ACL", "DRYRUN", "app", "FENCE", "5") == b"$54\r\nUser app has no permissions to run the 'fence' command\r\n"
    assert r.call("ACL", "DRYRUN", "app", "SLAVEOF", "NO", "ONE", "EPOCH", "3") == (
        b"$56\r\nUser app has no permissions to run the 'slaveof' command\r\n")
    r.call("ACL", "SETUSER", "sentinel", "on", ">pw", "-@all", "+fence")
    assert r.call("ACL", "DRYRUN", "sentinel", "FENCE", "5") == b"+OK\r\n"


def test_genpass_whoami_users_help_and_errors(pair_any: Pair) -> None:
    for bits, length in ((None, 64), ("1", 1), ("5", 2), ("128", 32), ("4096", 1024)):
        args = ("ACL", "GENPASS") + ((bits,) if bits else ())
        expected, actual = pair_any.both(*args)
        password = parse(actual).value
        assert len(password) == length == len(parse(expected).value)
        assert all(c in b"0123456789abcdef" for c in password)
    for args in (("ACL", "GENPASS", "0"), ("ACL", "GENPASS", "4097"), ("ACL", "GENPASS", "x"),
                 ("ACL", "GENPASS", "1", "2"), ("ACL", "WHOAMI"), ("ACL", "USERS"), ("ACL", "HELP"), ("ACL",),
                 ("ACL", "NOSUCH"), ("ACL", "WHOAMI", "x"), ("ACL", "LIST", "x"), ("ACL", "GETUSER"),
                 ("ACL", "GETUSER", "nosuch"), ("ACL", "LOAD"), ("ACL", "SAVE"), ("ACL", "DELUSER", "default"),
                 ("ACL", "DELUSER", "a", "default"), ("ACL", "DELUSER", "nosuch"), ("ACL", "SETUSER")):
        pair_any.check(*args)


def test_deleting_a_user_closes_its_clients(pair_any: Pair) -> None:
    pair_any.check("ACL", "SETUSER", "gone", "on", ">pw", "+@all", "~*")
    pair_any.check("ACL", "SETUSER", "stays", "on", ">pw", "+@all", "~*")
    other = Clients(pair_any)
    itself = Clients(pair_any)
    try:
        auth_as(other, "gone")
        auth_as(itself, "gone")
        itself.check("ACL", "DELUSER", "gone", "stays", "nosuch")
        for conn in (other.oracle, other.rill, itself.oracle, itself.rill):
            conn.sock.settimeout(5)
            with pytest.raises((ConnectionError, OSError)):
                conn.call("PING")
    finally:
        other.close()
        itself.close()
    pair_any.check("ACL", "USERS")


def test_client_list_and_kill_by_user(pair: Pair) -> None:
    pair.check("ACL", "SETUSER", "app", "on", ">pw", "+@all", "~*")
    user = Clients(pair)
    try:
        auth_as(user, "app")
        for conn in (pair.oracle, pair.rill):
            listing = parse(conn.call("CLIENT", "LIST")).value
            assert listing.count(b" user=app ") == 1 and listing.count(b" user=default ") == 1
        pair.check("CLIENT", "KILL", "USER", "nosuch")
        expected, actual = pair.both("CLIENT", "KILL", "USER", "app")
        assert actual == expected == b":1\r\n"
        pair.check("CLIENT", "KILL", "USER", "app")
    finally:
        user.close()


def test_ok_and_noauth_before_authentication_with_a_user_default_off(pair: Pair) -> None:
    pair.check("ACL", "SETUSER", "default", "off")
    fresh = Clients(pair)
    try:
        for args in (("ACL", "WHOAMI"), ("ACL", "SETUSER", "x"), ("CLIENT", "SETNAME", "a"), ("QUIT",)):
            fresh.check(*args)
    finally:
        fresh.close()


def test_unauthenticated_clients_get_the_protocol_limits_redis_applies(servers: tuple[Server, Server]) -> None:
    """Before AUTH, a client may not announce a large multibulk (Redis's authRequired
    limits); once the default user needs no password they apply no more."""
    for proc in servers:
        conn = RawConnection(proc.port)
        conn.call("CONFIG", "SET", "requirepass", "pw")
        fresh = socket.create_connection(("127.0.0.1", proc.port), timeout=5)
        fresh.sendall(b"*100\r\n")
        assert fresh.recv(100) == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
        fresh.close()
        conn.call("AUTH", "pw")
        conn.call("CONFIG", "SET", "requirepass", "")
        conn.close()
