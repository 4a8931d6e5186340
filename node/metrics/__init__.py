"""Prometheus metrics for any server built on the server core (a node, a sentinel): the HTTP
endpoint (`--metrics-port`), the core's collector, and the table format that turns INFO fields
into metric families. A node adds its own collector (node/app/metrics.py)."""
