"""`rill sentinel`: a Redis Sentinel compatible monitor.

The pure heart lives here; the I/O shell (RESP server, client connections) is built on the
node's server and drives it:

- `policy`      the per-sentinel state machine (Redis 7.2's sentinel.c algorithm): inputs in,
                actions out, the clock passed in
- `instance`    what a sentinel knows about a master, a replica or another sentinel
- `messages`    the inputs the shell feeds and the actions it carries out
- `settings`    timing constants (SENTINEL DEBUG) and per-master defaults
- `info`        parsing of a monitored instance's INFO reply
- `hello`       the `__sentinel__:hello` payload
- `election`    counting leader votes
- `selection`   which replica to promote
- `fenced`      the sentinel side of fenced mode (docs/safety.md, *Fenced mode*)
- `replies`     SENTINEL …, INFO sentinel and ROLE replies from the policy's state
- `config`      sentinel.conf parsing and rewriting
"""
