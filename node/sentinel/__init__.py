"""`rill sentinel`: a Redis Sentinel compatible monitor.

The pure heart (the policy and what it reads and writes) and, around it, the thin I/O shell
built on the node's server core (node/server/core.py):

- `policy`      the per-sentinel state machine (Redis 7.2's sentinel.c algorithm): inputs in,
                actions out, the clock passed in (fenced mode's sentinel side included)
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

The shell (asyncio, one concern each):

- `reply_reader` RESP2 replies of nodes and sentinels as the policy's values (sans I/O)
- `links`       the outbound connections the policy opens, FIFO request ids, Pub/Sub messages
- `runner`      the policy's timer and the execution of its actions, in order
- `scripts`     notification and client-reconfig scripts with Redis's limits
- `commands`    SENTINEL …, ROLE and PUBLISH with Redis's parsing and errors
- `startup`     the command line, the configuration checks, the id picked at first start
- `shell`       the process: server core + sentinel command table + runner + signals
"""
