"""A real `mambasizer serve` on a free loopback port and Debian's headless Chromium, driven by
Selenium through chromium-driver (scripts/test.sh installs both when missing).

Screenshots of every view go to $MAMBASIZER_SCREENSHOTS, else artifacts/screenshots under the
repository (gitignored); the path is printed in pytest's summary so CI logs show it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from serving import start_mambasizer

CHROMIUM = os.environ.get("MAMBASIZER_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("MAMBASIZER_CHROMEDRIVER", "/usr/bin/chromedriver")
REPO = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("MAMBASIZER_SCREENSHOTS", REPO / "artifacts" / "screenshots"))
CHROMIUM_FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1400,1700",
)
_taken: list[Path] = []


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The base URL of a running `mambasizer serve`."""
    workdir = tmp_path_factory.mktemp("serve")
    srv = start_mambasizer("serve", "--log-level", "warning", cwd=workdir, log=workdir / "stderr.log", ready="/readyz")
    try:
        yield srv.base
    finally:
        srv.stop(graceful_s=20)


@pytest.fixture(scope="session")
def driver():
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip(f"needs {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver; scripts/test.sh does)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="mambasizer-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS + (f"--user-data-dir={profile}",):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    drv.set_page_load_timeout(60)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture()
def shoot(driver):
    """shoot(name): save a full-window screenshot of the current view."""
    SHOTS.mkdir(parents=True, exist_ok=True)

    def take(name: str) -> Path:
        path = SHOTS / f"{name}.png"
        height = driver.execute_script("return Math.ceil(document.documentElement.scrollHeight)")
        driver.set_window_size(1400, max(900, min(int(height) + 120, 4000)))
        assert driver.save_screenshot(str(path)), path
        _taken.append(path)
        return path

    return take


def pytest_terminal_summary(terminalreporter):
    if _taken:
        terminalreporter.write_sep("-", "capacity explorer screenshots")
        terminalreporter.write_line(f"{len(_taken)} screenshots in {SHOTS}")
