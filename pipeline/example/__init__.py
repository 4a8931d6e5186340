"""The example data pipeline behind ``make pipeline``: shop events produced into a Rill
cluster, a Structured Streaming job that reads them from a replica and keeps windowed
aggregates (to a Rill stream and to Parquet), and a batch report over the history.
``events`` makes the events, ``jobs`` defines the Spark jobs, ``__main__`` runs it all."""
