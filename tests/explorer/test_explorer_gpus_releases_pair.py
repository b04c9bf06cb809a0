"""The explorer's GPU selector (every catalog part; a part without a confirmed capacity asks
for its MiB before anything is sent), its release selector (the releases the OpenAPI document
lists; the figures are that release's plan) and its disaggregated mode (both sides' plans and
the pair's summary side by side, equal to POST /v1/plan's answer for the same pair), in
headless Chromium against a real `mambasizer serve`."""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from mambasizer.schemas.releases import DEFAULT_RELEASE, SUPPORTED_RELEASES
from test_explorer_browser import (  # noqa: F401  (no_console_errors: the same autouse check here)
    NO_FIGURE,
    assert_figures_are_the_plans,
    form_request,
    no_console_errors,
    open_view,
    plan,
    severe_console,
    shown_figures,
    sweep_points,
    url_state,
    wait_idle,
)

QWEN = "qwen3-next-80b-a3b-instruct"


def typed(driver, control: str, text: str) -> None:
    box = driver.find_element(By.ID, control)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(text) if text else box.send_keys(Keys.DELETE)
    wait_idle(driver)


def options(driver, control: str) -> list[str | None]:
    return [o.get_attribute("value") for o in Select(driver.find_element(By.ID, control)).options]


# ------------------------------------------------------------------ GPUs


def test_the_gpu_selector_offers_every_catalog_part(driver, server, shoot):
    catalog = httpx.get(f"{server}/v1/gpus", timeout=30).json()["gpus"]
    unconfirmed = [g for g in catalog if not g["confirmed"]]
    assert unconfirmed and any(g["architecture"] != "hopper" for g in catalog)  # the selector has both kinds to show
    open_view(driver, server, {"preset": QWEN, "gpu": "mi300x", "tp": 4})
    assert options(driver, "gpu") == [g["name"] for g in catalog]
    assert not driver.find_element(By.ID, "gpu-mib-row").is_displayed()  # a confirmed part needs no MiB
    assert_figures_are_the_plans(driver, plan(server, form_request(QWEN, "mi300x", 4)))
    assert "AMD Instinct MI300X of 196,592 MiB" in driver.find_element(By.ID, "status").text
    shoot("gpu-mi300x-qwen3-next-tp4")

    # A part whose capacity no source confirms: the page asks for its MiB and sends nothing until given.
    part = unconfirmed[0]
    driver.get_log("browser")
    Select(driver.find_element(By.ID, "gpu")).select_by_value(part["name"])
    wait_idle(driver)
    assert driver.find_element(By.ID, "gpu-mib-row").is_displayed()
    assert driver.find_element(By.ID, "gpu-mib").get_attribute("required") == "true"
    problem = driver.find_element(By.ID, "problem")
    assert problem.is_displayed() and problem.text.startswith("budget.gpu_memory_mib: no public source confirms the capacity of the " + part["product"])
    assert driver.find_element(By.ID, "gpu-mib").get_attribute("aria-invalid") == "true"
    assert shown_figures(driver)["max_running_requests"] == {"value": None, "text": NO_FIGURE}
    assert severe_console(driver) == []  # no request the service would refuse (a 422) went out
    shoot(f"gpu-{part['name']}-asks-for-mib")

    mib = 262_144
    typed(driver, "gpu-mib", str(mib))
    assert not problem.is_displayed() and driver.find_element(By.ID, "gpu-mib").get_attribute("aria-invalid") is None
    request = form_request(QWEN, part["name"], 4)
    request["budget"]["gpu_memory_mib"] = mib
    p = plan(server, request)
    assert p["feasible"] and p["gpu_memory_mib"] == mib
    assert_figures_are_the_plans(driver, p)
    assert url_state(driver)["gpu"] == part["name"] and url_state(driver)["mib"] == str(mib)
    link = driver.current_url
    driver.get("about:blank")
    driver.get(link)
    wait_idle(driver)
    assert driver.find_element(By.ID, "gpu-mib").get_attribute("value") == str(mib)
    assert_figures_are_the_plans(driver, p)
    shoot(f"gpu-{part['name']}-with-mib")


def test_the_gpu_sweep_offers_the_confirmed_parts(driver, server):
    catalog = httpx.get(f"{server}/v1/gpus", timeout=30).json()["gpus"]
    open_view(driver, server, {"preset": QWEN, "gpu": "h200", "tp": 4, "axis": "budget.gpu"})
    confirmed = [g["name"] for g in catalog if g["confirmed"]]
    points = sweep_points(driver)
    assert [pt["value"] for pt in points] == confirmed
    rows = httpx.post(f"{server}/v1/sweep", json={"base": form_request(QWEN, "h200", 4), "axes": [{"field": "budget.gpu", "values": confirmed}]}, timeout=60).json()["rows"]
    assert [(pt["feasible"], pt["requests"]) for pt in points] == [(str(r["feasible"]).lower(), str(r["max_running_requests"] or "")) for r in rows]
    assert any(pt["feasible"] == "true" for pt in points) and any(pt["feasible"] == "false" for pt in points)


# ------------------------------------------------------------------ releases


def test_the_release_selector_lists_the_servers_releases(driver, server, shoot):
    doc = httpx.get(f"{server}/openapi.json", timeout=30).json()
    version = doc["components"]["schemas"]["ApiPlanRequest"]["properties"]["sglang_version"]
    assert version["enum"] == list(SUPPORTED_RELEASES) and version["default"] == DEFAULT_RELEASE
    open_view(driver, server, {"preset": QWEN, "gpu": "h200", "tp": 4})
    assert options(driver, "release") == list(SUPPORTED_RELEASES)
    assert Select(driver.find_element(By.ID, "release")).first_selected_option.get_attribute("value") == DEFAULT_RELEASE
    assert "release" not in url_state(driver)  # the default stays out of the link

    # 0.5.13 predates 0.5.14's extra_buffer: fewer mamba slots per request, more requests
    Select(driver.find_element(By.ID, "release")).select_by_value("0.5.13")
    wait_idle(driver)
    old = plan(server, {**form_request(QWEN, "h200", 4), "sglang_version": "0.5.13"})
    new = plan(server, form_request(QWEN, "h200", 4))
    assert old["reference"] == "sglang==0.5.13" and old["max_running_requests"] != new["max_running_requests"]
    assert_figures_are_the_plans(driver, old)
    assert driver.find_element(By.ID, "status").text.startswith("SGLang 0.5.13 would start")
    assert driver.find_element(By.ID, "ref-release").text == "0.5.13"
    assert url_state(driver)["release"] == "0.5.13"
    shoot("release-0.5.13-qwen3-next-tp4")

    # from the keyboard: Home picks the oldest release; the view and the link follow
    driver.find_element(By.ID, "release").send_keys(Keys.HOME)
    wait_idle(driver)
    oldest = SUPPORTED_RELEASES[0]
    assert url_state(driver)["release"] == oldest
    assert_figures_are_the_plans(driver, plan(server, {**form_request(QWEN, "h200", 4), "sglang_version": oldest}))
    link = driver.current_url
    driver.get("about:blank")
    driver.get(link)
    wait_idle(driver)
    assert Select(driver.find_element(By.ID, "release")).first_selected_option.get_attribute("value") == oldest


def test_a_sweep_over_releases(driver, server, shoot):
    values = ["0.5.13", "0.5.14", "0.5.23"]
    open_view(driver, server, {"preset": QWEN, "gpu": "h200", "tp": 4, "axis": "sglang_version", "values": ", ".join(values)})
    points = sweep_points(driver)
    assert [pt["value"] for pt in points] == values
    for pt, release in zip(points, values, strict=True):
        p = plan(server, {**form_request(QWEN, "h200", 4), "sglang_version": release})
        assert (pt["requests"], pt["tokens"]) == (str(p["max_running_requests"]), str(p["max_total_num_tokens"])), release
    shoot("sweep-releases")


# ------------------------------------------------------------------ a disaggregated pair


def pair_request(prefill: dict, decode: dict, prefill_replicas: int = 1, decode_replicas: int = 1, gpu: str = "h200") -> dict:
    """The POST /v1/plan body the page sends in pair mode: each side with its role."""
    def side(role: str, sa: dict) -> dict:
        return {"model": {"preset": QWEN}, "budget": {"gpu": gpu}, "sglang_version": DEFAULT_RELEASE,
                "server_args": {"tp_size": 1, "pp_size": 1, "attn_dp_size": 1, "dcp_size": 1, "ep_size": 1, "moe_a2a_backend": "none", **sa, "disaggregation_mode": role}}
    return {"prefill": side("prefill", prefill), "decode": side("decode", decode), "prefill_replicas": prefill_replicas, "decode_replicas": decode_replicas}


def shown_side(driver, role: str) -> dict:
    return driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll(`#plan-${arguments[0]} .figures dd`)].map(d => [d.dataset.field, d.dataset.value]))", role)


def shown_side_bars(driver, role: str) -> list[dict]:
    return driver.execute_script(
        "return [...document.querySelectorAll(`#plan-${arguments[0]} g.stage-bar`)].map(g => Object.fromEntries("
        "[...g.querySelectorAll('rect.seg')].map(r => [r.dataset.segment, Number(r.dataset.bytes)])))", role)


def assert_pair_is_the_apis(driver, answer: dict) -> None:
    shown = driver.execute_script("return Object.fromEntries([...document.querySelectorAll('#pair-figures dd')].map(d => [d.id.slice(5), d.dataset.value]))")
    for field, value in shown.items():
        assert value == ("" if answer["pair"][field] is None else str(answer["pair"][field])), field
    assert len(shown) == 8
    assert [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#pair-notes li")] == answer["pair"]["notes"]
    for role in ("prefill", "decode"):
        p = answer[role]
        side = shown_side(driver, role)
        for f in ("max_running_requests", "max_total_num_tokens", "max_mamba_cache_size", "pp_max_micro_batch_size", "binding_limit"):
            assert side[f] == ("" if p[f] is None else str(p[f])), (role, f)
        assert side["mem_fraction_static"] == str(p["resolved"]["mem_fraction_static"]), role
        assert side["context_length"] == str(p["resolved"]["context_length"]), role
        bars = shown_side_bars(driver, role)
        assert len(bars) == len(p["stages"])
        for bar, st in zip(bars, p["stages"], strict=True):
            assert bar["kv"] == st["kv_pool_bytes"] and bar["r2t"] == st["req_to_token_bytes"] and bar["weights"] == st["weights_bytes"], role
        status = driver.find_element(By.CSS_SELECTOR, f"#plan-{role} .status").text
        assert status.startswith("SGLang 0.5.23 would start" if p["feasible"] else "SGLang 0.5.23 would NOT start"), (role, status)


def test_a_disaggregated_pair_side_by_side(driver, server, shoot):
    # 2 prefill servers at TP 4, one decode server at TP 4 with --max-running-requests 32: the
    # decode request pool allocates more mamba rows than the budget charged (issue 19's example)
    open_view(driver, server, {"preset": QWEN, "gpu": "h200", "mode": "pair", "p_tp": 4, "p_n": 2, "d_tp": 4, "d_mrr": 32})
    assert not driver.find_element(By.ID, "single").is_displayed()
    assert driver.find_element(By.ID, "pair").is_displayed() and driver.find_element(By.ID, "pair-setup").is_displayed()
    assert driver.find_element(By.ID, "args-mode").get_attribute("disabled") == "true"
    answer = httpx.post(f"{server}/v1/plan", json=pair_request({"tp_size": 4}, {"tp_size": 4, "max_running_requests": 32}, prefill_replicas=2), timeout=60)
    assert answer.status_code == 200, answer.text
    answer = answer.json()
    assert answer["pair"]["feasible"] and answer["pair"]["prefill_replicas"] == 2
    assert answer["decode"]["decode_pool"]["mamba_rows_allocated"] > answer["decode"]["decode_pool"]["mamba_rows_charged"]
    assert_pair_is_the_apis(driver, answer)
    pool = dict(driver.execute_script("return [...document.querySelectorAll('#plan-decode table.decode-pool tr')].map(r => [r.cells[0].textContent, r.cells[1].textContent])"))
    assert pool["mamba rows allocated"] == f"{answer['decode']['decode_pool']['mamba_rows_allocated']:,}"
    assert pool["mamba rows charged"] == f"{answer['decode']['decode_pool']['mamba_rows_charged']:,}"
    assert not driver.find_elements(By.CSS_SELECTOR, "#plan-prefill table.decode-pool")  # a decode-role pool only
    # side by side: same top, prefill on the left
    boxes = driver.execute_script("return ['prefill', 'decode'].map(r => document.getElementById('plan-' + r).getBoundingClientRect().toJSON())")
    assert boxes[0]["top"] == boxes[1]["top"] and boxes[0]["right"] <= boxes[1]["left"]
    shoot("pair-qwen3-next-2p-tp4-1d-tp4-mrr32")

    # From the keyboard: decode TP 4 -> 8; the answer and the link follow.
    typed(driver, "d-tp", "8")
    assert url_state(driver)["d_tp"] == "8" and url_state(driver)["mode"] == "pair"
    answer = httpx.post(f"{server}/v1/plan", json=pair_request({"tp_size": 4}, {"tp_size": 8, "max_running_requests": 32}, prefill_replicas=2), timeout=60).json()
    assert_pair_is_the_apis(driver, answer)

    # An impossible side: DCP 3 does not divide TP 8; the service's detail names the side's field.
    typed(driver, "d-dcp", "3")
    refused = httpx.post(f"{server}/v1/plan", json=pair_request({"tp_size": 4}, {"tp_size": 8, "dcp_size": 3, "max_running_requests": 32}, prefill_replicas=2), timeout=60)
    assert refused.status_code == 422 and refused.json()["field"] == "decode.server_args.dcp_size"
    problem = driver.find_element(By.ID, "problem")
    assert problem.is_displayed()
    assert problem.text.startswith("decode.server_args.dcp_size: " + refused.json()["detail"][:60])
    assert driver.find_element(By.ID, "d-dcp").get_attribute("aria-invalid") == "true"
    assert driver.find_element(By.ID, "pair-decode_concurrency").text == NO_FIGURE
    shoot("pair-bad-dcp")
    errors = severe_console(driver)
    assert errors and all("status of 422" in e for e in errors), errors
    typed(driver, "d-dcp", "1")
    assert not problem.is_displayed() and driver.find_element(By.ID, "d-dcp").get_attribute("aria-invalid") is None
    assert_pair_is_the_apis(driver, answer)

    # back to one server: the single view, and its figures are the aggregated plan's
    Select(driver.find_element(By.ID, "deploy-mode")).select_by_value("one")
    wait_idle(driver)
    assert driver.find_element(By.ID, "single").is_displayed() and not driver.find_element(By.ID, "pair").is_displayed()
    assert "mode" not in url_state(driver)


def test_pair_controls_are_labelled_and_reachable_from_the_keyboard(driver, server):
    open_view(driver, server, {"preset": QWEN, "gpu": "h200", "mode": "pair"})
    unlabelled = driver.execute_script(
        "return [...document.querySelectorAll('input, select, textarea, button')]"
        ".filter(c => !(c.labels && c.labels.length) && !c.getAttribute('aria-label') && !c.textContent.trim()).map(c => c.id || c.outerHTML)"
    )
    assert unlabelled == []
    driver.find_element(By.TAG_NAME, "body").click()
    reached = []
    for _ in range(45):
        driver.switch_to.active_element.send_keys(Keys.TAB)
        reached.append(driver.switch_to.active_element.get_attribute("id"))
    for control in ("release", "deploy-mode", "gpu", "p-tp", "p-pp", "p-dp", "p-dcp", "p-ep", "p-n", "p-mrr", "p-a2a", "p-tbo", "d-tp", "d-dcp", "d-n", "d-radix", "mfs"):
        assert control in reached, (control, reached)
    assert "tp" not in reached  # the single server's layout is hidden in pair mode
