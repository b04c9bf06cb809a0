"""The preflight hook's GPU form (`preflight.gpu: h200`): the chart renders
`check --preset P --gpu G -- ARGS`, the template takes exactly one of gpu / budgetGiB (and
says so on one line naming the field and the forms), and the rendered arguments pass through
the real `mambasizer check`."""

from __future__ import annotations

import copy

import pytest

from deploy_helpers import CHART, FULL_VALUES, documents, helm, one, render
from mambasizer.service.cli import main


def _values(**preflight):
    values = copy.deepcopy(FULL_VALUES)
    pf = values["preflight"]
    pf.pop("budgetGiB", None)
    pf.update(preflight)
    return values


def test_chart_renders_the_gpu_form_and_the_real_cli_passes_it(tmp_path, monkeypatch, capsys):
    job = one(documents(render(CHART, _values(gpu="h200", budgetGiB=0))), "Job")
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:5] == ["check", "--preset", "qwen3-next-80b-a3b-instruct", "--gpu", "h200"]
    assert "--budget-gib" not in args
    monkeypatch.setenv("MAMBASIZER_TERMINATION_LOG", str(tmp_path / "termination-log"))
    code = main(args)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "budget=estimated" in out


BUDGET_FORMS = ("gpu (e.g. gpu: h200, planned from the GPU alone; with gpuMemoryMib where its capacity is unconfirmed) or budgetGiB "
                "(e.g. budgetGiB: 40, GiB per GPU left for the mamba/KV split)")
FORMS = "preset or modelPath (or --model-path in sglangArgs) with " + BUDGET_FORMS


def _refusal_line(error: BaseException) -> str:
    """The one line Helm prints for a template `fail` (after its `execution error at (...): `)."""
    text = str(error)
    assert "\n" not in text.strip(), text  # one line, not a schema's nested oneOf dump
    assert "oneOf" not in text and "allOf" not in text, text
    return text.split("): ", 1)[1]


@pytest.mark.parametrize(
    "preflight, line",
    [
        ({"gpu": "", "budgetGiB": 0}, f"mambasizer preflight: preset needs a budget: set {BUDGET_FORMS}"),
        ({}, f"mambasizer preflight: preset needs a budget: set {BUDGET_FORMS}"),  # budgetGiB left out
        ({"gpu": "h200", "budgetGiB": 40}, f"mambasizer preflight: preset takes gpu or budgetGiB, not both: keep {BUDGET_FORMS}"),
        ({"preset": ""}, "mambasizer preflight: set preset (or modelPath) or request; the forms: " + FORMS
         + ", and sglangArgs; or request (a PlanRequest); or prefill and decode (a 1P1D pair)"),
        ({"request": {"model": {"preset": "p"}, "budget": {"rest_gib": 4}}, "budgetGiB": 4},
         "mambasizer preflight: set preset (or modelPath) or request, not both; the forms: " + FORMS
         + ", and sglangArgs; or request (a PlanRequest)"),
    ],
)
def test_chart_refuses_a_missing_or_double_budget_on_one_readable_line(preflight, line):
    with pytest.raises(helm().HelmError) as info:
        render(CHART, _values(**preflight))
    assert _refusal_line(info.value) == line


def test_template_fail_names_the_gpu_form(tmp_path):
    from deploy_helpers import LIBRARY_CHART, copy_chart

    chart = tmp_path / "app"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n  - name: mambasizer-preflight\n    version: 0.1.0\n")
    (chart / "values.yaml").write_text(
        "pf:\n  image: {repository: mambasizer/api}\n  preset: qwen3-next-80b-a3b-instruct\n  sglangArgs: ['--tp-size', '4']\n")
    (chart / "templates" / "hook.yaml").write_text('{{- include "mambasizer-preflight.job" (dict "root" $ "values" .Values.pf) }}\n')
    copy_chart(LIBRARY_CHART, chart / "charts" / "mambasizer-preflight")
    with pytest.raises(helm().HelmError) as info:
        render(chart)
    assert _refusal_line(info.value) == f"mambasizer preflight: preset needs a budget: set {BUDGET_FORMS}"
