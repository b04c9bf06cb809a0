/* mambasizer capacity explorer.
 *
 * Every figure shown comes from this service's /v1 endpoints (POST /v1/plan, POST /v1/sweep,
 * POST /v1/recommend, GET /v1/presets, GET /v1/gpus); the choices it offers (releases, flag
 * values) are the OpenAPI document's. The page holds no rule of SGLang. It only
 * lays the figures out: the one sum it makes is the part of a GPU no figure names ("reserved":
 * the GPU's capacity minus every byte the plan accounts for). No request leaves the service
 * (the server's Content-Security-Policy says so too), and the charts are SVG drawn here.
 */
"use strict";

const $ = (id) => document.getElementById(id);
const SVG_NS = "http://www.w3.org/2000/svg";
const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

const FIGURES = ["max_running_requests", "max_total_num_tokens", "max_mamba_cache_size", "pp_max_micro_batch_size", "binding_limit"];
// URL parameter -> [control id, server_args field, kind]
const FLAGS = [
  ["ctx", "context_length", "int"],
  ["mfs", "mem_fraction_static", "float"],
  ["ratio", "mamba_full_memory_ratio", "float"],
  ["mcs", "max_mamba_cache_size", "int"],
  ["mrr", "max_running_requests", "int"],
  ["page", "page_size", "int"],
  ["kv", "kv_cache_dtype", "str"],
  ["radix", "mamba_radix_cache_strategy", "str"],
  ["ssm", "mamba_ssm_dtype", "str"],
  ["spec", "speculative_algorithm", "str"],
];
const SEGMENTS = [
  // key, label, colour class
  ["weights", "weights", "seg-weights"],
  ["mamba", "mamba pool", "seg-mamba"],
  ["kv", "KV pool", "seg-kv"],
  ["r2t", "req_to_token", "seg-r2t"],
  ["reserved", "reserved (CUDA/NCCL, activations, graphs)", "seg-reserved"],
  ["idle", "unallocated (budgeted, not allocated)", "seg-idle"],
];

// The two sides of a disaggregated pair: role, control-id prefix.
const SIDES = [["prefill", "p"], ["decode", "d"]];
// Per-side control suffix -> [server_args field, kind]; URL parameter p_<suffix> / d_<suffix>.
const SIDE_FIELDS = [
  ["tp", "tp_size", "int"],
  ["pp", "pp_size", "int"],
  ["dp", "attn_dp_size", "int"],
  ["dcp", "dcp_size", "int"],
  ["ep", "ep_size", "int"],
  ["mrr", "max_running_requests", "int"],
  ["a2a", "moe_a2a_backend", "str"],
  ["tbo", "enable_two_batch_overlap", "bool"],
  ["radix", "disaggregation_decode_enable_radix_cache", "bool"],
  ["n", null, "int"], // the side's replicas: <role>_replicas beside the two bodies
];
const PAIR_FIGURES = ["decode_concurrency", "prefill_in_flight_requests", "binding_side", "decode_kv_tokens", "prefill_kv_tokens", "decode_kv_tokens_per_request", "prefill_replicas", "decode_replicas"];

const state = { releases: [], defaultRelease: null, pairSeq: 0, presets: [], allPresets: [], gpus: [], linkProblems: [], envFields: new Set(), hasRecommend: false, planSeq: 0, sweepSeq: 0, lastPlan: null, valuesEdited: false, tpKey: "", tpSizes: null };

/* ------------------------------------------------------------------ helpers */

function el(tag, attrs = {}, ...children) {
  const node = tag.startsWith("svg:") ? document.createElementNS(SVG_NS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

const fmtInt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
const fmtGiB = (b) => (b / GIB).toFixed(2) + " GiB";

async function api(method, path, body) {
  const init = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const resp = await fetch(path, init);
  let data = null;
  try {
    data = await resp.json();
  } catch (e) {
    data = { detail: `the service answered ${resp.status} without JSON` };
  }
  return { ok: resp.ok, status: resp.status, data };
}

function debounce(fn, ms) {
  let t = null;
  return (...a) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...a), ms);
  };
}

/* Shell-like split of a pasted command line: quotes, backslash escapes and line continuations. */
function shellSplit(text) {
  const out = [];
  let cur = null;
  let quote = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"' && i + 1 < text.length) cur += text[++i];
      else cur += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      cur = cur ?? "";
    } else if (c === "\\") {
      if (text[i + 1] === "\n") i++;
      else if (i + 1 < text.length) cur = (cur ?? "") + text[++i];
    } else if (/\s/.test(c)) {
      if (cur !== null) out.push(cur);
      cur = null;
    } else cur = (cur ?? "") + c;
  }
  if (cur !== null) out.push(cur);
  return out;
}

/* The command line -> {args: the flags from the first --flag on, env: leading VAR=value of known env fields, modelPath}. */
function parseCommandLine(text) {
  const tokens = shellSplit(text);
  const env = {};
  let i = 0;
  for (; i < tokens.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(tokens[i]); i++) {
    const eq = tokens[i].indexOf("=");
    const key = tokens[i].slice(0, eq);
    if (state.envFields.has(key)) env[key] = tokens[i].slice(eq + 1);
  }
  const start = tokens.findIndex((t, k) => k >= i && t.startsWith("--"));
  const args = start < 0 ? [] : tokens.slice(start);
  let modelPath = null;
  for (let k = 0; k < args.length; k++) {
    const [flag, inline] = args[k].split(/=(.*)/s, 2);
    if (flag === "--model-path" || flag === "--model") modelPath = inline !== undefined ? inline : args[k + 1] ?? null;
  }
  return { args, env, modelPath };
}

/* ------------------------------------------------------------------ the request */

function intOrNull(v) {
  return v === "" || v === null || v === undefined ? null : Number(v);
}

function currentModel() {
  if ($("model-source").value === "config") {
    const text = $("config").value.trim();
    if (!text) return { error: { field: "config", detail: "paste a config.json (a JSON object)" } };
    try {
      const cfg = JSON.parse(text);
      return { model: { hf_config: cfg } };
    } catch (e) {
      return { error: { field: "config", detail: `the pasted config.json is not valid JSON: ${e.message}` } };
    }
  }
  return { model: { preset: $("preset").value } };
}

function serverArgsFromForm() {
  const sa = { tp_size: intOrNull($("tp").value) ?? 1, pp_size: intOrNull($("pp").value) ?? 1, attn_dp_size: intOrNull($("dp").value) ?? 1 };
  for (const [id, field, kind] of FLAGS) {
    const v = $(id).value;
    if (v === "") continue;
    sa[field] = kind === "str" ? v : Number(v);
  }
  if ($("noradix").checked) sa.disable_radix_cache = true;
  return sa;
}

const selectedGpu = () => state.gpus.find((g) => g.name === $("gpu").value);
const isPair = () => $("deploy-mode").value === "pair";

/* budget: the GPU by name; a part without a confirmed capacity also needs its MiB. */
function currentBudget() {
  const gpu = selectedGpu();
  const budget = { gpu: $("gpu").value };
  if (gpu && !gpu.confirmed) {
    const mib = intOrNull($("gpu-mib").value);
    if (!mib) return { error: { field: "budget.gpu_memory_mib", detail: `no public source confirms the capacity of the ${gpu.product}: give its GPU memory in MiB (what nvidia-smi or rocminfo reports)` } };
    budget.gpu_memory_mib = mib;
  }
  return { budget };
}

/* The POST /v1/plan body of the view, or {error} for input the page cannot send. */
function planRequest() {
  const m = currentModel();
  if (m.error) return m;
  const b = currentBudget();
  if (b.error) return b;
  const req = { model: m.model, budget: b.budget };
  if ($("release").value) req.sglang_version = $("release").value;
  if ($("args-mode").value === "cmdline") {
    const parsed = parseCommandLine($("cmdline").value);
    req.sglang_args = parsed.args;
    if (Object.keys(parsed.env).length) req.env = parsed.env;
  } else {
    req.server_args = serverArgsFromForm();
  }
  return { request: req };
}

/* ------------------------------------------------------------------ URL state */

function readUrl() {
  const q = new URLSearchParams(location.search);
  const set = (id, key) => {
    if (q.has(key)) $(id).value = q.get(key);
  };
  const problems = [];
  if (q.has("preset")) {
    const name = q.get("preset");
    const listed = state.allPresets.find((p) => p.name === name);
    if (state.presets.some((p) => p.name === name)) $("preset").value = name;
    else problems.push({ key: "preset", id: "preset", value: name, why: listed ? `is listed but not sized by this server (${listed.reason || "GET /v1/presets/" + name + " says why"})` : "is not a preset this server has (GET /v1/presets lists them)" });
  }
  if (q.has("gpu")) {
    if (state.gpus.some((g) => g.name === q.get("gpu"))) $("gpu").value = q.get("gpu");
    else problems.push({ key: "gpu", id: "gpu", value: q.get("gpu"), why: "is not in this server's GPU catalog (GET /v1/gpus lists it)" });
  }
  if (q.has("release")) {
    if (state.releases.includes(q.get("release"))) $("release").value = q.get("release");
    else problems.push({ key: "release", id: "release", value: q.get("release"), why: `is not an SGLang release this server plans (it plans ${state.releases[0] || "?"} to ${state.releases[state.releases.length - 1] || "?"})` });
  }
  if (q.has("axis") && ![...$("sweep-axis").options].some((o) => o.value === q.get("axis")))
    problems.push({ key: "axis", id: "sweep-axis", value: q.get("axis"), why: "is not a sweep axis of this page" });
  state.linkProblems = problems;
  set("gpu-mib", "mib");
  if (q.get("mode") === "pair") $("deploy-mode").value = "pair";
  for (const [, pre] of SIDES)
    for (const [suffix, , kind] of SIDE_FIELDS) {
      const key = `${pre}_${suffix}`;
      if (!q.has(key) || !$(`${pre}-${suffix}`)) continue;
      if (kind === "bool") $(`${pre}-${suffix}`).checked = q.get(key) === "1";
      else $(`${pre}-${suffix}`).value = q.get(key);
    }
  set("tp", "tp");
  set("pp", "pp");
  set("dp", "dp");
  for (const [id] of FLAGS) set(id, id);
  $("noradix").checked = q.get("noradix") === "1";
  if (q.has("args")) {
    $("args-mode").value = "cmdline";
    $("cmdline").value = q.get("args");
    if (!q.has("preset")) selectPresetOfCommandLine();
  }
  if (q.has("axis") && [...$("sweep-axis").options].some((o) => o.value === q.get("axis"))) $("sweep-axis").value = q.get("axis");
  if (q.has("values")) {
    $("sweep-values").value = q.get("values");
    state.valuesEdited = true;
  }
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.has("config")) {
    $("model-source").value = "config";
    $("config").value = h.get("config");
  }
  syncVisibility();
  syncGpuCount();
}

function writeUrl() {
  // An unhonoured link stays as shared until the user picks.
  if (state.linkProblems.length) return;
  const q = new URLSearchParams();
  if ($("model-source").value === "preset") q.set("preset", $("preset").value);
  q.set("gpu", $("gpu").value);
  const gpu = selectedGpu();
  if (gpu && !gpu.confirmed && $("gpu-mib").value) q.set("mib", $("gpu-mib").value);
  if ($("release").value && $("release").value !== state.defaultRelease) q.set("release", $("release").value);
  if (isPair()) {
    q.set("mode", "pair");
    for (const [, pre] of SIDES)
      for (const [suffix, , kind] of SIDE_FIELDS) {
        const c = $(`${pre}-${suffix}`);
        if (!c) continue;
        if (kind === "bool") {
          if (c.checked) q.set(`${pre}_${suffix}`, "1");
        } else if (c.value !== "" && c.value !== (c.tagName === "SELECT" ? c.options[0]?.value : c.defaultValue)) q.set(`${pre}_${suffix}`, c.value);
      }
  }
  if ($("args-mode").value === "cmdline") q.set("args", $("cmdline").value);
  else {
    q.set("tp", $("tp").value || "1");
    q.set("pp", $("pp").value || "1");
    if ($("dp").value && $("dp").value !== "1") q.set("dp", $("dp").value);
    for (const [id] of FLAGS) if ($(id).value !== "") q.set(id, $(id).value);
    if ($("noradix").checked) q.set("noradix", "1");
  }
  q.set("axis", $("sweep-axis").value);
  if (state.valuesEdited) q.set("values", $("sweep-values").value);
  // A pasted config.json rides in the fragment: never sent to the server with the page, kept in the link.
  const hash = $("model-source").value === "config" && $("config").value ? "#" + new URLSearchParams({ config: $("config").value }).toString() : "";
  const url = `${location.pathname}?${q.toString()}${hash}`;
  if (url !== location.pathname + location.search + location.hash) history.replaceState(null, "", url);
}

/* A --model-path naming a preset's Hugging Face id selects that preset. */
function selectPresetOfCommandLine() {
  const { modelPath } = parseCommandLine($("cmdline").value);
  const match = modelPath && state.presets.find((p) => p.model_id.toLowerCase() === modelPath.toLowerCase());
  if (match && $("model-source").value === "preset") $("preset").value = match.name;
}

function syncVisibility() {
  const pair = isPair();
  if (pair && $("args-mode").value === "cmdline") $("args-mode").value = "form"; // each side's layout is set here
  $("args-mode").disabled = pair;
  $("pair-setup").hidden = !pair;
  $("deploy-note").hidden = !pair;
  $("layout-row").hidden = pair;
  $("pair").hidden = !pair;
  $("single").hidden = pair;
  const gpu = selectedGpu();
  const unconfirmed = Boolean(gpu && !gpu.confirmed);
  $("gpu-mib-row").hidden = !unconfirmed;
  $("gpu-mib").required = unconfirmed;
  $("gpu-note").hidden = !gpu;
  if (gpu) $("gpu-note").textContent = `${gpu.architecture}, ${gpu.runtime.toUpperCase()}, compute capability ${gpu.compute_capability}; ${gpu.memory_mib === null ? "capacity unconfirmed" : fmtInt(gpu.memory_mib) + " MiB"} (${gpu.source})`;
  const cfg = $("model-source").value === "config";
  $("preset-row").hidden = cfg;
  $("config-row").hidden = !cfg;
  const cmd = $("args-mode").value === "cmdline";
  $("cmdline-row").hidden = !cmd;
  $("flags").hidden = cmd;
  for (const id of ["tp", "pp", "dp", "gpus"]) $(id).disabled = cmd;
}

function syncGpuCount() {
  const tp = intOrNull($("tp").value) ?? 1;
  const pp = intOrNull($("pp").value) ?? 1;
  $("gpus").value = String(tp * pp);
}

/* ------------------------------------------------------------------ rendering: plan */

function showProblem(where, problem) {
  const box = $(where);
  box.replaceChildren();
  if (!problem) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  box.append(el("strong", { text: problem.field ? `${problem.field}: ` : "" }), el("span", { class: "detail", text: problem.detail || problem.title || "the request failed" }));
  if (problem.allowed && problem.allowed.length) box.append(el("div", { class: "allowed", text: "allowed: " + problem.allowed.join(", ") }));
}

/* A link naming what this server lacks: say which field and why, grey what stands in for it. */
function showLinkProblems() {
  const box = $("link-problem");
  const problems = state.linkProblems;
  document.body.classList.toggle("link-unhonoured", problems.length > 0);
  document.querySelectorAll(".unhonoured").forEach((n) => {
    n.classList.remove("unhonoured");
    n.removeAttribute("aria-describedby");
    n.removeAttribute("title");
  });
  if (!problems.length) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  box.hidden = false;
  box.replaceChildren(
    el("strong", { text: "This link cannot be shown as it was shared." }),
    el("ul", {}, ...problems.map((p) => el("li", { "data-field": p.key }, el("code", { text: p.key }), ` "${p.value}" ${p.why}; `, el("span", { class: "instead", text: `planned with ${p.key} "${$(p.id).value}" instead` })))),
    el("div", { class: "allowed", text: "The greyed controls show what is planned instead; this is not the link's plan. Change any control to plan your own choice." }),
  );
  for (const p of problems) {
    const c = $(p.id);
    c.classList.add("unhonoured");
    c.setAttribute("aria-invalid", "true");
    c.setAttribute("aria-describedby", "link-problem");
    c.setAttribute("title", `the link asked for ${p.key} "${p.value}", which ${p.why}`);
  }
}

function clearLinkProblems() {
  if (!state.linkProblems.length) return;
  state.linkProblems = [];
  document.querySelectorAll(".unhonoured").forEach((n) => n.removeAttribute("aria-invalid"));
  showLinkProblems();
}

function verdictClass(feasible) {
  if (state.linkProblems.length) return "status substituted";
  return "status " + (feasible ? "ok" : "refused");
}

const FIELD_CONTROL = { "server_args.tp_size": "tp", "server_args.pp_size": "pp", "server_args.attn_dp_size": "dp", "budget.gpu": "gpu", "budget.gpu_memory_mib": "gpu-mib", sglang_version: "release", "model.preset": "preset", config: "config" };
for (const [id, field] of FLAGS) FIELD_CONTROL["server_args." + field] = id;
// A pair's problem names the side: prefill.server_args.dcp_size -> p-dcp; its shared fields the shared control.
for (const [role, pre] of SIDES) {
  FIELD_CONTROL[`${role}_replicas`] = `${pre}-n`;
  for (const [suffix, field] of SIDE_FIELDS) if (field) FIELD_CONTROL[`${role}.server_args.${field}`] = `${pre}-${suffix}`;
}

function markInvalid(field) {
  document.querySelectorAll("[aria-invalid]").forEach((n) => n.removeAttribute("aria-invalid"));
  for (const p of state.linkProblems) $(p.id).setAttribute("aria-invalid", "true");
  if (!field) return;
  const side = SIDES.find(([role]) => field.startsWith(role + "."));
  const shared = side && !FIELD_CONTROL[field] ? field.slice(side[0].length + 1) : field;
  field = FIELD_CONTROL[field] ? field : shared;
  const id = FIELD_CONTROL[field] || (field.startsWith("model.hf_config") ? "config" : field.startsWith("sglang_args") ? "cmdline" : null);
  if (id) $(id).setAttribute("aria-invalid", "true");
}

function clearPlan() {
  for (const f of [...FIGURES, "mem_fraction_static", "context_length"]) {
    const dd = $("fig-" + f);
    dd.textContent = "–";
    dd.removeAttribute("data-value");
  }
  $("status").hidden = true;
  $("refusal").hidden = true;
  $("notes").hidden = true;
  $("bars").replaceChildren();
}

function renderPlan(plan, extra) {
  const figures = { ...Object.fromEntries(FIGURES.map((f) => [f, plan[f]])), mem_fraction_static: plan.resolved.mem_fraction_static, context_length: plan.resolved.context_length };
  for (const [f, v] of Object.entries(figures)) {
    const dd = $("fig-" + f);
    dd.dataset.value = v === null || v === undefined ? "" : String(v);
    dd.textContent = typeof v === "number" && Number.isInteger(v) ? fmtInt(v) : v ?? "–";
  }
  if ($("args-mode").value === "cmdline") {
    // The command line decides the layout: show what it resolved to (the controls are disabled).
    $("tp").value = String(plan.resolved.tp_size);
    $("pp").value = String(plan.resolved.pp_size);
    $("dp").value = String(plan.resolved.attn_dp_size);
    syncGpuCount();
  }
  const status = $("status");
  status.hidden = false;
  status.className = verdictClass(plan.feasible);
  const r = plan.resolved;
  const gpu = selectedGpu();
  status.textContent = substitutedPrefix() + statusText(plan, gpu);

  const refusal = $("refusal");
  refusal.hidden = plan.feasible || !plan.error;
  if (plan.error) {
    $("error-exception").textContent = plan.error.exception;
    $("error-message").textContent = plan.error.message;
    $("remedies").replaceChildren(...(plan.error.remedies.length ? plan.error.remedies : ["(none computed)"]).map((t) => el("li", { text: t })));
  }
  const notes = [...plan.warnings, ...(plan.advice || []), ...((extra && extra.sglang_args_warnings) || [])];
  if (extra && extra.ignored_sglang_args && extra.ignored_sglang_args.length) notes.push("ignored launch arguments (they do not change sizing): " + extra.ignored_sglang_args.join(" "));
  $("notes").hidden = !notes.length;
  $("warnings").replaceChildren(...notes.map((t) => el("li", { text: t })));
  renderBars(plan);
}

function substitutedPrefix() {
  if (!state.linkProblems.length) return "";
  return "Not the link's plan (" + state.linkProblems.map((p) => `${p.key} "${p.value}" is unavailable`).join(", ") + "). Planned instead: ";
}

/* "SGLang 0.5.13 would start: ..." (the release is the plan's reference: the rules applied). */
function statusText(plan, gpu) {
  const r = plan.resolved;
  const release = String(plan.reference || "").replace(/^sglang==/, "SGLang ");
  let text = `${release} ${plan.feasible ? "would start" : "would NOT start"}: ${plan.model_name} (${plan.family}), TP ${r.tp_size} × PP ${r.pp_size}`;
  if (r.attn_dp_size > 1) text += `, attention DP ${r.attn_dp_size}`;
  if (r.dcp_size > 1) text += `, DCP ${r.dcp_size}`;
  if (plan.gpu_memory_mib) text += ` on ${gpu ? gpu.product : "GPUs"} of ${fmtInt(plan.gpu_memory_mib)} MiB`;
  if (plan.free_gib_before_load !== null && plan.free_gib_before_load !== undefined)
    text += `; budget ${plan.budget_source}: free ${plan.free_gib_before_load.toFixed(2)} GiB before load, ${plan.free_gib_after_load.toFixed(2)} GiB after`;
  return text + ".";
}

function stageSegments(plan, st) {
  const total = plan.gpu_memory_mib ? plan.gpu_memory_mib * MIB : null;
  const seg = {
    weights: st.weights_bytes ?? 0,
    mamba: st.conv_state_bytes + st.ssm_state_bytes + st.intermediate_state_bytes + st.replayssm_ring_bytes,
    kv: st.kv_pool_bytes,
    r2t: st.req_to_token_bytes,
    idle: st.idle_bytes,
  };
  const named = Object.values(seg).reduce((a, b) => a + b, 0);
  seg.reserved = total === null ? 0 : Math.max(0, total - named);
  return { seg, total: total === null ? named : Math.max(total, named) };
}

function renderBars(plan, box = $("bars"), titleId = "bars-title") {
  box.replaceChildren();
  if (!plan.stages.length) return;
  const rowH = 34, labelW = 150, width = 760, barW = width - labelW - 10;
  const height = plan.stages.length * rowH + 6;
  const svg = el("svg:svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": titleId, class: "bars" });
  svg.append(el("svg:title", { id: titleId, text: "Memory of one GPU per pipeline stage: weights, mamba pool, KV pool, req_to_token, reserved, unallocated" }));
  plan.stages.forEach((st, i) => {
    const { seg, total } = stageSegments(plan, st);
    const y = 8 + i * rowH;
    const g = el("svg:g", { class: "stage-bar", "data-pp-rank": st.pp_rank });
    g.append(el("svg:text", { x: 0, y: y + 17, class: "bar-label", text: `PP ${st.pp_rank} · layers ${st.start_layer}-${st.end_layer - 1}` }));
    let x = labelW;
    for (const [key, label, cls] of SEGMENTS) {
      const w = total > 0 ? (seg[key] / total) * barW : 0;
      const rect = el("svg:rect", { x: x.toFixed(2), y, width: Math.max(0, w).toFixed(2), height: rowH - 10, class: "seg " + cls, "data-segment": key, "data-bytes": seg[key] });
      rect.append(el("svg:title", { text: `${label}: ${fmtGiB(seg[key])} (${fmtInt(seg[key])} bytes)` }));
      g.append(rect);
      if (w > 48) g.append(el("svg:text", { x: (x + w / 2).toFixed(2), y: y + 17, class: key === "reserved" || key === "idle" ? "seg-text dark" : "seg-text", "text-anchor": "middle", text: (seg[key] / GIB).toFixed(1) }));
      x += w;
    }
    const capacity = plan.gpu_memory_mib ? plan.gpu_memory_mib * MIB : null;
    if (capacity !== null && capacity < total) {
      // More is asked of the GPU than it holds: mark where its memory ends.
      const cx = (labelW + (capacity / total) * barW).toFixed(2);
      const mark = el("svg:line", { x1: cx, x2: cx, y1: y - 3, y2: y + rowH - 7, class: "capacity" });
      mark.append(el("svg:title", { text: `GPU capacity: ${fmtGiB(capacity)}` }));
      g.append(mark);
    }
    svg.append(g);
  });
  const legend = el("div", { class: "legend" });
  for (const [key, label, cls] of SEGMENTS) {
    if (key === "weights" && plan.stages.every((s) => s.weights_bytes === null)) continue;
    legend.append(el("span", {}, el("i", { class: "swatch " + cls }), label));
  }
  // The same figures as a table, for reading and for screen readers.
  const table = el("table", { class: "stage-table" });
  table.append(el("thead", {}, el("tr", {}, el("th", { text: "PP stage" }), ...SEGMENTS.map(([, label]) => el("th", { text: label.split(" (")[0] + " (GiB)" })))));
  const body = el("tbody");
  for (const st of plan.stages) {
    const { seg } = stageSegments(plan, st);
    body.append(el("tr", {}, el("td", { text: String(st.pp_rank) }), ...SEGMENTS.map(([key]) => el("td", { text: (seg[key] / GIB).toFixed(2) }))));
  }
  table.append(body);
  box.append(svg, legend, table);
}

/* ------------------------------------------------------------------ TP sizes the model takes */

// Which TP sizes SGLang accepts for this model (the heads / TP divisibility and the like) is the
// service's to say, not this page's: one sweep over TP candidates with the rest of the view
// fixed; a point the service refuses as an invalid server_args.tp_size is left out. The arrow
// keys on the TP field step through what is left.
const TP_CANDIDATES = Array.from({ length: 64 }, (_, i) => i + 1);

async function refreshTpSizes() {
  const built = planRequest();
  if (built.error || !built.request.server_args) return;
  const base = JSON.parse(JSON.stringify(built.request));
  delete base.server_args.tp_size;
  const key = JSON.stringify(base);
  if (key === state.tpKey) return;
  state.tpKey = key;
  const resp = await api("POST", "/v1/sweep", { base, axes: [{ field: "server_args.tp_size", values: TP_CANDIDATES }] });
  if (key !== state.tpKey) return; // a newer view asked meanwhile
  const refused = (r) => r.error_kind === "invalid_input" && r.error_field === "server_args.tp_size";
  state.tpSizes = resp.ok ? resp.data.rows.filter((r) => !refused(r)).map((r) => r.point["server_args.tp_size"]) : null;
  const sizes = state.tpSizes || [];
  $("tp-sizes").replaceChildren(...sizes.map((n) => el("option", { value: n })));
  $("tp").dataset.allowed = sizes.join(",");
  $("tp-hint").hidden = !sizes.length;
  $("tp-hint").textContent = sizes.length ? `takes ${sizes.join(", ")}` : "";
}

function stepTp(e) {
  if ((e.key !== "ArrowUp" && e.key !== "ArrowDown") || !state.tpSizes || !state.tpSizes.length) return;
  e.preventDefault();
  const cur = intOrNull($("tp").value) ?? 1;
  const next = e.key === "ArrowUp" ? state.tpSizes.find((n) => n > cur) : [...state.tpSizes].reverse().find((n) => n < cur);
  if (next === undefined) return;
  $("tp").value = String(next);
  $("tp").dispatchEvent(new Event("input", { bubbles: true }));
}

/* ------------------------------------------------------------------ rendering: sweep */

function defaultValues(axis) {
  const plan = state.lastPlan;
  switch (axis) {
    case "server_args.context_length": {
      const c = plan ? plan.resolved.context_length : 131072;
      return [16, 8, 4, 2, 1].map((d) => Math.max(1, Math.floor(c / d))).join(", ");
    }
    case "server_args.tp_size":
    case "server_args.pp_size":
      return "1, 2, 4, 8";
    case "server_args.mem_fraction_static":
      return "0.7, 0.75, 0.8, 0.85, 0.9";
    case "server_args.mamba_full_memory_ratio":
      return "0.25, 0.5, 0.9, 1.5, 3";
    case "server_args.max_mamba_cache_size":
      return "64, 128, 256, 512, 1024";
    case "budget.gpu":
      // a sweep point names the part alone: the parts with a confirmed capacity
      return state.gpus.filter((g) => g.confirmed).map((g) => g.name).join(", ");
    case "sglang_version":
      return state.releases.join(", ");
  }
  return "";
}

function axisValues(axis) {
  if (!state.valuesEdited) $("sweep-values").value = defaultValues(axis);
  return $("sweep-values").value.split(",").map((s) => s.trim()).filter((s) => s !== "").map((s) => (axis === "budget.gpu" || axis === "sglang_version" || Number.isNaN(Number(s)) ? s : Number(s)));
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.2, 1.6, 2, 2.4, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;  // quarters read well
  return 10 * p;
}

const compact = (n) => (n >= 1e6 ? (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + "M" : n >= 1e3 ? (n / 1e3).toFixed(n >= 1e4 ? 0 : 1) + "k" : String(n));

// Context lengths and cache sizes are mostly powers of two: 131072 reads best as 128K.
const xLabel = (v) => (typeof v !== "number" ? String(v) : Number.isInteger(v) && v >= 8192 && v % 1024 === 0 ? v / 1024 + "K" : String(v));

function renderSweep(result) {
  const box = $("sweep");
  box.replaceChildren();
  const rows = result.rows;
  const axis = result.axes[0];
  const W = 760, H = 310, L = 64, R = 74, T = 30, B = 46;
  const pw = W - L - R, ph = H - T - B;
  const maxReq = niceMax(Math.max(0, ...rows.map((r) => r.max_running_requests || 0)));
  const maxTok = niceMax(Math.max(0, ...rows.map((r) => r.max_total_num_tokens || 0)));
  const xAt = (i) => L + (rows.length === 1 ? pw / 2 : (i * pw) / (rows.length - 1));
  const yReq = (v) => T + ph - (v / maxReq) * ph;
  const yTok = (v) => T + ph - (v / maxTok) * ph;
  const svg = el("svg:svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": "sweep-title", class: "sweep-chart" });
  svg.append(el("svg:title", { id: "sweep-title", text: `max_running_requests and max_total_num_tokens against ${axis}` }));
  const anyStarts = rows.some((r) => r.feasible);
  for (let k = 0; k <= 4; k++) {
    const y = T + ph - (k * ph) / 4;
    svg.append(el("svg:line", { x1: L, x2: L + pw, y1: y, y2: y, class: "grid" }));
    if (!anyStarts && k > 0) continue; // no figure to scale: no ticks
    svg.append(el("svg:text", { x: L - 6, y: y + 4, "text-anchor": "end", class: "tick req", text: compact((maxReq * k) / 4) }));
    svg.append(el("svg:text", { x: L + pw + 6, y: y + 4, class: "tick tok", text: compact((maxTok * k) / 4) }));
  }
  if (!anyStarts) svg.append(el("svg:text", { x: L + pw / 2, y: T + ph / 2, "text-anchor": "middle", class: "axis-title", text: "SGLang would start at none of these values" }));
  svg.append(el("svg:text", { x: 4, y: 12, class: "axis-title req", text: "requests" }));
  svg.append(el("svg:text", { x: W - 4, y: 12, "text-anchor": "end", class: "axis-title tok", text: "KV tokens" }));
  svg.append(el("svg:text", { x: L + pw / 2, y: H - 6, "text-anchor": "middle", class: "axis-title", text: axis }));
  for (const [key, cls, yOf] of [["max_running_requests", "line-req", yReq], ["max_total_num_tokens", "line-tok", yTok]]) {
    // A refused point breaks the line.
    let d = "", pen = "M";
    rows.forEach((r, i) => {
      if (r[key] === null) return void (pen = "M");
      d += `${pen}${xAt(i).toFixed(1)},${yOf(r[key]).toFixed(1)}`;
      pen = "L";
    });
    if (d) svg.append(el("svg:path", { d, class: cls }));
  }
  rows.forEach((r, i) => {
    const x = xAt(i);
    const value = r.point[axis];
    const g = el("svg:g", { class: "sweep-point", "data-value": value, "data-feasible": String(r.feasible), "data-requests": r.max_running_requests ?? "", "data-tokens": r.max_total_num_tokens ?? "" });
    const label = r.feasible
      ? `${axis} = ${value}: ${fmtInt(r.max_running_requests)} requests, ${fmtInt(r.max_total_num_tokens)} KV tokens (binding: ${r.binding_limit})`
      : `${axis} = ${value}: ${r.error_kind}: ${r.error_message}`;
    g.append(el("svg:title", { text: label }));
    if (r.feasible) {
      g.append(el("svg:circle", { cx: x.toFixed(1), cy: yReq(r.max_running_requests).toFixed(1), r: 4.5, class: "pt-req" }));
      g.append(el("svg:rect", { x: (x - 4).toFixed(1), y: (yTok(r.max_total_num_tokens) - 4).toFixed(1), width: 8, height: 8, class: "pt-tok" }));
    } else {
      g.append(el("svg:path", { d: `M${x - 5},${T + ph - 5}l10,10m0,-10l-10,10`, class: "pt-refused" }));
    }
    g.append(el("svg:text", { x: x.toFixed(1), y: T + ph + 16, "text-anchor": "middle", class: "tick", text: xLabel(value) }));
    svg.append(g);
  });
  const legend = el("div", { class: "legend" }, el("span", {}, el("i", { class: "swatch line-req-sw" }), "max_running_requests (left)"), el("span", {}, el("i", { class: "swatch line-tok-sw" }), "max_total_num_tokens (right)"), el("span", {}, el("i", { class: "swatch refused-sw" }), "would not start (hover for SGLang's error)"));
  box.append(svg, legend);

  const table = el("table", { class: "sweep-rows" });
  table.append(el("thead", {}, el("tr", {}, ...[axis, "starts", "max_running_requests", "max_total_num_tokens", "max_mamba_cache_size", "binding", "error"].map((h) => el("th", { text: h })))));
  const tb = el("tbody");
  for (const r of rows)
    tb.append(el("tr", {}, ...[String(r.point[axis]), r.feasible ? "yes" : "no", fmtInt(r.max_running_requests), fmtInt(r.max_total_num_tokens), fmtInt(r.max_mamba_cache_size), r.binding_limit ?? "", r.error_kind ? `${r.error_kind}: ${r.error_message}` : ""].map((t) => el("td", { text: t }))));
  table.append(tb);
  $("sweep-table").replaceChildren(table);
}

/* ------------------------------------------------------------------ recommendations */

function quoteArg(a) {
  return /^[A-Za-z0-9_\-.,:/=@+]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`;
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
  } catch (e) {
    const ta = el("textarea", { class: "offscreen" });
    ta.value = text;
    document.body.append(ta);
    ta.select();
    document.execCommand("copy");
    ta.remove();
  }
  button.textContent = "Copied";
  setTimeout(() => (button.textContent = "Copy"), 1500);
}

async function runRecommend() {
  const out = $("recommend-out");
  const m = currentModel();
  if (m.error) return showProblem("problem", m.error);
  const b = currentBudget();
  if (b.error) return showProblem("problem", b.error);
  // A part without a confirmed capacity is planned from the budget form naming its MiB.
  const body = { model: m.model, ...(b.budget.gpu_memory_mib ? { budget: b.budget } : { gpu: b.budget.gpu }), limit: 5, search: { tp_size: [1, 2, 4, 8], pp_size: [1, 2, 4, 8] } };
  if ($("release").value) body.sglang_version = $("release").value;
  if ($("args-mode").value === "form") {
    const sa = serverArgsFromForm();
    delete sa.tp_size;
    delete sa.pp_size;
    if (sa.attn_dp_size === 1) delete sa.attn_dp_size;
    body.server_args = sa;
    if (sa.context_length) body.target = { context_length: sa.context_length };
  }
  out.replaceChildren(el("p", { class: "hint", text: "searching…" }));
  $("recommend-run").disabled = true;
  try {
    const resp = await api("POST", "/v1/recommend", body);
    if (resp.status === 404) {
      $("recommend").hidden = true;
      return;
    }
    if (!resp.ok) {
      out.replaceChildren(el("p", { class: "problem", text: `${resp.data.field || ""}: ${resp.data.detail}` }));
      return;
    }
    const cands = resp.data.candidates || [];
    if (!cands.length) {
      out.replaceChildren(el("p", { text: resp.data.why || "no setting of this search starts" }));
      return;
    }
    const table = el("table", { class: "recs" });
    table.append(el("thead", {}, el("tr", {}, ...["GPUs", "TP", "PP", "DP", "max_running_requests", "max_total_num_tokens", "binding", "launch flags", ""].map((h) => el("th", { text: h })))));
    const tb = el("tbody");
    cands.forEach((c, i) => {
      const envText = Object.entries(c.env || {}).map(([k, v]) => `${k}=${quoteArg(v)}`).join(" ");
      const flags = c.sglang_args.map(quoteArg).join(" ");
      const btn = el("button", { type: "button", class: "copy", "aria-label": `Copy the launch flags of recommendation ${i + 1}`, text: "Copy" });
      btn.addEventListener("click", () => copyText(flags, btn));
      tb.append(el("tr", { class: "rec" }, el("td", { text: String(c.gpus) }), el("td", { text: String(c.tp_size) }), el("td", { text: String(c.pp_size) }), el("td", { text: String(c.attn_dp_size) }), el("td", { text: fmtInt(c.max_running_requests) }), el("td", { text: fmtInt(c.max_total_num_tokens) }), el("td", { text: c.binding_limit || "" }), el("td", {}, el("code", { class: "flags", text: flags }), envText ? el("div", { class: "env" }, "env: ", el("code", { text: envText })) : null), el("td", {}, btn)));
    });
    table.append(tb);
    out.replaceChildren(table);
  } finally {
    $("recommend-run").disabled = false;
  }
}

/* ------------------------------------------------------------------ a disaggregated pair */

/* One side's server_args: the shared flags of the form, then the side's own layout and flags. */
function sideServerArgs(role, pre) {
  const sa = serverArgsFromForm();
  for (const [suffix, field, kind] of SIDE_FIELDS) {
    const c = $(`${pre}-${suffix}`);
    if (!c || !field) continue;
    if (kind === "bool") {
      if (c.checked) sa[field] = true;
    } else if (c.value !== "") sa[field] = kind === "int" ? Number(c.value) : c.value;
  }
  sa.disaggregation_mode = role;
  return sa;
}

/* The POST /v1/plan body of a pair: {prefill, decode, prefill_replicas, decode_replicas}. */
function pairRequest() {
  const built = planRequest();
  if (built.error) return built;
  const body = {};
  for (const [role, pre] of SIDES) {
    body[role] = { ...built.request, server_args: sideServerArgs(role, pre) };
    body[`${role}_replicas`] = intOrNull($(`${pre}-n`).value) ?? 1;
  }
  return { request: body };
}

function figureCard(field, label, value) {
  const dd = el("dd", { "data-field": field, "data-value": value === null || value === undefined ? "" : String(value), text: typeof value === "number" && Number.isInteger(value) ? fmtInt(value) : value ?? "–" });
  return el("div", {}, el("dt", { text: label }), dd);
}

/* One side's plan, drawn into its column: status, SGLang's error, notes, figures, decode pool, bars. */
function renderSidePlan(root, role, plan, extra) {
  const title = root.querySelector("h2");
  root.replaceChildren(title);
  root.dataset.feasible = String(plan.feasible);
  root.append(el("div", { class: verdictClass(plan.feasible), text: substitutedPrefix() + statusText(plan, selectedGpu()) }));
  if (plan.error) {
    root.append(el("div", { class: "refusal" },
      el("h3", { text: "SGLang would not start" }),
      el("p", {}, el("code", { class: "error-exception", text: plan.error.exception }), ": ", el("span", { class: "error-message", text: plan.error.message })),
      el("ul", { class: "remedies" }, ...(plan.error.remedies.length ? plan.error.remedies : ["(none computed)"]).map((t) => el("li", { text: t })))));
  }
  const figures = el("dl", { class: "figures" });
  for (const f of FIGURES) figures.append(figureCard(f, f, plan[f]));
  figures.append(figureCard("mem_fraction_static", "mem_fraction_static", plan.resolved.mem_fraction_static));
  figures.append(figureCard("context_length", "context length", plan.resolved.context_length));
  if (plan.logical_max_total_num_tokens !== plan.max_total_num_tokens) figures.append(figureCard("logical_max_total_num_tokens", "logical KV tokens (× DCP)", plan.logical_max_total_num_tokens));
  root.append(figures);
  const notes = [...plan.warnings, ...(plan.advice || []), ...((extra && extra.sglang_args_warnings) || [])];
  if (notes.length) root.append(el("ul", { class: "notes" }, ...notes.map((t) => el("li", { text: t }))));
  if (plan.decode_pool) {
    // SGLang's decode request pool against what the budget charged (the plan's own figures).
    const dp = plan.decode_pool;
    const rows = [["extra slots (in-transfer requests)", fmtInt(dp.extra_slots)], ["req_to_token rows", fmtInt(dp.request_rows)], ["mamba rows allocated", fmtInt(dp.mamba_rows_allocated)], ["mamba rows charged", fmtInt(dp.mamba_rows_charged)], ["uncharged mamba state", fmtGiB(dp.uncharged_mamba_bytes)], ["uncharged req_to_token", fmtGiB(dp.uncharged_req_to_token_bytes)], ["avoided by", dp.avoid]];
    root.append(el("h3", { text: "Decode request pool" }), el("table", { class: "decode-pool" }, el("tbody", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", { scope: "row", text: k }), el("td", { text: v }))))));
  }
  if (plan.slack_consumers && plan.slack_consumers.length) {
    root.append(el("h3", { text: "Allocated later, out of the slack" }), el("ul", { class: "notes slack" }, ...plan.slack_consumers.map((c) => el("li", { text: `${c.name}${c.bytes === null ? "" : " (" + fmtGiB(c.bytes) + ")"}: ${c.note}` }))));
  }
  root.append(el("h3", { text: "Where each GPU's memory goes" }));
  const bars = el("div", { class: "chart" });
  root.append(bars);
  renderBars(plan, bars, `bars-${role}-title`);
}

function clearPair() {
  for (const f of PAIR_FIGURES) {
    $("pair-" + f).textContent = "–";
    $("pair-" + f).dataset.value = "";
  }
  $("pair-status").hidden = true;
  $("pair-notes").replaceChildren();
  for (const [role] of SIDES) {
    const root = $(`plan-${role}`);
    root.replaceChildren(root.querySelector("h2"));
    delete root.dataset.feasible;
  }
}

function renderPair(data) {
  const pair = data.pair;
  for (const f of PAIR_FIGURES) {
    const v = pair[f];
    $("pair-" + f).dataset.value = v === null || v === undefined ? "" : String(v);
    $("pair-" + f).textContent = typeof v === "number" ? fmtInt(v) : v ?? "–";
  }
  const status = $("pair-status");
  status.hidden = false;
  status.className = verdictClass(pair.feasible);
  status.textContent = substitutedPrefix() + (pair.feasible ? `Both sides start; ${pair.binding_side} binds what the pair sustains.` : "At least one side would not start.");
  $("pair-notes").replaceChildren(...pair.notes.map((t) => el("li", { text: t })));
  for (const [role] of SIDES) renderSidePlan($(`plan-${role}`), role, data[role], data[role]);
}

async function updatePair() {
  const seq = ++state.pairSeq;
  const built = pairRequest();
  if (built.error) {
    clearPair();
    markInvalid(built.error.field);
    return showProblem("problem", built.error);
  }
  const resp = await api("POST", "/v1/plan", built.request);
  if (seq !== state.pairSeq) return;
  if (!resp.ok) {
    clearPair();
    markInvalid(resp.data.field);
    return showProblem("problem", resp.data);
  }
  showProblem("problem", null);
  markInvalid(null);
  renderPair(resp.data);
}

/* ------------------------------------------------------------------ the update loop */

async function updatePlan() {
  const seq = ++state.planSeq;
  const built = planRequest();
  if (built.error) {
    clearPlan();
    markInvalid(built.error.field);
    return showProblem("problem", built.error);
  }
  const resp = await api("POST", "/v1/plan", built.request);
  if (seq !== state.planSeq) return;
  if (!resp.ok) {
    clearPlan();
    markInvalid(resp.data.field);
    return showProblem("problem", resp.data);
  }
  showProblem("problem", null);
  markInvalid(null);
  state.lastPlan = resp.data;
  renderPlan(resp.data, resp.data);
}

async function updateSweep() {
  const seq = ++state.sweepSeq;
  // The default context-length values follow the plan's context: wait for the first plan.
  const built = planRequest();
  if (built.error) return void $("sweep").replaceChildren();
  const axis = $("sweep-axis").value;
  const values = axisValues(axis);
  if (!values.length) return void $("sweep").replaceChildren(el("p", { class: "hint", text: "give at least one value" }));
  const base = built.request;
  if (axis === "budget.gpu") delete base.budget.gpu_memory_mib; // each point is a part at its own capacity
  if (axis === "sglang_version") delete base.sglang_version;
  const resp = await api("POST", "/v1/sweep", { base, axes: [{ field: axis, values }] });
  if (seq !== state.sweepSeq) return;
  if (!resp.ok) {
    $("sweep").replaceChildren(el("p", { class: "problem", role: "alert", text: `${resp.data.field || ""}: ${resp.data.detail}` }));
    $("sweep-table").replaceChildren();
  } else renderSweep(resp.data);
}

async function update() {
  state.pending = false;
  writeUrl();
  try {
    if (isPair()) return await updatePair();
    const tp = refreshTpSizes();
    await updatePlan();
    await updateSweep();
    await tp;
  } finally {
    if (!state.pending) $("results").setAttribute("aria-busy", "false");
  }
}

const debouncedUpdate = debounce(update, 200);
// aria-busy on the results says a new answer is on its way (screen readers wait; so do the tests).
function scheduleUpdate() {
  state.pending = true;
  $("results").setAttribute("aria-busy", "true");
  debouncedUpdate();
}

function populate(select, items) {
  select.replaceChildren(...items.map(([value, label]) => el("option", { value, text: label })));
}

async function init() {
  const [presets, gpus, doc] = await Promise.all([api("GET", "/v1/presets"), api("GET", "/v1/gpus"), api("GET", "/openapi.json")]);
  state.allPresets = presets.data.presets;
  state.presets = state.allPresets.filter((p) => p.sizable);
  state.gpus = gpus.data.gpus;
  populate($("preset"), state.presets.map((p) => [p.name, `${p.name} (${p.model_id})`]));
  // Every catalog part; one without a confirmed capacity asks for its MiB (budget.gpu_memory_mib).
  populate($("gpu"), state.gpus.map((g) => [g.name, `${g.product} · ${g.memory_mib === null ? "capacity unconfirmed: give MiB" : fmtInt(g.memory_mib) + " MiB"}`]));
  const schemas = (doc.data.components || {}).schemas || {};
  const sa = (schemas.ServerArgs || {}).properties || {};
  // The releases a plan may name, and the default, are the wire contract's (sglang_version).
  const version = ((schemas.ApiPlanRequest || schemas.PlanRequest || {}).properties || {}).sglang_version || {};
  state.releases = version.enum || [];
  state.defaultRelease = version.default ?? null;
  populate($("release"), state.releases.map((v) => [v, v === state.defaultRelease ? `${v} (default)` : v]));
  if (state.defaultRelease) $("release").value = state.defaultRelease;
  if (state.releases.length) $("sweep-axis").append(el("option", { value: "sglang_version", text: "SGLang release" }));
  for (const pre of ["p", "d"]) populate($(`${pre}-a2a`), (sa.moe_a2a_backend || {}).enum?.map((v) => [v, v]) || [["none", "none"]]);
  // The choices of each select are the wire contract's (ServerArgs in the OpenAPI document).
  const enumOf = (schema) => (schema ? schema.enum || (schema.anyOf || []).flatMap((s) => s.enum || []) : []);
  for (const [id, field, unset] of [["kv", "kv_cache_dtype", "auto"], ["radix", "mamba_radix_cache_strategy", "auto"], ["ssm", "mamba_ssm_dtype", "default"], ["spec", "speculative_algorithm", "none"]]) {
    populate($(id), [["", unset], ...enumOf(sa[field]).filter((v) => v !== "auto").map((v) => [v, v])]);
  }
  state.envFields = new Set(Object.keys((schemas.Env || {}).properties || {}));
  state.hasRecommend = Boolean((doc.data.paths || {})["/v1/recommend"]);
  $("recommend").hidden = !state.hasRecommend;
  if (state.gpus.some((g) => g.name === "h200")) $("gpu").value = "h200";
  if (state.presets.some((p) => p.name === "qwen3-next-80b-a3b-instruct")) $("preset").value = "qwen3-next-80b-a3b-instruct";
  $("tp").value = "4";
  readUrl();
  showLinkProblems();

  $("inputs").addEventListener("submit", (e) => e.preventDefault());
  $("inputs").addEventListener("input", clearLinkProblems, true);
  $("inputs").addEventListener("change", clearLinkProblems, true);
  $("inputs").addEventListener("input", (e) => {
    if (e.target.id === "gpus") {
      const pp = intOrNull($("pp").value) ?? 1;
      const n = intOrNull($("gpus").value);
      if (n && n % pp === 0) $("tp").value = String(n / pp);
    } else if (e.target.id === "tp" || e.target.id === "pp") syncGpuCount();
    if (e.target.id === "cmdline") selectPresetOfCommandLine();
    syncVisibility();
    scheduleUpdate();
  });
  $("inputs").addEventListener("change", () => {
    syncVisibility();
    scheduleUpdate();
  });
  $("tp").addEventListener("keydown", stepTp);
  $("sweep-axis").addEventListener("change", () => {
    clearLinkProblems();
    state.valuesEdited = false;
    scheduleUpdate();
  });
  $("sweep-values").addEventListener("input", () => {
    state.valuesEdited = true;
    scheduleUpdate();
  });
  $("recommend-run").addEventListener("click", runRecommend);
  $("release").addEventListener("change", () => ($("ref-release").textContent = $("release").value));
  $("ref-release").textContent = $("release").value || $("ref-release").textContent;
  $("results").setAttribute("aria-busy", "true");
  await update();
  document.body.dataset.ready = "1";
}

document.addEventListener("DOMContentLoaded", () => {
  init().catch((e) => showProblem("problem", { detail: `the page could not load its data: ${e.message}` }));
});
