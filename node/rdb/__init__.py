"""Redis's RDB format, as Redis 7.0 and 7.2 write it: the codec of DUMP/RESTORE payloads,
`dump.rdb` files and the full-sync transfer of Redis's replication protocol.

Pure like the engine (an import-linter contract): bytes in, values out and back, no I/O and
no clock. `encoding` holds the primitives (lengths, strings, LZF, CRC64), `listpack` Redis's
listpack, `stream_codec` a stream with its consumer groups, `values` the value types Rill
has, `dump` the DUMP payload, `file` whole RDB files.
"""
