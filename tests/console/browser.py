"""A real browser for the console's and the report's tests: Debian's chromium driven by Playwright for Python.

Playwright's own browser download cannot work here (no network), so it launches /usr/bin/chromium with the flags
that keep chromium from calling out (../shared/notes/peers.md).  Without chromium the tests skip saying so,
except under CI, where .ci/install-clients.sh installs it and its absence is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("MOCKBROKER_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
# where the tests write the docs' screenshots: `make screenshots` sets it to docs/img/console
SCREENSHOTS = os.environ.get("MOCKBROKER_SCREENSHOTS")


def _need_browser() -> Any:
    missing = []
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing.append("playwright is not installed (pip install playwright)")
        sync_playwright = None
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        missing.append(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    if missing:
        reason = "; ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: {reason}")
        pytest.skip(reason)
    return sync_playwright


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless chromium for a test module (each test gets its own context: no shared cookies)."""
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


class Page:
    """A page of a fresh context, with every script error, dialog (alert) and request leaving 127.0.0.1 or
    file:// recorded, so a test can assert that a hostile value ran nothing and nothing was fetched from outside."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.outside: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("dialog", self._dialog)
        self.page.on("request", self._request)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _request(self, request: Any) -> None:
        url = request.url
        if not url.startswith(("http://127.0.0.1", "file://", "data:", "about:")):
            self.outside.append(url)

    def screenshot(self, name: str, tmp: Path) -> Path:
        folder = Path(SCREENSHOTS) if SCREENSHOTS else tmp
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=False)
        return path

    def clean(self) -> None:
        """Nothing ran that a page did not mean to run, and nothing came from outside."""
        assert self.dialogs == [], f"a dialog opened: {self.dialogs}"
        assert self.errors == [], f"script errors: {self.errors}"
        assert self.outside == [], f"fetched from outside: {self.outside}"


@pytest.fixture
def web(browser: Any) -> Iterator[Page]:
    page = Page(browser)
    try:
        yield page
    finally:
        page.context.close()
