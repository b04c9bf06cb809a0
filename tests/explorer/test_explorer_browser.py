"""The capacity explorer in headless Chromium against a real `mambasizer serve`: the figures the
page shows are `/v1/plan`'s, a refused plan shows SGLang's error and the remedies, a URL restores
its view, the sweep chart has one point per value, the controls are labelled and reachable from
the keyboard, and the browser logs no error and fetches nothing from elsewhere."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from mambasizer.service.presets import PRESETS

MIB = 1 << 20
NO_FIGURE = "\u2013"  # the en dash the page shows where SGLang computed no figure
SEGMENTS = ("weights", "mamba", "kv", "r2t", "reserved", "idle")


# ------------------------------------------------------------------ helpers


def wait_idle(driver, timeout: float = 40) -> None:
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script(
            'return document.body.dataset.ready === "1" && document.getElementById("results").getAttribute("aria-busy") === "false"'
        )
    )


def open_view(driver, server: str, query: dict | None = None) -> None:
    driver.get(f"{server}/" + (f"?{urlencode(query)}" if query else ""))
    wait_idle(driver)


def severe_console(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


@pytest.fixture(autouse=True)
def no_console_errors(driver):
    driver.get_log("browser")  # start clean
    yield
    assert severe_console(driver) == []


def plan(server: str, request: dict) -> dict:
    resp = httpx.post(f"{server}/v1/plan", json=request, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def form_request(preset: str, gpu: str, tp: int = 1, pp: int = 1, dp: int = 1, **flags) -> dict:
    """The POST /v1/plan body the page sends for these controls (its form mode)."""
    return {"model": {"preset": preset}, "budget": {"gpu": gpu}, "server_args": {"tp_size": tp, "pp_size": pp, "attn_dp_size": dp, **flags}}


def shown_figures(driver) -> dict:
    return driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#figures dd')]"
        ".map(d => [d.id.slice(4), {value: d.dataset.value ?? null, text: d.textContent}]))"
    )


def assert_figures_are_the_plans(driver, p: dict) -> None:
    shown = shown_figures(driver)
    expected = {f: p[f] for f in ("max_running_requests", "max_total_num_tokens", "max_mamba_cache_size", "pp_max_micro_batch_size", "binding_limit")}
    expected["mem_fraction_static"] = p["resolved"]["mem_fraction_static"]
    expected["context_length"] = p["resolved"]["context_length"]
    assert set(shown) == set(expected)
    for field, value in expected.items():
        if value is None:
            assert shown[field] == {"value": "", "text": NO_FIGURE}, field
        else:
            assert shown[field]["value"] == str(value), (field, shown[field], value)
            assert shown[field]["text"].replace(",", "") == str(value), (field, shown[field], value)


def shown_bars(driver) -> list[dict]:
    return driver.execute_script(
        "return [...document.querySelectorAll('#bars g.stage-bar')].map(g => ({rank: Number(g.dataset.ppRank), "
        "seg: [...g.querySelectorAll('rect.seg')].map(r => [r.dataset.segment, Number(r.dataset.bytes)])}))"
    )


def assert_bars_are_the_plans(driver, p: dict) -> None:
    bars = shown_bars(driver)
    assert [b["rank"] for b in bars] == [s["pp_rank"] for s in p["stages"]]
    for bar, st in zip(bars, p["stages"], strict=True):
        named = {
            "weights": st["weights_bytes"],
            "mamba": st["conv_state_bytes"] + st["ssm_state_bytes"] + st["intermediate_state_bytes"] + st["replayssm_ring_bytes"],
            "kv": st["kv_pool_bytes"],
            "r2t": st["req_to_token_bytes"],
            "idle": st["idle_bytes"],
        }
        named["reserved"] = max(0, p["gpu_memory_mib"] * MIB - sum(named.values()))
        # drawn in this order, left to right
        assert [k for k, _ in bar["seg"]] == list(SEGMENTS)
        assert dict(bar["seg"]) == named, (bar, st["pp_rank"])


def sweep_points(driver) -> list[dict]:
    return driver.execute_script(
        "return [...document.querySelectorAll('#sweep g.sweep-point')].map(g => ({value: g.dataset.value, feasible: g.dataset.feasible, "
        "requests: g.dataset.requests, tokens: g.dataset.tokens, req: g.querySelectorAll('circle.pt-req').length, "
        "tok: g.querySelectorAll('rect.pt-tok').length, refused: g.querySelectorAll('path.pt-refused').length}))"
    )


def url_state(driver) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(driver.current_url).query).items()}


# ------------------------------------------------------------------ the views


PRESET_VIEWS = [
    ("qwen3-next-80b-a3b-instruct", "h200", 4, 1),
    ("nemotron-h-56b-base-8k", "h100", 2, 4),
    ("kimi-linear-48b-a3b-instruct", "h200", 2, 2),
]


@pytest.mark.parametrize("preset, gpu, tp, pp", PRESET_VIEWS)
def test_the_page_shows_the_plans_figures(driver, server, shoot, preset, gpu, tp, pp):
    open_view(driver, server, {"preset": preset, "gpu": gpu, "tp": tp, "pp": pp})
    p = plan(server, form_request(preset, gpu, tp, pp))
    assert p["feasible"] and len(p["stages"]) == pp
    assert_figures_are_the_plans(driver, p)
    assert_bars_are_the_plans(driver, p)
    status = driver.find_element(By.ID, "status")
    assert status.is_displayed() and status.text.startswith("SGLang 0.5.23 would start")
    assert not driver.find_element(By.ID, "refusal").is_displayed()
    assert driver.find_element(By.ID, "gpus").get_attribute("value") == str(tp * pp)
    # every resource the page loaded came from the service
    origins = driver.execute_script("return performance.getEntriesByType('resource').map(e => new URL(e.name).origin)")
    assert origins and set(origins) == {server}
    # the whole first view, page and every answer it fetched, is under 300 KB on the wire
    transferred = driver.execute_script(
        "return [performance.getEntriesByType('navigation')[0], ...performance.getEntriesByType('resource')].reduce((a, e) => a + e.transferSize, 0)"
    )
    assert 40_000 < transferred < 300_000, transferred
    shoot(f"preset-{preset}-{gpu}-tp{tp}-pp{pp}")


def test_a_refused_plan_shows_the_error_and_the_remedies(driver, server, shoot):
    # Qwen3-Next on two H100s: the weights fit, the mamba state cache does not
    query = {"preset": "qwen3-next-80b-a3b-instruct", "gpu": "h100", "tp": 2, "pp": 1}
    open_view(driver, server, query)
    p = plan(server, form_request("qwen3-next-80b-a3b-instruct", "h100", 2, 1))
    assert not p["feasible"] and p["error"]["kind"] == "mamba_cache_too_small" and p["error"]["remedies"]
    refusal = driver.find_element(By.ID, "refusal")
    assert refusal.is_displayed()
    assert driver.find_element(By.ID, "error-exception").text == p["error"]["exception"]
    assert driver.find_element(By.ID, "error-message").text == p["error"]["message"]
    assert [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#remedies li")] == p["error"]["remedies"]
    assert driver.find_element(By.ID, "status").text.startswith("SGLang 0.5.23 would NOT start")
    assert_figures_are_the_plans(driver, p)  # the figures SGLang never reached show as a dash
    assert_bars_are_the_plans(driver, p)
    shoot("refused-qwen3-next-h100-tp2")

    # weights that do not fit: the bar overruns the GPU and a capacity mark shows where it ends
    open_view(driver, server, {**query, "tp": 1})
    p = plan(server, form_request("qwen3-next-80b-a3b-instruct", "h100", 1, 1))
    assert p["error"]["kind"] == "weights_do_not_fit"
    assert driver.find_element(By.ID, "error-message").text == p["error"]["message"]
    assert [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#remedies li")] == p["error"]["remedies"]
    assert len(driver.find_elements(By.CSS_SELECTOR, "#bars line.capacity")) == 1
    shoot("refused-weights-do-not-fit")


def test_a_url_restores_the_view_and_edits_update_the_url(driver, server, shoot):
    query = {
        "preset": "nemotron-h-56b-base-8k", "gpu": "h200", "tp": "2", "pp": "4", "mcs": "112", "mfs": "0.85",
        "kv": "fp8_e4m3", "ssm": "bfloat16", "axis": "server_args.max_mamba_cache_size", "values": "64, 112, 160",
    }
    open_view(driver, server, query)
    assert Select(driver.find_element(By.ID, "preset")).first_selected_option.get_attribute("value") == "nemotron-h-56b-base-8k"
    assert Select(driver.find_element(By.ID, "gpu")).first_selected_option.get_attribute("value") == "h200"
    for control, value in (("tp", "2"), ("pp", "4"), ("mcs", "112"), ("mfs", "0.85"), ("kv", "fp8_e4m3"), ("ssm", "bfloat16"), ("sweep-axis", "server_args.max_mamba_cache_size"), ("sweep-values", "64, 112, 160"), ("gpus", "8")):
        assert driver.find_element(By.ID, control).get_attribute("value") == value, control
    request = form_request("nemotron-h-56b-base-8k", "h200", 2, 4, max_mamba_cache_size=112, mem_fraction_static=0.85, kv_cache_dtype="fp8_e4m3", mamba_ssm_dtype="bfloat16")
    p = plan(server, request)
    assert p["feasible"] and p["max_mamba_cache_size"] == 112 and p["resolved"]["ssm_dtype"] == "bfloat16"
    assert_figures_are_the_plans(driver, p)
    assert [pt["value"] for pt in sweep_points(driver)] == ["64", "112", "160"]
    assert url_state(driver) == query  # the page writes back exactly the state it read
    shoot("url-restored-nemotron-h-56b")

    # From the keyboard: TP 2 -> 4; the URL follows, and loading that URL gives the same view.
    tp = driver.find_element(By.ID, "tp")
    tp.send_keys(Keys.CONTROL, "a")
    tp.send_keys("4")
    wait_idle(driver)
    assert url_state(driver)["tp"] == "4"
    assert driver.find_element(By.ID, "gpus").get_attribute("value") == "16"
    p4 = plan(server, {**request, "server_args": {**request["server_args"], "tp_size": 4}})
    assert_figures_are_the_plans(driver, p4)
    edited = driver.current_url
    driver.get("about:blank")
    driver.get(edited)
    wait_idle(driver)
    assert driver.find_element(By.ID, "tp").get_attribute("value") == "4"
    assert_figures_are_the_plans(driver, p4)
    assert_bars_are_the_plans(driver, p4)


def test_the_sweep_chart_has_one_point_per_value(driver, server, shoot):
    values = [8192, 16384, 32768, 65536, 131072, 262144]
    query = {"preset": "qwen3-next-80b-a3b-instruct", "gpu": "h200", "tp": 4, "pp": 1, "axis": "server_args.context_length", "values": ", ".join(map(str, values))}
    open_view(driver, server, query)
    rows = httpx.post(f"{server}/v1/sweep", json={"base": form_request("qwen3-next-80b-a3b-instruct", "h200", 4, 1), "axes": [{"field": "server_args.context_length", "values": values}]}, timeout=30).json()["rows"]
    points = sweep_points(driver)
    assert [pt["value"] for pt in points] == [str(v) for v in values]
    for pt, row in zip(points, rows, strict=True):
        assert row["feasible"] and pt["feasible"] == "true"
        assert (pt["requests"], pt["tokens"]) == (str(row["max_running_requests"]), str(row["max_total_num_tokens"]))
        assert (pt["req"], pt["tok"], pt["refused"]) == (1, 1, 0)
    # the same point through /v1/plan
    p = plan(server, form_request("qwen3-next-80b-a3b-instruct", "h200", 4, 1, context_length=values[2]))
    assert points[2]["tokens"] == str(p["max_total_num_tokens"])
    shoot("sweep-context-length")

    # TP on H100s: 1 (weights do not fit), 2 (mamba cache too small), 3 (SGLang asserts), 4, 8
    Select(driver.find_element(By.ID, "sweep-axis")).select_by_value("server_args.tp_size")
    wait_idle(driver)
    box = driver.find_element(By.ID, "sweep-values")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("1, 2, 3, 4, 8")
    Select(driver.find_element(By.ID, "gpu")).select_by_value("h100")
    wait_idle(driver)
    assert url_state(driver)["values"] == "1, 2, 3, 4, 8" and url_state(driver)["axis"] == "server_args.tp_size"
    points = sweep_points(driver)
    assert [pt["value"] for pt in points] == ["1", "2", "3", "4", "8"]
    assert [pt["feasible"] for pt in points] == ["false", "false", "false", "true", "true"]
    assert [pt["refused"] for pt in points] == [1, 1, 1, 0, 0]
    for pt, tp in zip(points[3:], (4, 8), strict=True):
        assert pt["requests"] == str(plan(server, form_request("qwen3-next-80b-a3b-instruct", "h100", tp, 1))["max_running_requests"])
    titles = driver.execute_script("return [...document.querySelectorAll('#sweep g.sweep-point > title')].map(t => t.textContent)")
    assert titles[0].startswith("server_args.tp_size = 1: weights_do_not_fit: ")
    assert titles[2].startswith("server_args.tp_size = 3: invalid_input: ")
    shoot("sweep-tp-h100")


def test_a_pasted_command_line_and_config(driver, server, shoot):
    cmd = ("SGLANG_PP_LAYER_PARTITION=32,30,30,26 CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server \\\n"
           "  --model-path nvidia/Nemotron-H-56B-Base-8K --tp-size 2 --pp-size 4 --max-mamba-cache-size 112 --host 0.0.0.0")
    # a link without a preset: the command line's --model-path names a preset's model, which is selected
    open_view(driver, server, {"gpu": "h200", "args": cmd})
    assert Select(driver.find_element(By.ID, "preset")).first_selected_option.get_attribute("value") == "nemotron-h-56b-base-8k"
    assert Select(driver.find_element(By.ID, "args-mode")).first_selected_option.get_attribute("value") == "cmdline"
    assert url_state(driver)["preset"] == "nemotron-h-56b-base-8k" and url_state(driver)["args"] == cmd
    p = plan(server, {
        "model": {"preset": "nemotron-h-56b-base-8k"}, "budget": {"gpu": "h200"}, "env": {"SGLANG_PP_LAYER_PARTITION": "32,30,30,26"},
        "sglang_args": ["--model-path", "nvidia/Nemotron-H-56B-Base-8K", "--tp-size", "2", "--pp-size", "4", "--max-mamba-cache-size", "112", "--host", "0.0.0.0"],
    })
    assert p["resolved"]["pp_size"] == 4 and [s["end_layer"] - s["start_layer"] for s in p["stages"]] == [32, 30, 30, 26]
    assert_figures_are_the_plans(driver, p)
    assert_bars_are_the_plans(driver, p)
    assert driver.find_element(By.ID, "tp").get_attribute("disabled") == "true"
    notes = driver.find_element(By.ID, "warnings").text
    assert p["ignored_sglang_args"] == ["--model-path", "--host"]
    assert "ignored launch arguments (they do not change sizing): --model-path --host" in notes
    shoot("command-line-nemotron-h-56b")

    # a pasted config.json: the figures are those of model.hf_config, and the link keeps it
    config = dict(PRESETS["qwen3-next-80b-a3b-instruct"].hf_config)
    open_view(driver, server, {"gpu": "h200", "tp": 2, "pp": 1})
    Select(driver.find_element(By.ID, "model-source")).select_by_value("config")
    driver.execute_script("const t = document.getElementById('config'); t.value = arguments[0]; t.dispatchEvent(new Event('input', {bubbles: true}));", json.dumps(config))
    wait_idle(driver)
    p = plan(server, {"model": {"hf_config": config}, "budget": {"gpu": "h200"}, "server_args": {"tp_size": 2, "pp_size": 1, "attn_dp_size": 1}})
    assert p["feasible"]
    assert_figures_are_the_plans(driver, p)
    assert "#config=" in driver.current_url and "preset" not in url_state(driver)
    link = driver.current_url
    driver.get("about:blank")
    driver.get(link)
    wait_idle(driver)
    assert json.loads(driver.find_element(By.ID, "config").get_attribute("value")) == config
    assert_figures_are_the_plans(driver, p)
    shoot("config-json-qwen3-next")


def test_bad_input_names_the_field(driver, server, shoot):
    open_view(driver, server, {"preset": "qwen3-next-80b-a3b-instruct", "gpu": "h200", "tp": 4, "mfs": "1.5"})
    problem = driver.find_element(By.ID, "problem")
    assert problem.is_displayed()
    assert problem.text.startswith("server_args.mem_fraction_static: ")
    assert driver.find_element(By.ID, "mfs").get_attribute("aria-invalid") == "true"
    assert shown_figures(driver)["max_running_requests"] == {"value": None, "text": NO_FIGURE}  # cleared, no figure
    shoot("bad-input-mem-fraction-static")
    # the browser reports the 422 answers (and nothing else)
    errors = severe_console(driver)
    assert errors and all("status of 422" in e for e in errors), errors
    # fixing the field clears the problem
    mfs = driver.find_element(By.ID, "mfs")
    mfs.send_keys(Keys.CONTROL, "a")
    mfs.send_keys(Keys.DELETE)
    wait_idle(driver)
    assert not problem.is_displayed() and driver.find_element(By.ID, "mfs").get_attribute("aria-invalid") is None
    assert_figures_are_the_plans(driver, plan(server, form_request("qwen3-next-80b-a3b-instruct", "h200", 4, 1)))


def test_controls_are_labelled_and_reachable_from_the_keyboard(driver, server):
    open_view(driver, server)
    unlabelled = driver.execute_script(
        "return [...document.querySelectorAll('input, select, textarea, button')]"
        ".filter(c => !(c.labels && c.labels.length) && !c.getAttribute('aria-label') && !c.textContent.trim()).map(c => c.id || c.outerHTML)"
    )
    assert unlabelled == []
    body = driver.find_element(By.TAG_NAME, "body")
    body.click()
    reached = []
    for _ in range(40):
        driver.switch_to.active_element.send_keys(Keys.TAB)
        reached.append(driver.switch_to.active_element.get_attribute("id"))
    for control in ("model-source", "preset", "gpu", "gpus", "tp", "pp", "dp", "args-mode", "ctx", "mfs", "mcs", "kv", "noradix", "sweep-axis", "sweep-values"):
        assert control in reached, (control, reached)
    # a select changed from the keyboard updates the view
    Select(driver.find_element(By.ID, "gpu")).select_by_value("h200")
    wait_idle(driver)
    gpu = driver.find_element(By.ID, "gpu")
    gpu.send_keys(Keys.HOME)
    wait_idle(driver)
    first = Select(gpu).first_selected_option.get_attribute("value")
    assert url_state(driver)["gpu"] == first != "h200"


def test_recommendations(driver, server, shoot):
    has_route = "/v1/recommend" in httpx.get(f"{server}/openapi.json", timeout=30).json()["paths"]
    open_view(driver, server, {"preset": "qwen3-next-80b-a3b-instruct", "gpu": "h200", "tp": 4})
    section = driver.find_element(By.ID, "recommend")
    if not has_route:
        assert not section.is_displayed()  # the view is hidden while the service has no /v1/recommend
        return
    assert section.is_displayed()
    driver.find_element(By.ID, "recommend-run").click()
    WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#recommend-out tr.rec") or d.find_elements(By.CSS_SELECTOR, "#recommend-out p:not(.hint)"))
    # what the page asks: this model and GPU, TP and PP searched, the form's other flags kept
    body = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "gpu": "h200", "limit": 5,
            "search": {"tp_size": [1, 2, 4, 8], "pp_size": [1, 2, 4, 8]}, "server_args": {}}
    resp = httpx.post(f"{server}/v1/recommend", json=body, timeout=120)
    assert resp.status_code == 200, resp.text
    candidates = resp.json()["candidates"]
    rows = driver.find_elements(By.CSS_SELECTOR, "#recommend-out tr.rec")
    assert candidates and len(rows) == len(candidates)
    for row, c in zip(rows, candidates, strict=True):
        cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        assert cells[:7] == [str(c["gpus"]), str(c["tp_size"]), str(c["pp_size"]), str(c["attn_dp_size"]),
                             f"{c['max_running_requests']:,}", f"{c['max_total_num_tokens']:,}", c["binding_limit"] or ""]
        assert row.find_element(By.CSS_SELECTOR, "code.flags").text.split() == c["sglang_args"]
    copy = rows[0].find_element(By.CSS_SELECTOR, "button.copy")
    assert copy.get_attribute("aria-label") == "Copy the launch flags of recommendation 1"
    copy.click()
    WebDriverWait(driver, 5).until(lambda d: copy.text == "Copied")
    shoot("recommendations")


def _tp_sizes_from_the_api(server: str, request: dict) -> list[int]:
    base = json.loads(json.dumps(request))
    del base["server_args"]["tp_size"]
    rows = httpx.post(f"{server}/v1/sweep", json={"base": base, "axes": [{"field": "server_args.tp_size", "values": list(range(1, 65))}]}, timeout=30).json()["rows"]
    return [r["point"]["server_args.tp_size"] for r in rows if not (r["error_kind"] == "invalid_input" and r["error_field"] == "server_args.tp_size")]


def test_tp_arrow_keys_step_only_through_tp_sizes_the_service_accepts(driver, server):
    open_view(driver, server, {"preset": "qwen3-next-80b-a3b-instruct", "gpu": "h200", "tp": 4, "pp": 1})
    tp = driver.find_element(By.ID, "tp")
    WebDriverWait(driver, 40).until(lambda d: tp.get_attribute("data-allowed"))
    allowed = [int(n) for n in tp.get_attribute("data-allowed").split(",")]
    assert allowed == _tp_sizes_from_the_api(server, form_request("qwen3-next-80b-a3b-instruct", "h200", 4, 1))
    assert allowed == [1, 2, 4, 8, 16, 32]  # 3, 5, 6, 7 ... are refused (heads not divisible)
    tp.send_keys(Keys.ARROW_UP)
    wait_idle(driver)
    assert tp.get_attribute("value") == "8" and url_state(driver)["tp"] == "8"
    assert_figures_are_the_plans(driver, plan(server, form_request("qwen3-next-80b-a3b-instruct", "h200", 8, 1)))
    assert driver.find_element(By.ID, "gpus").get_attribute("value") == "8"
    for expected in ("4", "2", "1", "1"):  # down to the smallest, then it stays
        tp.send_keys(Keys.ARROW_DOWN)
        wait_idle(driver)
        assert tp.get_attribute("value") == expected
    for _ in range(7):
        tp.send_keys(Keys.ARROW_UP)
    wait_idle(driver)
    assert tp.get_attribute("value") == "32"  # the largest accepted size, never past it
    assert driver.find_element(By.ID, "problem").get_attribute("hidden") is not None  # no refused TP on the way


def test_the_default_sweep_draws_figures_that_move(driver, server):
    open_view(driver, server, {"preset": "qwen3-next-80b-a3b-instruct", "gpu": "h200", "tp": 4, "pp": 1})
    axis = Select(driver.find_element(By.ID, "sweep-axis")).first_selected_option.get_attribute("value")
    assert axis == "server_args.mamba_full_memory_ratio"
    points = sweep_points(driver)
    assert len(points) >= 3 and all(pt["feasible"] == "true" for pt in points)
    requests = [int(pt["requests"]) for pt in points]
    tokens = [int(pt["tokens"]) for pt in points]
    # more state per request serves more requests and leaves fewer KV tokens: both lines move
    assert requests == sorted(requests) and len(set(requests)) == len(requests)
    assert tokens == sorted(tokens, reverse=True) and len(set(tokens)) == len(tokens)
    values = [float(pt["value"]) for pt in points]
    rows = httpx.post(f"{server}/v1/sweep", json={"base": form_request("qwen3-next-80b-a3b-instruct", "h200", 4, 1),
                                                  "axes": [{"field": axis, "values": values}]}, timeout=30).json()["rows"]
    assert requests == [r["max_running_requests"] for r in rows] and tokens == [r["max_total_num_tokens"] for r in rows]
