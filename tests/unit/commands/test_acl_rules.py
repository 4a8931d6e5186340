"""ACL rules without a server (node/commands/acl_rules.py, keyspecs.py): which users skip the
permission check, where key patterns apply in a command's arguments, and Redis 7.2's rule
bookkeeping. The replies themselves are compared with redis-server in
tests/conformance/test_acl.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node.commands import load_all
from node.commands.acl_rules import ACL_OK, DENIED_CHANNEL, DENIED_CMD, DENIED_KEY, AclCommands, RuleError, User
from node.commands.keyspecs import ACCESS, OW, RO, RW, UPDATE, find_keys
from node.commands.table import TABLE, lookup

load_all()
COMMANDS = AclCommands(TABLE)


def user(*rules: str) -> User:
    u = User(b"u", 0)
    for rule in rules:
        u.apply(rule.encode(), COMMANDS, 0)
    return u


def check(u: User, *argv: str) -> tuple[int, int]:
    args = [a.encode() for a in argv]
    spec = lookup(args)
    assert spec is not None
    return u.check(spec, args)


def test_only_a_user_allowed_everything_skips_the_check() -> None:
    assert user("+@all", "~*", "&*").unrestricted
    assert not user("+@all", "~*").unrestricted  # channels are checked
    assert not user("+@all", "~*", "&*", "-flushall").unrestricted
    u = user("+@all", "~*", "&*", "-flushall")
    u.apply(b"+@all", COMMANDS, 0)
    assert u.unrestricted
    u.apply(b"resetkeys", COMMANDS, 0)
    assert not u.unrestricted


def test_xreadgroup_keys_are_the_ones_after_streams() -> None:
    """A group or consumer named like a key (or named STREAMS) is not a key: the key spec
    searches STREAMS from the fourth argument."""
    u = user("+@stream", "~orders:*")
    assert check(u, "XREADGROUP", "GROUP", "secret", "secret", "STREAMS", "orders:1", ">") == (ACL_OK, 0)
    assert check(u, "XREADGROUP", "GROUP", "STREAMS", "c", "STREAMS", "orders:1", ">") == (ACL_OK, 0)
    assert check(u, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "orders:1", "secret", ">", ">") == (DENIED_KEY, 6)
    assert check(u, "XREAD", "COUNT", "1", "STREAMS", "secret", "0") == (DENIED_KEY, 4)


def test_key_permissions_follow_the_key_specs_flags() -> None:
    reader = user("+@all", "%R~*")
    assert check(reader, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") == (ACL_OK, 0)  # RO ACCESS, as in Redis
    assert check(reader, "XADD", "s", "*", "f", "v") == (DENIED_KEY, 1)
    assert check(reader, "SET", "k", "v") == (DENIED_KEY, 1)
    writer = user("+@all", "%W~*")
    assert check(writer, "SET", "k", "v") == (ACL_OK, 0)  # OW UPDATE
    assert check(writer, "SET", "k", "v", "GET") == (DENIED_KEY, 1)  # reads the old value
    assert check(writer, "XLEN", "s") == (ACL_OK, 0)  # RO without ACCESS: no read of data
    assert check(writer, "XRANGE", "s", "-", "+") == (DENIED_KEY, 1)


def test_find_keys_matches_redis_for_movable_and_variable_flags() -> None:
    set_spec, xread = TABLE[b"set"], TABLE[b"xread"]
    assert find_keys(set_spec, [b"set", b"k", b"v"]) == [(1, OW | UPDATE)]
    assert find_keys(set_spec, [b"set", b"k", b"v", b"gEt"]) == [(1, RW | ACCESS | UPDATE)]
    assert find_keys(xread, [b"xread", b"STREAMS", b"a", b"b", b"0", b"0"]) == [(2, RO | ACCESS), (3, RO | ACCESS)]
    # An odd count: Redis's limit arithmetic keeps the first half rounded down.
    assert find_keys(xread, [b"xread", b"STREAMS", b"a", b"b", b"0"]) == [(2, RO | ACCESS)]
    assert find_keys(xread, [b"xread", b"COUNT", b"1"]) == []


def test_a_selector_allows_what_the_root_does_not() -> None:
    u = user("-@all", "+get", "~a*", "(+xlen ~b*)")
    assert check(u, "GET", "a1") == (ACL_OK, 0)
    assert check(u, "XLEN", "b1") == (ACL_OK, 0)
    # Refused by both: the most relevant refusal is reported (a key over a command).
    assert check(u, "GET", "b1") == (DENIED_KEY, 1)
    assert check(u, "XLEN", "a1") == (DENIED_KEY, 1)
    assert check(u, "SET", "a1", "v") == (DENIED_CMD, 0)


def test_channels_patterns_and_publish() -> None:
    u = user("+@all", "~*", "resetchannels", "&news.*")
    assert check(u, "PUBLISH", "news.1", "m") == (ACL_OK, 0)
    assert check(u, "PUBLISH", "sports", "m") == (DENIED_CHANNEL, 1)
    assert check(u, "PSUBSCRIBE", "news.*") == (ACL_OK, 0)
    assert check(u, "PSUBSCRIBE", "news.1") == (DENIED_CHANNEL, 1)  # a pattern must equal an allowed one
    assert check(u, "UNSUBSCRIBE", "anything") == (ACL_OK, 0)


def test_first_args_and_subcommands() -> None:
    u = user("-@all", "+select|0", "+config|get", "+client")
    assert check(u, "SELECT", "0") == (ACL_OK, 0)
    assert check(u, "SELECT", "1") == (DENIED_CMD, 0)
    assert check(u, "CONFIG", "GET", "port") == (ACL_OK, 0)
    assert check(u, "CONFIG", "SET", "port", "1") == (DENIED_CMD, 0)
    assert check(u, "CLIENT", "ID") == (ACL_OK, 0)
    assert user("-@all", "+select|0").root.describe_commands() == b"-@all +select|0"
    with pytest.raises(RuleError, match="first-arg of a subcommand"):
        user("+config|get|x")


def test_later_rules_replace_earlier_ones_for_the_same_command() -> None:
    u = user("-@all", "+config", "+config|get", "-config|set", "+config")
    assert u.root.describe_commands() == b"-@all +config"
    u = user("+@all", "-@stream", "-@slow", "+xlen", "-@stream")
    assert u.root.describe_commands() == b"+@all -@slow +xlen -@stream"
    assert check(u, "XLEN", "s")[0] != ACL_OK  # -@stream came after +xlen


def test_the_default_description_of_users() -> None:
    assert User(b"x", 0).describe() == b"off sanitize-payload resetchannels -@all"
    everything = user("on", "nopass", "~*", "&*", "+@all")
    assert everything.describe() == b"on nopass sanitize-payload ~* &* +@all"
    u = user("on", ">a", "%R~r*", "%RW~w*", "&c", "+xadd", "(~k* +get)")
    assert u.describe() == (
        b"on sanitize-payload #ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb %R~r* ~w* "
        b"resetchannels &c -@all +xadd (~k* resetchannels -@all +get)"
    )


RULES = ["+@all", "-@all", "+@stream", "-@write", "+xadd", "-xadd", "+get", "+set", "~*", "~a*", "%R~a*", "%W~a*",
         "%R~b*", "~b?", "resetkeys", "allkeys", "&*", "&c*", "resetchannels", "+select|1", "+config|get", "-config",
         "(~b* +xlen)", "nocommands", "+publish", "+@read"]
ARGVS = [["XADD", "a1", "*", "f", "v"], ["XADD", "b1", "*", "f", "v"], ["XLEN", "b1"], ["XLEN", "a1"], ["GET", "a"],
         ["GET", "bz"], ["SET", "a1", "v"], ["SET", "a1", "v", "GET"], ["SET", "b", "v"], ["MGET", "a1", "b1"],
         ["DEL", "a1", "a2"], ["SELECT", "1"], ["SELECT", "2"], ["CONFIG", "GET", "x"], ["PUBLISH", "c1", "m"],
         ["PUBLISH", "d", "m"], ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "a1", ">"], ["PING"], ["AUTH", "x"],
         ["XRANGE", "a1", "-", "+"], ["COPY", "a1", "b1"], ["RENAME", "a1", "a2"], ["EXPIRE", "b1", "1"]]


@settings(max_examples=400)
@given(st.lists(st.sampled_from(RULES), max_size=8), st.sampled_from(ARGVS))
def test_the_fast_permission_check_never_allows_what_the_full_check_refuses(rules: list[str], words: list[str]) -> None:
    """Invariant: User.permits (the dispatcher's fast path) answers True only where
    User.check answers ACL_OK, for any rules and arguments; and for the users and commands
    it plans (one selector, keys by index) it answers True wherever check allows."""
    u = User(b"u", 0)
    for rule in rules:
        try:
            u.apply(rule.encode(), COMMANDS, 0)
        except RuleError:
            pass  # a refused rule changes nothing; the others still apply
    argv = [w.encode() for w in words]
    spec = lookup(argv)
    assert spec is not None
    allowed = u.check(spec, argv)[0] == ACL_OK
    fast = u.permits(spec, argv)
    assert not fast or allowed
    assert u.permits(spec, argv) == fast  # the plan, once made, answers the same
