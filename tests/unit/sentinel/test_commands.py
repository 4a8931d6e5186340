"""The SENTINEL command layer against a policy and a real configuration file: what Redis
7.2 answers where the 7.0 oracle of the differential tests answers differently or cannot be
asked (several CONFIG SET options at once, loglevel, a failed rewrite), and the side effects
of SET: applied up to the bad option, flushed, announced."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest

from node.commands.reply import OK, CommandError
from node.sentinel import commands
from node.sentinel import config as sentinel_config
from node.sentinel.messages import Event
from node.sentinel.runner import Runner

NOW = 1_000_000


class FixedClock:
    def monotonic_ms(self) -> int:
        return NOW

    def wall_ms(self) -> int:
        return NOW


@pytest.fixture
def runner(tmp_path: object) -> Iterator[Runner]:
    path = os.path.join(str(tmp_path), "sentinel.conf")
    text = "port 26379\nsentinel myid " + "a" * 40 + "\nsentinel monitor mymaster 127.0.0.1 6379 2\n"
    with open(path, "w") as f:
        f.write(text)
    sentinel, options = sentinel_config.load(text, now=NOW, rng=random.Random(1))
    published: list[tuple[bytes, bytes]] = []
    r = Runner(sentinel, options, path, clock=FixedClock(),
               publish=lambda channel, payload: published.append((channel, payload)) or 0)
    r.published = published  # type: ignore[attr-defined]
    yield r


def call(r: Runner, *args: str) -> object:
    argv = [a.encode() for a in args]
    spec = commands.SUBCOMMANDS[args[1].lower()]
    assert spec.arity > 0 and len(argv) == spec.arity or spec.arity < 0 and len(argv) >= -spec.arity
    try:
        return spec.handler(r, argv)
    except CommandError as exc:
        return exc.message


def conf(r: Runner) -> str:
    with open(r.config_path) as f:
        return f.read()


def test_set_applies_options_up_to_the_bad_one_flushes_them_and_announces_each(runner: Runner) -> None:
    reply = call(runner, "SENTINEL", "SET", "mymaster", "quorum", "3", "parallel-syncs", "4", "failover-timeout", "0",
                 "down-after-milliseconds", "1000")
    assert reply == "ERR Invalid argument '0' for SENTINEL SET 'failover-timeout'"
    master = runner.sentinel.masters["mymaster"]
    assert (master.quorum, master.parallel_syncs, master.failover_timeout, master.down_after_period) == (
        3, 4, 180_000, 30_000)
    assert "sentinel monitor mymaster 127.0.0.1 6379 3" in conf(runner)
    assert "sentinel parallel-syncs mymaster 4" in conf(runner)
    assert runner.published == [  # type: ignore[attr-defined]
        (b"+set", b"master mymaster 127.0.0.1 6379 quorum 3"),
        (b"+set", b"master mymaster 127.0.0.1 6379 parallel-syncs 4"),
    ]


def test_set_redacts_the_password_in_its_event_and_keeps_the_value(runner: Runner) -> None:
    assert call(runner, "SENTINEL", "SET", "mymaster", "auth-pass", "s3cret", "auth-user", "bob") is OK
    master = runner.sentinel.masters["mymaster"]
    assert (master.auth_pass, master.auth_user) == ("s3cret", "bob")
    assert runner.published[0] == (b"+set", b"master mymaster 127.0.0.1 6379 auth-pass ******")  # type: ignore[attr-defined]
    assert "sentinel auth-pass mymaster s3cret" in conf(runner)
    assert call(runner, "SENTINEL", "SET", "mymaster", "auth-pass", "") is OK
    assert master.auth_pass is None and "auth-pass" not in conf(runner)


def test_rename_command_replaces_and_a_rename_to_itself_removes(runner: Runner) -> None:
    master = runner.sentinel.masters["mymaster"]
    assert call(runner, "SENTINEL", "SET", "mymaster", "rename-command", "CONFIG", "cfg") is OK
    assert master.renamed_commands == {"CONFIG": "cfg"}
    assert call(runner, "SENTINEL", "SET", "mymaster", "rename-command", "config", "config2") is OK
    assert master.renamed_commands == {"config": "config2"}
    assert call(runner, "SENTINEL", "SET", "mymaster", "rename-command", "CONFIG", "config") is OK
    assert master.renamed_commands == {}


def test_scripts_cannot_be_set_while_deny_scripts_reconfig(runner: Runner, tmp_path: object) -> None:
    assert call(runner, "SENTINEL", "SET", "mymaster", "notification-script", "/bin/true") == commands.SCRIPTS_DENIED
    runner.sentinel.deny_scripts_reconfig = False
    missing = os.path.join(str(tmp_path), "missing.sh")
    assert call(runner, "SENTINEL", "SET", "mymaster", "client-reconfig-script", missing) == (
        "ERR Client reconfiguration script seems non existing or non executable")
    assert call(runner, "SENTINEL", "SET", "mymaster", "notification-script", "/bin/true") is OK
    assert runner.sentinel.masters["mymaster"].notification_script == "/bin/true"


def test_config_set_validates_every_option_before_applying_any(runner: Runner) -> None:
    s = runner.sentinel
    assert call(runner, "SENTINEL", "CONFIG", "SET", "announce-ip", "10.0.0.1", "announce-port", "x") == (
        "ERR Invalid value 'x' to SENTINEL CONFIG SET 'announce-port'")
    assert s.announce_ip is None
    assert call(runner, "SENTINEL", "CONFIG", "SET", "announce-ip", "10.0.0.1", "ANNOUNCE-IP", "10.0.0.2") == (
        "ERR Duplicate argument 'ANNOUNCE-IP' to SENTINEL CONFIG SET")
    assert call(runner, "SENTINEL", "CONFIG", "SET", "announce-ip", "10.0.0.1", "announce-port") == (
        "ERR Missing argument 'announce-port' value")
    assert call(runner, "SENTINEL", "CONFIG", "SET", "announce-ip", "10.0.0.1", "announce-port", "7000",
                "loglevel", "warning", "resolve-hostnames", "yes") is OK
    assert (s.announce_ip, s.announce_port, s.resolve_hostnames, runner.options.loglevel) == (
        "10.0.0.1", 7000, True, "warning")
    text = conf(runner)
    assert 'sentinel announce-ip "10.0.0.1"' in text and "sentinel announce-port 7000" in text
    assert "loglevel warning" in text and "sentinel resolve-hostnames yes" in text
    runner.set_loglevel("notice")


def test_config_get_matches_globs_once_per_option(runner: Runner) -> None:
    reply = call(runner, "SENTINEL", "CONFIG", "GET", "announce-*", "ANNOUNCE-IP", "loglevel")
    assert reply == {b"announce-hostnames": b"no", b"announce-ip": b"", b"announce-port": b"0", b"loglevel": b"notice"}
    assert call(runner, "SENTINEL", "CONFIG", "DEL", "x") == (
        "ERR Only SENTINEL CONFIG GET <param> [<param> <param> ...]/ SET <param> <value> [<param> <value> ...] "
        "are supported.")


def test_debug_sets_timings_in_order_and_stops_at_a_bad_one(runner: Runner) -> None:
    t = runner.sentinel.timings
    assert call(runner, "SENTINEL", "DEBUG", "ping-period", "500", "INFO-PERIOD", "2000") is OK
    assert (t.ping_period, t.info_period) == (500, 2000)
    assert call(runner, "SENTINEL", "DEBUG", "ask-period", "700", "tilt-period", "-1") == (
        "ERR Invalid argument '-1' for SENTINEL DEBUG 'tilt-period'")
    assert t.ask_period == 700
    assert call(runner, "SENTINEL", "DEBUG")[b"PING-PERIOD"] == b"500"  # type: ignore[index]


def test_a_failed_rewrite_is_reported_to_the_client(runner: Runner) -> None:
    runner.config_path = os.path.join(os.path.dirname(runner.config_path), "missing-dir", "sentinel.conf")
    assert call(runner, "SENTINEL", "FLUSHCONFIG") == commands.FLUSH_FAILED
    assert call(runner, "SENTINEL", "SET", "mymaster", "quorum", "1") == commands.FLUSH_FAILED
    assert runner.sentinel.masters["mymaster"].quorum == 1  # applied, only not saved


def test_simulate_failure_sets_and_clears_its_flags(runner: Runner) -> None:
    s = runner.sentinel
    assert call(runner, "SENTINEL", "SIMULATE-FAILURE", "crash-after-election", "CRASH-AFTER-PROMOTION") is OK
    assert s.simfailure_flags == 3
    assert call(runner, "SENTINEL", "SIMULATE-FAILURE", "crash-after-election", "nope") == (
        "ERR Unknown failure simulation specified")
    assert s.simfailure_flags == 1  # reset, then set up to the bad word, as Redis does


def test_a_crash_action_exits_after_the_actions_before_it(runner: Runner) -> None:
    exits: list[int] = []
    runner._crash = exits.append  # type: ignore[method-assign]
    from node.sentinel.messages import NOTICE, Crash

    assert runner.execute([Event(NOTICE, "+a", "x"), Crash(), Event(NOTICE, "+b", "y")])
    assert exits == [99]
    assert runner.published == [(b"+a", b"x")]  # type: ignore[attr-defined]


def test_publish_takes_only_hellos(runner: Runner) -> None:
    with pytest.raises(CommandError, match="Only HELLO messages are accepted by Sentinel instances."):
        commands.publish(runner, [b"PUBLISH", b"other", b"x"])
    assert commands.publish(runner, [b"PUBLISH", b"__sentinel__:hello", b"garbage"]) == 1
