"""sentinel.conf rewriting, compared with what Debian's redis-sentinel writes.

Each test gives redis-sentinel a file, lets it rewrite it (at start-up when the file has no
`sentinel myid`, otherwise with SENTINEL FLUSHCONFIG), and renders the same file from the
same state with node.sentinel.config: the two files must be equal line for line, after two
normalisations for what depends on Redis's per-process hash seed (the order of the server
options it appends, and of the replicas and sentinels it lists). Masters point at a port
nobody listens on, so nothing is discovered and the state is exactly the file's.
"""

from __future__ import annotations

import random
import re

import redis

from bench.procs import free_port
from node.sentinel import config
from tests.conformance.sentinel.procs import (
    Cluster,
    cluster,
    run_sentinel_expecting_failure,
    wait_until,
    watched_master,
)

DEBIAN_CONF = "/etc/redis/sentinel.conf"


def normalise(text: str) -> list[str]:
    """Sort what Redis orders by hash: the server options appended after the rewrite marker
    (before the first `sentinel`/`user` line), and runs of known-replica / known-sentinel
    lines. A `user` line loses Redis 7.2's `sanitize-payload` flag, which 7.0 does not show
    (tests/conformance/test_acl.py checks Rill shows it)."""
    lines = [line.replace(" sanitize-payload ", " ") if line.startswith("user ") else line for line in text.split("\n")]
    if config.REWRITE_SIGNATURE in lines:
        start = lines.index(config.REWRITE_SIGNATURE) + 1
        end = start
        while end < len(lines) and lines[end] and not lines[end].startswith(("sentinel ", "user ")):
            end += 1
        lines[start:end] = sorted(lines[start:end])
    out: list[str] = []
    run: list[str] = []
    key = ""
    for line in lines + [""]:
        kind = " ".join(line.split()[:2]) if line.startswith("sentinel known-") else ""
        if kind and kind == key:
            run.append(line)
            continue
        out += sorted(run)
        run, key = ([line], kind) if kind else ([], "")
        if not kind:
            out.append(line)
    return out[:-1]


def rill_render(text: str, directory: str, myid: str) -> str:
    sentinel, options = config.load(text, now=0, rng=random.Random(0))
    if not sentinel.myid:
        sentinel.myid = myid
    return config.render(text, sentinel, options, directory)


def myid_of(text: str) -> str:
    match = re.search(r"^sentinel myid (\w+)$", text, re.M)
    assert match, text
    return match.group(1)


def _startup_rewrite(c: Cluster, conf: str) -> tuple[str, str, str]:
    """Start redis-sentinel on `conf` (a template with {port}, {dir}, {dead}); return the
    original text, what it wrote at start-up, and its directory."""
    dead = free_port()
    texts: dict[str, str] = {}

    def make(port: int, d: str) -> str:
        texts["original"] = conf.format(port=port, dir=d, dead=dead)
        return texts["original"]

    c.sentinel("s", make)
    written = wait_until(lambda: "sentinel myid" in c.read_conf("s") and c.read_conf("s"), 10, "the startup rewrite")
    return texts["original"], written, c.dirs["s"]


def test_debians_sentinel_conf_is_rewritten_as_redis_sentinel_does() -> None:
    with open(DEBIAN_CONF) as f:
        shipped = f.read()
    template = (
        shipped.replace("{", "{{").replace("}", "}}")
        .replace("port 26379", "port {port}")
        .replace("daemonize yes", "daemonize no")
        .replace("pidfile /run/sentinel/redis-sentinel.pid", "pidfile {dir}/sentinel.pid")
        .replace("logfile /var/log/redis/redis-sentinel.log", "logfile {dir}/sentinel.log")
        .replace("dir /var/lib/redis", "dir {dir}")
        .replace("sentinel monitor mymaster 127.0.0.1 6379 2", "sentinel monitor mymaster 127.0.0.1 {dead} 2")
    )
    assert template.count("{port}") == 1 and template.count("{dead}") == 1, "Debian's sentinel.conf changed"
    with cluster() as c:
        original, written, directory = _startup_rewrite(c, template)
    ours = rill_render(original, directory, myid_of(written))
    assert normalise(ours) == normalise(written)


MINIMAL = """# a sentinel
port {port}
sentinel monitor mymaster 127.0.0.1 {dead} 2


save 900 1
logfile ""
"""


def test_a_minimal_file_gets_the_options_redis_appends() -> None:
    with cluster() as c:
        original, written, directory = _startup_rewrite(c, MINIMAL)
    ours = rill_render(original, directory, myid_of(written))
    assert normalise(ours) == normalise(written)
    assert "save 900 1" not in written  # a sentinel's save lines go


FULL = """# every directive a sentinel keeps
port {port}
bind 127.0.0.1
dir {dir}
requirepass "sekret"
SENTINEL myid 0123456789abcdef0123456789abcdef01234567
sentinel deny-scripts-reconfig no
sentinel resolve-hostnames no
sentinel monitor alpha 127.0.0.1 {dead} 2
sentinel down-after-milliseconds alpha 5000
sentinel failover-timeout alpha 180000
sentinel parallel-syncs alpha 3
sentinel auth-pass alpha secret1
sentinel auth-user alpha someone
sentinel master-reboot-down-after-period alpha 4000
sentinel rename-command alpha CONFIG GUESSME
sentinel config-epoch alpha 7
sentinel leader-epoch alpha 9
sentinel known-replica alpha 127.0.0.1 {dead2}
sentinel known-replica alpha 127.0.0.1 {dead3}
sentinel known-sentinel alpha 127.0.0.1 {dead4} 1111111111111111111111111111111111111111
sentinel known-sentinel alpha 127.0.0.1 {dead5} 2222222222222222222222222222222222222222
sentinel known-sentinel alpha 127.0.0.1 {dead6}
sentinel current-epoch 11
sentinel announce-ip 10.1.2.3
sentinel announce-port 7777

# trailing comment
port {port}
"""

TWO_MASTERS = """port {port}
sentinel myid 0123456789abcdef0123456789abcdef01234567
sentinel monitor alpha 127.0.0.1 {dead} 2
sentinel monitor beta 127.0.0.1 {dead2} 1
sentinel failover-timeout beta 9000
sentinel config-epoch alpha 7
sentinel known-replica beta 127.0.0.1 {dead3}
sentinel known-sentinel alpha 127.0.0.1 {dead4} 1111111111111111111111111111111111111111
"""


def _flushconfig_rewrite(template: str, password: str | None = None) -> tuple[str, str, str]:
    dead = [free_port() for _ in range(6)]
    with cluster() as c:
        texts: dict[str, str] = {}

        def make(port: int, d: str) -> str:
            texts["original"] = template.format(port=port, dir=d, dead=dead[0], dead2=dead[1], dead3=dead[2],
                                                dead4=dead[3], dead5=dead[4], dead6=dead[5])
            return texts["original"]

        port = c.sentinel("s", make)
        client = redis.Redis(port=port, password=password)
        try:
            assert client.execute_command("SENTINEL", "FLUSHCONFIG") in (b"OK", True, "OK")
        finally:
            client.close()
        return texts["original"], c.read_conf("s"), c.dirs["s"]


def test_a_file_with_every_directive_is_rewritten_in_place_by_flushconfig() -> None:
    original, written, directory = _flushconfig_rewrite(FULL, "sekret")
    ours = rill_render(original, directory, "")
    assert normalise(ours) == normalise(written)
    # What the rewrite is for: nothing of the state is lost, defaults and duplicates go.
    assert "sentinel rename-command alpha CONFIG GUESSME" in written
    assert "sentinel failover-timeout" not in written
    assert written.count("\nport ") == 1


def test_two_masters_keep_every_line() -> None:
    """With several masters Redis reuses lines in its dict's order, which varies: compare
    the lines as a multiset."""
    original, written, directory = _flushconfig_rewrite(TWO_MASTERS)
    ours = rill_render(original, directory, "")
    assert sorted(normalise(ours)) == sorted(normalise(written))


def test_known_slave_lines_are_replaced_by_known_replica_lines_in_place() -> None:
    """Redis 7.2 (Debian's 7.0 keeps the old line and adds a new one)."""
    text = "sentinel monitor m 127.0.0.1 6379 2\nsentinel known-slave m 127.0.0.1 6380\n# end\n"
    sentinel, options = config.load(text, now=0, rng=random.Random(0))
    sentinel.myid = "f" * 40
    lines = config.render(text, sentinel, options, "/d").split("\n")
    assert lines[1] == "sentinel known-replica m 127.0.0.1 6380" and lines[2] == "# end"


def test_a_file_rewritten_after_a_real_failover_is_a_fixed_point() -> None:
    """After a failover (new master, config epoch 1, the old master among the replicas, the
    other sentinels listed), rewriting the file again changes nothing, in Redis and here."""
    with cluster() as c:
        watched_master(c, down_after=1000, failover_timeout=10_000)
        master = c.ports["m"]
        wait_until(lambda: all(c.read_conf(f"s{i}").count("known-sentinel") == 2 for i in range(3)), 20,
                   "the sentinels to find each other")
        wait_until(lambda: all(c.read_conf(f"s{i}").count("known-replica") == 2 for i in range(3)), 20,
                   "the replicas to be found")
        c.kill("m")
        wait_until(lambda: all(f"127.0.0.1 {master} 2" not in c.read_conf(f"s{i}") for i in range(3)), 30,
                   "a failover")
        before = c.read_conf("s0")
        client = redis.Redis(port=c.ports["s0"])
        try:
            client.execute_command("SENTINEL", "FLUSHCONFIG")
        finally:
            client.close()
        after = c.read_conf("s0")
        directory = c.dirs["s0"]
    assert "sentinel config-epoch mymaster 1" in after
    assert f"sentinel known-replica mymaster 127.0.0.1 {master}" in after
    assert normalise(after) == normalise(before)
    ours = rill_render(before, directory, "")
    assert normalise(ours) == normalise(after)


def _fatal(report: str) -> str:
    """A fatal config error without the version line."""
    return re.sub(r"\(Redis [0-9.]+\)", "(Redis x)", report.strip())


def test_bad_directives_are_fatal_with_redis_s_report() -> None:
    for conf in (
        "port 0\nfoo bar\n",
        "sentinel monitor m 127.0.0.1 6379 2\nsentinel frobnicate m 1\n",
        "sentinel monitor m 127.0.0.1 6379 0\n",
        "sentinel down-after-milliseconds nope 100\n",
        "sentinel monitor m 127.0.0.1 6379 2\nsentinel down-after-milliseconds m 0\n",
        "sentinel myid short\n",
        'port "unbalanced\n',
        "sentinel monitor m 127.0.0.1 6379 2\nsentinel monitor m 127.0.0.1 6380 2\n",
        "sentinel monitor m not-an-ip 6379 2\n",
    ):
        expected = run_sentinel_expecting_failure(conf)
        try:
            config.load(conf, now=0, rng=random.Random(0))
        except config.ConfigError as exc:
            ours = exc.report()
        else:
            raise AssertionError(f"accepted: {conf!r}")
        assert _fatal(ours) in _fatal(expected), conf
