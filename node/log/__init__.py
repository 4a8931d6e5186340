"""The node's effect log and everything that reads or writes its bytes.

* `effect_log`: the ordered log of fully specified writes, its offsets and its replication
  history (the one owner of the node's replication position);
* `encode` and `scan`: the log's RESP, written and read back (C with the native build);
* `logged_xadd`: the log's XADDs appended straight to their streams;
* `applier`: the one path that applies log bytes to the node (a replica's batches, the AOF
  load).
"""
