"""Screenshots of the memory console for the docs: docs/images/console-*.png.

    .venv/bin/python scripts/console_screenshots.py [--out docs/images]

Serves the console the way `nahida admin` does over a seeded data dir in a temporary folder
(`tests/console_data.py`: two people, a group, a memory private to each), with a fake
OpenAI-compatible provider on loopback so the checks' ping passes, and drives Debian's chromium
through its chromedriver (headless; Selenium Manager offline, nothing downloaded) over each page
the docs show, in English, and the Memory page once more in Chinese, the default language.

Needs `apt-get install chromium chromium-driver`, and a CJK font for the Chinese text
(`fonts-wqy-microhei`). The browser test (`tests/browser/`) takes the same pictures on each run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nahida.logs import configure_logging  # noqa: E402
from tests.browser.harness import (  # noqa: E402
    SHOTS,
    ConsoleThread,
    browser_missing,
    capture,
    chromium,
    wait_for,
)
from tests.fakes.llm_server import serve_until_stopped  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    missing = browser_missing()
    if missing is not None:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    configure_logging("WARNING")
    for name in list(os.environ):  # the developer's own settings stay out of the pictures
        if name.startswith(("NAHIDA", "OPENAI", "ANTHROPIC")):
            del os.environ[name]
    urls: multiprocessing.Queue[str] = multiprocessing.Queue()
    provider = multiprocessing.Process(target=serve_until_stopped, args=("openai", urls))
    provider.start()
    try:
        with (
            tempfile.TemporaryDirectory() as folder,
            ConsoleThread(Path(folder), urls.get(timeout=30)) as console,
            chromium() as driver,
        ):
            written = capture(driver, console, args.out)
            _, memory_page, shown = SHOTS[1]
            driver.get(f"{console.url}{memory_page}&lang=zh")
            wait_for(driver, shown)
            chinese = args.out / "console-memory-zh.png"
            driver.save_screenshot(str(chinese))
            written.append(chinese)
    finally:
        provider.terminate()
        provider.join()
    for path in written:
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}"
              f" ({path.stat().st_size // 1024} KiB)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
