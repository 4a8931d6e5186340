"""Persistence of one node: the append-only file of effects (fsync policies, group commit),
snapshots, the multi-part AOF directory with its manifest and rewrite, and loading at start.

`service.Persistence` is what the server holds; the other modules each own one format or one
mechanism (see docs/persistence.md).
"""
