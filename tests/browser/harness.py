"""A real browser on the console: Debian's `chromium`, driven headless by Selenium through
Debian's `chromedriver`, both named by path, with Selenium Manager offline (`SE_OFFLINE`), so
nothing is ever downloaded.

`ConsoleThread` serves the console the way `nahida admin` does — memory opened by
`app.memory_for` over a data dir, the doctor's checks — in a thread with its own event loop, over
the seeded memory of `tests/console_data.py`. `capture` writes a PNG of each page the docs show
(the browser test and `scripts/console_screenshots.py` call it).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from nahida.app import Paths, memory_for
from nahida.cli.doctor import console_checks
from nahida.cli.state import State
from nahida.console import ConsoleServer, create_app
from nahida.console.auth import TokenFile
from tests.console_data import ALICE, DREAM_RUN, GROUP, seed, write_config

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("CHROMEDRIVER_PATH", "/usr/bin/chromedriver"))
WAIT = 20.0  # seconds a page may take in a slow CI machine
# (file name, path, what the page must show before it is captured)
SHOTS = (
    ("console-login.png", "login", "#secret"),
    ("console-memory.png", f"memory?chat={GROUP}&user={ALICE.split(':')[1]}&q=book", "table.hits"),
    ("console-settings.png", "settings", "ul.lines"),
    # items, review and people (console-pages-b); {item}: the peanut allergy's id
    ("console-items.png", "items", "table.items"),
    ("console-item.png", "items/{item}", "section.audit"),
    ("console-review.png", "review", "article.pending"),
    ("console-people.png", f"people/{ALICE}", "section.profile"),
)
# Overview, Chats and Dreams (console/activity.py)
SHOTS += (
    ("console-overview.png", "", "#chart-added"),
    ("console-chats.png", f"chats/{quote(GROUP, safe='')}", "#dreaming"),
    ("console-dreams.png", f"dreams/{DREAM_RUN}", "#proposals"),
)


def browser_missing() -> str | None:
    """Why no browser test can run here (None: both are installed)."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (path.is_file() and os.access(path, os.X_OK)):
            return f"{path} is missing: apt-get install chromium chromium-driver ({package})"
    return None


@contextmanager
def chromium(width: int = 1200, height: int = 760) -> Iterator[WebDriver]:
    """Headless chromium at a fixed size, its console messages kept (CSP reports show there)."""
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager: never fetch a browser or a driver
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root, where chromium's sandbox cannot start
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        "--force-device-scale-factor=1",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()


class ConsoleThread:
    """The console over a seeded data dir under `root`, served from a thread of its own."""

    def __init__(self, root: Path, base_url: str | None = None, **admin: Any) -> None:
        self.root = root
        config = write_config(root / "config" / "nahida.yaml", base_url, **admin)
        self.paths = Paths(config, root / "data", root / "workspace")
        self.url = ""
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="console", daemon=True)

    @property
    def token(self) -> str:
        return TokenFile(self.paths.data_dir).read()

    def __enter__(self) -> ConsoleThread:
        self._thread.start()
        if not self._ready.wait(60):
            raise TimeoutError("the console did not start within 60 s")
        if self._failed is not None:
            raise RuntimeError("the console did not start") from self._failed
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported to the thread that waits for the start
            self._failed = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        state = State(self.paths)
        config = state.config
        memory = memory_for(config, self.paths)
        try:
            await seed(memory, self.root)
            app = create_app(memory, config, self.paths.data_dir, checks=console_checks(state))
            server = ConsoleServer(app, config.admin.host, config.admin.port)
            await server.start()
            self.url = server.url
            self._ready.set()
            await self._stop.wait()
            await server.stop()
        finally:
            memory.close()


def wait_for(driver: WebDriver, selector: str) -> None:
    WebDriverWait(driver, WAIT).until(lambda d: d.find_elements(By.CSS_SELECTOR, selector))


def log_in(driver: WebDriver, console: ConsoleThread) -> None:
    """Log in with the token (a browser logged in already is sent on by the login page)."""
    driver.get(console.url + "login")
    wait_for(driver, "#secret, .top nav")
    if not driver.find_elements(By.ID, "secret"):
        return
    driver.find_element(By.ID, "secret").send_keys(console.token)
    driver.find_element(By.CSS_SELECTOR, "form[action='/admin/login'] button").click()
    WebDriverWait(driver, WAIT).until(lambda d: "/admin/login" not in d.current_url)


def item_id(driver: WebDriver, console: ConsoleThread, words: str) -> str:
    """The id of the first item the Items listing finds for these words."""
    driver.get(f"{console.url}items?text={words}")
    wait_for(driver, "tr.item")
    found = driver.find_element(By.CSS_SELECTOR, "tr.item").get_attribute("data-id")
    assert found, words
    return found


def capture(
    driver: WebDriver, console: ConsoleThread, folder: Path, lang: str = "en"
) -> list[Path]:
    """A PNG of each page the docs show, in `lang`, written to `folder`: the login page logged
    out, then the others logged in."""
    folder.mkdir(parents=True, exist_ok=True)
    driver.get(console.url + "login")
    driver.delete_all_cookies()
    written = []
    for name, path, shown in SHOTS:
        if path != "login" and not driver.get_cookie("nahida_session"):
            log_in(driver, console)
        if "{item}" in path:
            path = path.replace("{item}", item_id(driver, console, "peanuts"))
        separator = "&" if "?" in path else "?"
        driver.get(f"{console.url}{path}{separator}lang={lang}")
        wait_for(driver, shown)
        target = folder / name
        driver.save_screenshot(str(target))
        written.append(target)
    return written
