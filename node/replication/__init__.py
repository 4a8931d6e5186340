"""The node's replication role: it plugs the node's log and data into the stream-agnostic
`replication` package (the top-level one: log shipping over gRPC), as a primary and as a
replica, and answers the replication commands."""
