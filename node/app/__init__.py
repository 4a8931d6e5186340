"""The node assembled: `rill_node.RillNode` builds the node's parts, connects them and runs
them; `info` renders INFO and MEMORY STATS, which span every part."""
