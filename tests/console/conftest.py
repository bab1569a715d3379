"""The browser fixtures (tests/console/browser.py) for every console test module."""

from tests.console.browser import browser, web

__all__ = ["browser", "web"]
