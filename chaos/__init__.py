"""The chaos lab: run a replicated cluster (Rill or Redis) under faults, record what every
client saw as a Jepsen-style history, and check the history with pure functions.

Black-box by rule: the lab talks to nodes and sentinels only over RESP (redis-py), starts and
signals their processes, and cuts links with toxiproxy. It never imports `node` or
`replication` (an import-linter contract pins this), so it runs unchanged against Debian's
redis-server and redis-sentinel.

Modules, in the order data flows: `scenarios` (what faults, when), `targets` (which binaries and
configs), `topology` (network namespaces, addresses, one toxiproxy per namespace), `cluster`
(processes), `faults` (link and process faults), `workload` and `monitor` (record the history),
`history` (the event format), `checker` (pure verdicts), `runner` (one run), `matrix` and
`report` (many runs, HTML + plots), `cli` (`rill chaos ...`, `python -m chaos ...`).
"""
