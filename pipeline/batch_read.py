"""Batch reads (``spark.read.format("rill")``): the driver resolves each stream's bounds on one
node (the primary, or the first replica with readFrom=replica) and cuts the range into
``partitionsPerStream`` ID ranges, dealt round-robin over the read nodes; executors read them
(pipeline.reading).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from pipeline import arrow, ids
from pipeline.connection import Node, discover, read_nodes
from pipeline.options import connection_options, read_options
from pipeline.planning import batch_range, stream_state
from pipeline.reading import RangePartition, ReadSpec, read_range


def deal(nodes: tuple[Node, ...], k: int) -> tuple[Node, ...]:
    """The read nodes rotated so that partition ``k`` starts on node ``k mod n`` (read scaling);
    the others stay as fallbacks."""
    i = k % len(nodes)
    return nodes[i:] + nodes[:i]


class RillBatchReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: object) -> None:
        self.conn = connection_options(options)
        self.opts = read_options(options, streaming=False)
        self.spec = ReadSpec(self.conn, arrow.projection(schema), self.opts.batch_size, self.opts.arrow_batches)

    def partitions(self) -> Sequence[InputPartition]:
        nodes = read_nodes(self.conn, discover(self.conn))
        client = nodes[0].client(self.conn.socket_timeout)
        try:
            parts: list[InputPartition] = []
            for stream in self.opts.streams:
                bounds = batch_range(stream_state(client, stream), self.opts.starting[stream],
                                     self.opts.ending[stream])
                if bounds is None:
                    continue
                for lo, hi in ids.split(*bounds, self.opts.partitions_per_stream):
                    parts.append(RangePartition(stream, lo, hi, deal(nodes, len(parts)), self.spec))
        finally:
            client.close()
        # Spark wants at least one partition; an empty range reads nothing.
        return parts or [RangePartition(self.opts.streams[0], 1, 0, nodes, self.spec)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, RangePartition)
        if partition.lo > partition.hi:
            return iter(())
        return read_range(partition)
