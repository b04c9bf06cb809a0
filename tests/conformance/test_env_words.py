"""Environment variables: a launch line's leading `NAME=value` words and the request's `env`
object are one input, read by SGLang 0.5.23's own env rules (`sglang/srt/environ.py`:
EnvBool, EnvStr).

* the table: every env var the project models (schemas.request.Env), each value read three
  ways: SGLang's own `Envs.<NAME>.parse` (os.getenv as written for SGLANG_PP_LAYER_PARTITION,
  which SGLang reads directly), the launch-line word (service/sglang_args.py) and
  the `env` object member; where SGLang's parse refuses a value (it warns and keeps the
  default), both of ours refuse it with a 422 naming `env.<NAME>`;
* the issue's MI300X case through the API: `SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION=1` on the
  launch line keeps an explicit 0.85 (0.7225 without it), `SGLANG_AITER_KV_CACHE_LAYOUT=
  vectorized_5d` makes the page 64, exactly as the `env` form does.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from mambasizer.schemas.request import Env
from mambasizer.service.api.app import create_app
from mambasizer.service.sglang_args import ENV_NAMES, env_value, parse_sglang_args, split_env_words
from mambasizer.service.solver.errors import PlanInputError

BOOL_WORDS = ("1", "0", "true", "TRUE", "Yes", "y", "N", "no", "false", "2", "on", " 1", "")
TABLE = {
    "SGLANG_PP_LAYER_PARTITION": ("10,10", "7,8,9"),
    "SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK": BOOL_WORDS,
    "SGLANG_MAMBA_SSM_DTYPE": ("bfloat16", "float32", "float16"),
    "SGLANG_MAMBA_CONV_DTYPE": ("bfloat16", "float32"),
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": BOOL_WORDS,
    "SGLANG_USE_CUDA_IPC_TRANSPORT": BOOL_WORDS,
    "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION": BOOL_WORDS,
    "SGLANG_AITER_KV_CACHE_LAYOUT": ("vectorized_5d", "VECTORIZED_5D", "nhd"),
}
ROWS = [(name, value) for name, values in TABLE.items() for value in values]
LAUNCHER = ["python", "-m", "sglang.launch_server", "--tp-size", "1"]


@pytest.fixture(scope="module")
def envs():
    import importlib.util

    if importlib.util.find_spec("sglang") is None:
        pytest.skip("the sglang 0.5.23 wheel is not installed (pip install --no-deps sglang==0.5.23)")
    from tests.conformance import launch_ref

    launch_ref._load()
    with launch_ref._import_fakes():
        from sglang.srt.environ import Envs
    return Envs


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(), raise_server_exceptions=False) as c:
        yield c


def test_the_table_covers_every_modelled_env_var():
    assert set(TABLE) == set(ENV_NAMES) == set(Env.model_fields)


@pytest.mark.parametrize("name, value", ROWS, ids=[f"{n}={v!r}" for n, v in ROWS])
def test_launch_line_word_equals_env_object_equals_sglangs_parse(envs, name, value):
    field = envs.__dict__.get(name)
    try:
        # SGLANG_PP_LAYER_PARTITION is no Envs field: distributed/utils.py reads os.getenv as written.
        theirs = field.parse(value) if field is not None else value
    except ValueError:
        theirs = ValueError
    if theirs is ValueError:  # SGLang warns and keeps the default: refused here, both forms alike
        with pytest.raises(PlanInputError) as word:
            parse_sglang_args([f"{name}={value}", *LAUNCHER])
        with pytest.raises(PlanInputError) as obj:
            env_value(name, value)
        assert word.value.field == obj.value.field == f"env.{name}"
        return
    from_word = parse_sglang_args([f"{name}={value}", *LAUNCHER]).env[name]
    from_object = getattr(Env(**{name: value}), name)
    assert from_word == from_object == theirs


def test_env_words_split_off_before_the_first_flag():
    env, rest = split_env_words(["A=1", "SGLANG_AITER_KV_CACHE_LAYOUT=vectorized_5d", "python", "-m", "sglang.launch_server", "--tp-size", "8", "X=2"])
    assert env == [("A", "1"), ("SGLANG_AITER_KV_CACHE_LAYOUT", "vectorized_5d")]
    assert rest == ["python", "-m", "sglang.launch_server", "--tp-size", "8", "X=2"]


MI300X = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "budget": {"gpu": "mi300x"}}


@pytest.mark.parametrize("env, flags, expect", [
    ({"SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION": "1"}, ["--tp-size", "4", "--mem-fraction-static", "0.85"], {"mem_fraction_static": 0.85}),
    ({}, ["--tp-size", "4", "--mem-fraction-static", "0.85"], {"mem_fraction_static": 0.7225}),
    ({"SGLANG_AITER_KV_CACHE_LAYOUT": "vectorized_5d"}, ["--tp-size", "4"], {"page_size": 64}),
    ({}, ["--tp-size", "4"], {"page_size": 1}),
])
def test_mi300x_launch_line_env_words_plan_as_the_env_object(client, env, flags, expect):
    words = [f"{k}={v}" for k, v in env.items()] + ["python", "-m", "sglang.launch_server", *flags]
    line = client.post("/v1/plan", json={**MI300X, "sglang_args": words})
    assert line.status_code == 200, line.text
    obj = client.post("/v1/plan", json={**MI300X, "sglang_args": flags, "env": env}).json()
    got = line.json()
    for key, value in expect.items():
        assert got["resolved"][key] == pytest.approx(value) and obj["resolved"][key] == pytest.approx(value)
    assert {k: v for k, v in got.items() if k != "warnings"} == {k: v for k, v in obj.items() if k != "warnings"}


def test_a_launch_line_word_and_the_env_object_agree_across_spellings(client):
    """`=1` on the line and `true` in the object are one value (SGLang's EnvBool), not a conflict."""
    body = {**MI300X, "sglang_args": ["SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION=1", "--tp-size", "4", "--mem-fraction-static", "0.85"],
            "env": {"SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION": "true"}}
    resp = client.post("/v1/plan", json=body)
    assert resp.status_code == 200, resp.text
    assert resp.json()["resolved"]["mem_fraction_static"] == 0.85
    clash = client.post("/v1/plan", json={**body, "env": {"SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION": "no"}})
    assert clash.status_code == 422 and "env.SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION" in clash.text
