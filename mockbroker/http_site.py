"""An aiohttp application listening on a host and port of its own, that can stop and start listening again
on the same port: what the HTTP control API and the Schema Registry each run on the cluster's loop."""

from __future__ import annotations

from aiohttp import web


class HttpSite:
    def __init__(self, app: web.Application, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app, self.host, self.port = app, host, port
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        await self.up()

    async def up(self) -> None:
        """Listen (again, on the same port once it has one: port 0 is chosen by the system the first time)."""
        if self._site is not None or self._runner is None:
            return
        self._site = web.TCPSite(self._runner, self.host, self.port)
        await self._site.start()
        sockets = getattr(self._site._server, "sockets", None)  # an asyncio.Server's (AbstractServer declares none)
        if sockets:
            self.port = sockets[0].getsockname()[1]

    async def down(self) -> None:
        """Stop listening: clients meet a refused connection until ``up``."""
        if self._site is not None:
            await self._site.stop()
            self._site = None

    @property
    def listening(self) -> bool:
        return self._site is not None

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = self._site = None

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"
