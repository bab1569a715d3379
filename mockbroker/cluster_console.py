"""MockCluster's HTTP side for people: the control API's server with the web console on it (``/ui/``), and the
HTML report of what the cluster saw.

    with MockCluster(control_port=0) as cluster:
        cluster.console_url               # http://127.0.0.1:PORT/ui/
        cluster.write_report("run.html")  # one self-contained file: topics, groups, journal, faults

The console and the report live in mockbroker.console; they are imported only when asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mockbroker.control import ControlServer
    from mockbroker.scenarios.runner import ScenarioRun


class ConsoleMixin:
    """The console half of MockCluster (which provides ``call`` and the control options)."""

    control: ControlServer | None
    _control_options: tuple[str, int | None, str | None]
    scenario_run: ScenarioRun | None = None  # the scenario playing on this cluster (the console shows its steps)

    if TYPE_CHECKING:
        def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any: ...

    def _make_control(self) -> ControlServer | None:
        host, port, token = self._control_options
        if port is None:
            return None
        from mockbroker.console.server import console_control_server

        return console_control_server(self, host, port, token)  # type: ignore[arg-type]

    @property
    def console_url(self) -> str | None:
        """``http://host:port/ui/`` of the web console, when the control API runs (with ``?token=`` when it has
        one: the page keeps it as a cookie)."""
        if self.control is None:
            return None
        token = self._control_options[2]
        return f"{self.control.url}/ui/" + (f"?token={token}" if token else "")

    def report_html(self, title: str = "mockbroker report", outcome: str | None = None, detail: str = "") -> str:
        """The HTML report of this cluster as it is now (taken on the cluster's loop, between requests)."""
        from mockbroker.console.report import report_html

        return str(self.call(report_html, self, title, outcome, detail))

    def write_report(self, path: str | Path, title: str | None = None, outcome: str | None = None,
                     detail: str = "") -> Path:
        """Write the HTML report to ``path`` (one file that opens from disk, no server); returns the path."""
        target = Path(path)
        text = self.report_html(title or target.stem, outcome, detail)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return target
