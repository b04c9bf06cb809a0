"""A shared link the explorer cannot honour (a preset, GPU, release or sweep axis this server
does not have) says which field and why, shows nothing green, and greys the controls that show
what is planned instead; the link stays as it was shared until a control changes, and a link
the page can honour shows none of this (headless Chromium against a real `mambasizer serve`)."""

from __future__ import annotations

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from test_explorer_browser import (
    assert_figures_are_the_plans,
    form_request,
    open_view,
    plan,
    url_state,
    wait_idle,
)

DEFAULT_PRESET, DEFAULT_GPU = "qwen3-next-80b-a3b-instruct", "h200"


def link_problem(driver) -> dict:
    return driver.execute_script(
        "const box = document.getElementById('link-problem');"
        "return {shown: !box.hidden && box.offsetParent !== null, role: box.getAttribute('role'), text: box.textContent,"
        " fields: [...box.querySelectorAll('li')].map(li => li.dataset.field)};"
    )


def greyed(driver, control: str) -> dict:
    return driver.execute_script(
        "const c = document.getElementById(arguments[0]);"
        "return {unhonoured: c.classList.contains('unhonoured'), invalid: c.getAttribute('aria-invalid'), value: c.value,"
        " describedby: c.getAttribute('aria-describedby'), opacity: getComputedStyle(c).opacity};",
        control,
    )


def green_anywhere(driver) -> list[str]:
    """Elements whose painted background is green (the "would start" colour), after the
    filters the page applies: none while a link is not honoured."""
    return driver.execute_script(
        "const out = [];"
        "for (const n of document.querySelectorAll('#results *')) {"
        "  if (n.offsetParent === null) continue;"
        "  const m = getComputedStyle(n).backgroundColor.match(/\\d+/g); if (!m) continue;"
        "  const [r, g, b] = m.map(Number);"
        "  let f = 'none'; for (let a = n; a && a !== document; a = a.parentElement) { const x = getComputedStyle(a).filter; if (x !== 'none') { f = x; break; } }"
        "  if (g > r + 20 && g > b + 10 && !f.includes('grayscale')) out.push(n.id || n.className);"
        "}"
        "return out;"
    )


def test_an_unknown_preset_says_so_and_shows_nothing_green(driver, server, shoot):
    query = {"preset": "qwen9-1t-a1b", "gpu": "h200", "tp": "4", "pp": "1"}
    open_view(driver, server, query)
    box = link_problem(driver)
    assert box["shown"] and box["role"] == "alert" and box["fields"] == ["preset"]
    assert 'preset "qwen9-1t-a1b" is not a preset this server has (GET /v1/presets lists them)' in box["text"]
    assert f'planned with preset "{DEFAULT_PRESET}" instead' in box["text"]
    # the greyed control shows what was planned: the plan on the page is that preset's
    g = greyed(driver, "preset")
    assert g == {"unhonoured": True, "invalid": "true", "value": DEFAULT_PRESET, "describedby": "link-problem", "opacity": "0.6"}
    p = plan(server, form_request(DEFAULT_PRESET, "h200", 4, 1))
    assert p["feasible"]
    assert_figures_are_the_plans(driver, p)
    status = driver.find_element(By.ID, "status")
    assert "ok" not in status.get_attribute("class").split() and "substituted" in status.get_attribute("class").split()
    assert status.text.startswith('Not the link\'s plan (preset "qwen9-1t-a1b" is unavailable). Planned instead: SGLang 0.5.23 would start')
    assert green_anywhere(driver) == []
    # the honoured fields are not greyed, and the address bar keeps the link as shared
    assert not greyed(driver, "gpu")["unhonoured"] and greyed(driver, "gpu")["invalid"] is None
    assert url_state(driver) == query
    shoot("link-unknown-preset")

    # Choosing a preset: the page now shows the user's choice, in green, and the URL follows.
    Select(driver.find_element(By.ID, "preset")).select_by_value("kimi-linear-48b-a3b-instruct")
    wait_idle(driver)
    assert not link_problem(driver)["shown"]
    assert not greyed(driver, "preset")["unhonoured"] and greyed(driver, "preset")["invalid"] is None
    assert "ok" in driver.find_element(By.ID, "status").get_attribute("class").split()
    assert url_state(driver)["preset"] == "kimi-linear-48b-a3b-instruct"
    assert_figures_are_the_plans(driver, plan(server, form_request("kimi-linear-48b-a3b-instruct", "h200", 4, 1)))


def test_an_unknown_gpu_and_release_name_each_field(driver, server, shoot):
    query = {"preset": "nemotron-h-56b-base-8k", "gpu": "h999", "release": "0.4.0", "tp": "2", "pp": "4"}
    open_view(driver, server, query)
    box = link_problem(driver)
    assert box["shown"] and box["fields"] == ["gpu", "release"]
    assert 'gpu "h999" is not in this server\'s GPU catalog (GET /v1/gpus lists it)' in box["text"]
    assert 'release "0.4.0" is not an SGLang release this server plans (it plans 0.5.8 to 0.5.23)' in box["text"]
    assert greyed(driver, "gpu")["unhonoured"] and greyed(driver, "gpu")["value"] == DEFAULT_GPU
    assert greyed(driver, "release")["unhonoured"] and greyed(driver, "release")["value"] == "0.5.23"
    assert not greyed(driver, "preset")["unhonoured"]
    assert_figures_are_the_plans(driver, plan(server, form_request("nemotron-h-56b-base-8k", DEFAULT_GPU, 2, 4)))
    status = driver.find_element(By.ID, "status")
    assert status.text.startswith('Not the link\'s plan (gpu "h999" is unavailable, release "0.4.0" is unavailable). Planned instead: ')
    assert "ok" not in status.get_attribute("class").split()
    assert green_anywhere(driver) == []
    assert url_state(driver) == query
    shoot("link-unknown-gpu-and-release")

    # The TP field is not one of them, but touching it is the user's choice too: all clear.
    tp = driver.find_element(By.ID, "tp")
    tp.clear()
    tp.send_keys("4")
    wait_idle(driver)
    assert not link_problem(driver)["shown"] and driver.execute_script("return document.querySelectorAll('.unhonoured').length") == 0
    assert url_state(driver)["gpu"] == DEFAULT_GPU and "release" not in url_state(driver)


def test_a_preset_listed_but_not_sized_says_why(driver, server):
    open_view(driver, server, {"preset": "jamba-v0.1", "gpu": "h200", "tp": "4"})
    box = link_problem(driver)
    assert box["shown"] and box["fields"] == ["preset"]
    assert 'preset "jamba-v0.1" is listed but not sized by this server (' in box["text"]
    assert green_anywhere(driver) == []


def test_a_link_it_can_honour_shows_no_warning(driver, server):
    open_view(driver, server, {"preset": "kimi-linear-48b-a3b-instruct", "gpu": "h200", "tp": "2", "pp": "2"})
    assert not link_problem(driver)["shown"]
    assert driver.execute_script("return document.querySelectorAll('.unhonoured').length") == 0
    assert "ok" in driver.find_element(By.ID, "status").get_attribute("class").split()
    assert driver.execute_script("return document.body.classList.contains('link-unhonoured')") is False
