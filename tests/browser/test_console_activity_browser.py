"""Overview, Chats and Dreams in a real browser (headless chromium): the Overview's charts show
the seeded numbers, a transcript shows what a turn recalled, a run shows why a proposal was
rejected, each page under its Content-Security-Policy without a violation."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime
from urllib.parse import quote

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from nahida.memory.core.sources import source_family
from tests.browser.harness import ConsoleThread, browser_missing, chromium, log_in, wait_for
from tests.browser.test_console_browser import violations
from tests.console_data import DREAM_REJECTED, DREAM_RUN, GROUP, HOSTILE, ITEMS, TURNS

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
        yield driver


def test_the_overview_charts_show_the_seeded_numbers(
    console: ConsoleThread, browser: WebDriver
) -> None:
    log_in(browser, console)
    browser.get(console.url + "?lang=en")
    wait_for(browser, "#chart-added svg")
    today = datetime.now().astimezone().date().isoformat()
    # the seed's items were all added today, by an admin's edit: one family holds them all
    family = source_family("human_edit")
    bar = browser.find_element(By.CSS_SELECTOR, f"#chart-added g.bar[data-day='{today}']")
    assert bar.get_attribute("data-total") == str(len(ITEMS))
    segment = bar.find_element(By.CSS_SELECTOR, f"rect[data-name='{family}']")
    assert segment.get_attribute("data-value") == str(len(ITEMS))
    assert float(segment.get_attribute("height") or 0) > 0
    title = segment.find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert title is not None and title.endswith(f": {len(ITEMS)}")
    row = f"table[data-chart='chart-dreams'] tr[data-day='{today}'] td"
    cells = browser.find_elements(By.CSS_SELECTOR, row)
    assert [c.get_attribute("textContent") for c in cells] == ["1", "1", "1"]
    assert browser.find_element(By.ID, "count-turns").text == str(len(TURNS))
    assert violations(browser) == []


def test_a_transcript_and_a_dream_run(console: ConsoleThread, browser: WebDriver) -> None:
    log_in(browser, console)
    browser.get(console.url + "chats/" + quote(GROUP, safe=""))
    wait_for(browser, "#sessions a")
    browser.find_element(By.CSS_SELECTOR, "#sessions tbody a").click()
    wait_for(browser, "ol.transcript")
    first = browser.find_element(By.CSS_SELECTOR, "li.turn")
    assert TURNS[0][3] in first.text
    recalled = first.find_elements(By.CSS_SELECTOR, "aside.recall li.recalled-item")
    assert len(recalled) == 2 and "reading club" in recalled[0].text
    browser.get(console.url + f"dreams/{DREAM_RUN}")
    wait_for(browser, "#proposals")
    table = browser.find_element(By.ID, "proposals").text
    assert DREAM_REJECTED in table and HOSTILE in table  # hostile text shown as text
    assert violations(browser) == []
