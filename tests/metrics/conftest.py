"""The replication tests' `started` fixture: nodes a test starts, stopped at its end."""

from tests.replication_node.conftest import started  # noqa: F401
