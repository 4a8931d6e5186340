"""Side-by-side benchmarks of Rill against redis-server (`python -m bench`, `make bench`).

Only public interfaces are used: server processes, redis-benchmark and RESP over sockets.
"""
