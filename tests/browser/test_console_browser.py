"""The console in a real browser (Debian's chromium, headless): log in, search as a viewer in a
group, see Settings with every secret masked, switch the language, log out; every page under its
own Content-Security-Policy without a violation. Writes the docs' screenshots as it goes (to
`$CONSOLE_SCREENSHOTS` when set, else a temporary folder; `scripts/console_screenshots.py` writes
them to docs/images).

Skipped with the reason when chromium or chromedriver is missing — except in CI (`CI=true`),
where a missing browser fails: CI installs both (`.ci/run`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.harness import (
    SHOTS,
    ConsoleThread,
    browser_missing,
    capture,
    chromium,
    log_in,
    wait_for,
)
from tests.console_data import ALICE, BOB_PRIVATE, GROUP, GROUP_TEXT, HOSTILE, SECRETS

pytestmark = pytest.mark.slow
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleThread]:
    missing = browser_missing()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the browser tests: {missing}")
        pytest.skip(missing)
    with ConsoleThread(tmp_path_factory.mktemp("console")) as running:
        yield running


@pytest.fixture(scope="module")
def browser(console: ConsoleThread) -> Iterator[WebDriver]:
    with chromium() as driver:
        yield driver


def violations(driver: WebDriver) -> list[str]:
    """What the browser logged against the page: CSP refusals, script errors."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] in ("SEVERE", "WARNING") and "favicon.ico" not in entry["message"]
    ]


def search(driver: WebDriver, console: ConsoleThread, chat: str, user: str, q: str) -> str:
    driver.get(console.url + "memory")
    wait_for(driver, "form.search")
    for name, value in (("chat", chat), ("user", user), ("q", q)):
        field = driver.find_element(By.ID, name)
        field.clear()
        field.send_keys(value)
    driver.find_element(By.CSS_SELECTOR, "form.search button").click()
    wait_for(driver, "section.results")
    return driver.find_element(By.CSS_SELECTOR, "section.results").text


def test_a_viewer_in_the_group_sees_the_groups_memory_not_anothers_private(
    console: ConsoleThread, browser: WebDriver
) -> None:
    log_in(browser, console)
    assert browser.current_url == console.url
    shown = search(browser, console, GROUP, ALICE.split(":")[1], "book")
    assert GROUP_TEXT in shown
    assert BOB_PRIVATE not in shown
    assert "peanuts" not in shown
    assert HOSTILE in shown  # shown as the text it is
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 (the script never ran)
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.hit")
    scopes = {row.get_attribute("data-scope") for row in rows}
    assert f"chat:{GROUP}" in scopes and "user:onebot:43" not in scopes
    private = search(browser, console, "onebot:private:43", "", "sister")
    assert BOB_PRIVATE in private  # the same memory, in its own person's chat
    assert violations(browser) == []


def test_settings_show_the_checks_and_mask_every_secret(
    console: ConsoleThread, browser: WebDriver
) -> None:
    log_in(browser, console)
    browser.get(console.url + "settings")
    wait_for(browser, "ul.lines")
    html = browser.page_source
    for secret in (*SECRETS, console.token):
        assert secret not in html
    config = browser.find_element(By.CSS_SELECTOR, ".config pre").text
    assert "api_key: '***'" in config and "access_token: '***'" in config
    lines = browser.find_element(By.CSS_SELECTOR, "ul.lines").text
    assert "SQLite" in lines and "provider main" in lines
    assert violations(browser) == []


def test_the_language_switches_and_logging_out_ends_the_session(
    console: ConsoleThread, browser: WebDriver
) -> None:
    log_in(browser, console)
    browser.get(console.url + "review")
    wait_for(browser, "p.intro")
    assert browser.find_element(By.TAG_NAME, "h1").text == "审核"
    browser.find_element(By.CSS_SELECTOR, "a.lang").click()
    wait_for(browser, "html[lang='en']")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Review"
    nav = [a.text for a in browser.find_elements(By.CSS_SELECTOR, ".top nav a")]
    assert nav == ["Overview", "Memory", "Item", "Review", "People", "Chats", "Dreams", "Settings"]
    browser.find_element(By.CSS_SELECTOR, "form[action='/admin/logout'] button").click()
    wait_for(browser, "#secret")
    assert "Logged out." in browser.page_source
    browser.get(console.url + "settings")
    wait_for(browser, "#secret")
    assert "/admin/login" in browser.current_url
    browser.find_element(By.CSS_SELECTOR, "a.lang").click()  # back to Chinese for the next test
    wait_for(browser, "html[lang='zh-CN']")


def test_screenshots_of_the_pages_the_docs_show(
    console: ConsoleThread, browser: WebDriver, tmp_path: Path
) -> None:
    folder = Path(os.environ.get("CONSOLE_SCREENSHOTS") or tmp_path)
    written = capture(browser, console, folder)
    assert [p.name for p in written] == [name for name, _, _ in SHOTS]
    for path in written:
        data = path.read_bytes()
        assert data.startswith(PNG) and len(data) > 5000, path
    assert violations(browser) == []
