"""Ignore-list matching (service/solver/weights/quant/ignore_list.py) against SGLang 0.5.23's
own matching functions, on a table of module names x entries:

* plain entries: `quantization.utils._module_path_match` (what is_layer_skipped applies);
* `re:` entries: compressed-tensors' `check_equal_or_regex_match` (`re.match`);
* glob entries (`*`): `ModelOptQuantConfig.is_layer_excluded` (the glob as SGLang translates it:
  only `.` escaped, so `[`, `(`, `?`, `|` keep their regex meaning).

The project matches with RE2 in linear time; every answer must equal SGLang's, one entry at a
time and the whole list at once. An entry SGLang's `re` refuses must be refused (a PlanInputError
naming it); an entry SGLang accepts but RE2 cannot express is refused with the reason.
Names here avoid the two wrinkles the project models beyond these functions (the
`model.language_model.` prefix tried both ways, and ModelOpt's fused MLA tails).
"""

from __future__ import annotations

import itertools
import re
import types
import warnings

import pytest

import weights_ref as W
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.weights.quant.ignore_list import IgnoreList

NAMES = (
    "lm_head", "model.embed_tokens", "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.o_proj",
    "model.layers.1.mlp.gate_up_proj", "model.layers.1.mlp.gate", "model.layers.1.mlp.down_proj",
    "model.layers.12.mlp.experts", "model.layers.13.mixer.in_proj", "model.layers.3.mixer.out_proj",
    "model.layers.10.linear_attn.in_proj_qkvz", "mtp.layers.0.eh_proj", "visual.blocks.0.attn.qkv",
    "model.layers.2.mlp.shared_expert.gate_proj", "model.layers.[1].mlp", "model.layers.(1).mlp", "model.layers.1x.mlp",
    "LM_HEAD", "model.layers.7.self_attn.kv_b_proj", "alpha]",
)
PLAIN = (
    "lm_head", "mlp.gate", "model.layers.1", "self_attn", "layers.0.self_attn.q_proj", "model.layers.1.mlp.",
    "experts", "gate_up_proj", "model.layers.[1]", "layers.(1).mlp", "", ".", "mixer.in_proj",
)
REGEX = (
    "re:.*q_proj", r"re:model\.layers\.1[0-9]\..*", r"re:.*mlp\.gate$", "re:(?i)LM_HEAD", "re:visual.*",
    "re:model.layers.(1|3).mixer", r"re:.*\bexperts\b", "re:[^m].*", r"re:.*proj\Z", "re:(?s).*", "re:",
    r"re:model\.layers\.\d+\.mlp", r"re:.*(?i:SHARED)_expert", "re:[[:alpha:]]+", r"re:(?:a|b|model)+\.", "re:.*?gate",
    r"re:\w+\.\w+\.\[1\]", "re:model.layers.1{1,2}", "re:(?m)^mtp", r"re:\Amodel\.embed",
)
GLOB = (
    "*.mlp.gate", "model.layers.1*", "model.layers.[0-3].*", "*self_attn*", "mtp*", "model.layers.(1|2).*",
    "*.experts", "*linear_attn.in_proj_qkvz", "model.layers.1?.mlp*", "*LM_HEAD", "model.layers.[1]*",
    "*(1)*", "visual*", "*(1|9)?.mlp",
)
# SGLang's re refuses these (re.error); so must the project.
INVALID = ("re:(", "model.(*", "re:[a-", "re:a**", "*[a-", "*[", "re:(?P<x>a)(?P<x>b)", r"re:\pL", r"re:\z")
# SGLang's re accepts these; RE2 cannot express them in linear time: refused with the reason.
NOT_LINEAR = (r"re:(a)\1", "re:(?=model).*", "re:(?<!x)lm_head", "re:(?>a+)b", "re:a++", "re:a{1001}", "re:(a)?(?(1)b|c)",
              "*+", "model*(?=x)")
# SGLang's glob matcher (the `regex` module) reads these otherwise than Python's re: refused, not guessed.
GLOB_AMBIGUOUS = ("*[[:alpha:]]", "*(mlp){e<=1}")


@pytest.fixture(scope="module")
def sg():
    W.load()
    with W.active():
        from sglang.srt.layers.quantization.compressed_tensors.utils import (
            check_equal_or_regex_match,
        )
        from sglang.srt.layers.quantization.modelopt_quant import ModelOptQuantConfig
        from sglang.srt.layers.quantization.utils import _module_path_match

    def glob(entries, name):
        return ModelOptQuantConfig.is_layer_excluded(types.SimpleNamespace(exclude_modules=list(entries)), name)

    return types.SimpleNamespace(
        plain=lambda entries, name: any(_module_path_match(e, name) for e in entries),
        regex=lambda entries, name: check_equal_or_regex_match(name, list(entries)),
        glob=glob,
    )


def _sglang(sg, entry: str, name: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "[[:alpha:]]": Python warns, then parses it its way
        if entry.startswith("re:"):
            return sg.regex([entry], name)
        if "*" in entry:
            return sg.glob([entry], name)
        return sg.plain([entry], name)


def _ours(entries, name: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return IgnoreList(entries).matches(name)


@pytest.mark.parametrize("entry", PLAIN + REGEX + GLOB)
def test_each_entry_matches_as_sglang(sg, entry):
    got = {name: _ours([entry], name) for name in NAMES}
    want = {name: _sglang(sg, entry, name) for name in NAMES}
    assert got == want


def test_the_table_holds_both_answers(sg):
    """The table is not one-sided: every kind of entry both matches and misses somewhere."""
    for kind in (PLAIN, REGEX, GLOB):
        answers = {_sglang(sg, e, n) for e, n in itertools.product(kind, NAMES)}
        assert answers == {True, False}


@pytest.mark.parametrize("start", range(0, len(PLAIN + REGEX + GLOB), 7))
def test_a_whole_list_matches_as_sglang(sg, start):
    """The entries compiled together (one alternation per kind) answer as SGLang's any()."""
    entries = list(itertools.islice(itertools.cycle(PLAIN + REGEX + GLOB), start, start + 9))
    for name in NAMES:
        assert _ours(entries, name) == any(_sglang(sg, e, name) for e in entries), (entries, name)


@pytest.mark.parametrize("entry", INVALID)
def test_an_entry_sglang_refuses_is_refused(sg, entry):
    with pytest.raises(Exception) as raised:
        _sglang(sg, entry, "model.layers.0.self_attn.q_proj")
    assert isinstance(raised.value, re.error) or type(raised.value).__module__.startswith("regex")
    with pytest.raises(PlanInputError) as exc:
        IgnoreList(["lm_head", entry], ["quantization_config.ignore[0]", "quantization_config.ignore[1]"])
    assert exc.value.field == "quantization_config.ignore[1]"
    assert repr(entry) in exc.value.message and "not a valid regular expression" in exc.value.message


@pytest.mark.parametrize("entry", NOT_LINEAR)
def test_an_entry_rE2_cannot_express_is_refused_with_why(sg, entry):
    _sglang(sg, entry, "model.layers.0.self_attn.q_proj")  # SGLang's re accepts it
    with pytest.raises(PlanInputError) as exc:
        IgnoreList([entry], ["quantization_config.ignore[0]"])
    assert exc.value.field == "quantization_config.ignore[0]"
    assert "linear-time" in exc.value.message and repr(entry) in exc.value.message


@pytest.mark.parametrize("entry", GLOB_AMBIGUOUS)
def test_a_glob_the_two_parsers_read_apart_is_refused(sg, entry):
    _sglang(sg, entry, "model.layers.0.self_attn.q_proj")  # SGLang's regex module accepts it
    with pytest.raises(PlanInputError) as exc:
        IgnoreList([entry], ["quantization_config.ignore[0]"])
    assert "regex module" in exc.value.message
