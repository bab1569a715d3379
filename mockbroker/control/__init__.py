"""The HTTP control API: see app.py and openapi.yaml."""

from mockbroker.control.app import ControlServer, make_app

__all__ = ["ControlServer", "make_app"]
