"""The Items, Review and People pages in a real browser (headless chromium): edit an item and
see its audit entry, forget and restore it, accept a dream's op from the review queue, and
rewrite a profile section that the person's Markdown file then shows; no CSP violation.

Skipped as `test_console_browser.py` is when chromium or chromedriver is missing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from nahida.memory.core.models import PROFILE_SECTIONS
from tests.browser.harness import (
    WAIT,
    ConsoleThread,
    browser_missing,
    chromium,
    item_id,
    log_in,
    wait_for,
)
from tests.browser.test_console_browser import violations
from tests.console_data import ALICE, BOB, DREAM_UPDATE

pytestmark = pytest.mark.slow


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
        log_in(driver, console)
        yield driver


def submit(driver: WebDriver, selector: str, confirm: bool = False) -> None:
    """Press a form's button and wait for the page it redirects to (accepting its question)."""
    old = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.CSS_SELECTOR, selector).click()
    if confirm:
        WebDriverWait(driver, WAIT).until(lambda d: d.switch_to.alert).accept()
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.TAG_NAME, "html") != old)
    wait_for(driver, "main")


def test_editing_an_item_shows_the_console_in_its_audit_trail(
    console: ConsoleThread, browser: WebDriver
) -> None:
    browser.get(f"{console.url}items/{item_id(browser, console, 'Solaris')}")
    wait_for(browser, "form.edit")
    field = browser.find_element(By.ID, "edit-text")
    field.clear()
    field.send_keys("Alice likes the books Solaris and Fiasco by Stanisław Lem")
    submit(browser, "form.edit button")
    assert "Fiasco" in browser.find_element(By.CSS_SELECTOR, "section.item-text").text
    audit = browser.find_element(By.CSS_SELECTOR, "section.audit").text
    assert "console" in audit
    assert violations(browser) == []


def test_forget_then_restore(console: ConsoleThread, browser: WebDriver) -> None:
    browser.get(f"{console.url}items/{item_id(browser, console, 'peanuts')}")
    wait_for(browser, "button.forget")
    submit(browser, "button.forget", confirm=True)
    assert browser.find_element(By.CSS_SELECTOR, "dd.status").text == "archived"
    submit(browser, "button.restore")
    assert browser.find_element(By.CSS_SELECTOR, "dd.status").text == "active"
    actions = browser.find_element(By.CSS_SELECTOR, "section.audit").text
    assert "archive" in actions and "restore" in actions
    assert violations(browser) == []


def test_accepting_a_dream_op_from_the_review_queue(
    console: ConsoleThread, browser: WebDriver
) -> None:
    browser.get(console.url + "review")
    wait_for(browser, "article.pending")
    assert "Saturday" in browser.find_element(By.CSS_SELECTOR, "p.diff ins").text
    submit(browser, "article.pending form.decide button[value='accept']")
    assert browser.find_elements(By.CSS_SELECTOR, "article.pending") == []
    browser.get(f"{console.url}items?text=Saturday")
    wait_for(browser, "main")
    assert DREAM_UPDATE in browser.find_element(By.TAG_NAME, "main").text
    assert violations(browser) == []


def test_a_profile_section_edited_shows_in_the_persons_file(
    console: ConsoleThread, browser: WebDriver
) -> None:
    browser.get(f"{console.url}people/{BOB}")
    wait_for(browser, "section.profile")
    field = browser.find_element(By.ID, "section-1")
    field.clear()
    field.send_keys("reads one chapter a night")
    submit(browser, "section.profile form.section button")
    assert "reads one chapter a night" in browser.find_element(By.ID, "section-1").text
    profile = console.paths.workspace / "users" / f"{BOB.replace(':', '_')}.md"
    text = profile.read_text(encoding="utf-8")
    assert PROFILE_SECTIONS[0] in text and "reads one chapter a night" in text
    browser.get(f"{console.url}people")
    wait_for(browser, "tr.person")
    assert ALICE in browser.find_element(By.CSS_SELECTOR, "table.people").text
    assert violations(browser) == []
