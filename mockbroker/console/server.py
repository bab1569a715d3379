"""The control API's HTTP server with the console's pages added to its application (one port for both)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mockbroker.console.routes import add_console_routes
from mockbroker.control.app import CLUSTER_KEY, ControlServer

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster


def console_control_server(cluster: MockCluster, host: str, port: int, token: str | None) -> ControlServer:
    server = ControlServer(cluster, host, port, token)
    add_console_routes(server.app, lambda request: request.app[CLUSTER_KEY])
    return server
