"""A draft checkpoint's weights (--speculative-draft-model-path), priced per rank by the target's
weights code from the draft's config (service/solver/weights/draft.py), equal SGLang 0.5.23's
draft model class built on the meta device as the draft worker builds it
(ModelConfig(is_draft_model=True): Qwen3.5 / Qwen3-Next / Nemotron-H checkpoints become their
MTP class, other families load whole), at the target's TP. Drafts: the fixture BF16 Qwen3.8
checkpoint read from its folder by the resolver (rebuilt as Qwen3_5ForCausalLMMTP), and the
shipped LFM2-350M config (a whole model)."""

from __future__ import annotations

import os
import sys

import pytest

import weights_ref as W
from mambasizer.service.checkpoints import draft_for
from mambasizer.service.presets import PRESETS
from mambasizer.service.solver.weights.draft import draft_weight_bytes

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "checkpoints"))
import ckpt_fixtures as F


@pytest.fixture(scope="module")
def fixture_draft(tmp_path_factory):
    folder = F.write_checkpoint(tmp_path_factory.mktemp("draft") / "qwen3.8-27b", "bf16-mtp")
    target = F.write_checkpoint(tmp_path_factory.mktemp("target") / "qwen3.8-27b-fp8", "fp8")
    draft, _, note = draft_for(str(folder), str(target))
    assert draft is not None and "hf_config" in draft, note
    return draft["hf_config"]


def _sglang(config: dict, tp: int) -> tuple[int, dict]:
    return W.rank_bytes(dict(config), tp=tp, pp=1, draft=True, extra_args={"speculative_algorithm": "EAGLE"})


@pytest.mark.parametrize("tp", (1, 2, 4))
def test_an_mtp_rebuilt_draft_equals_sglangs_draft_class(fixture_draft, tp):
    theirs, per = _sglang(fixture_draft, tp)
    assert "fc.weight" in per, sorted(per)[:5]  # SGLang built the MTP class (its fc joins embedding and hidden state)
    # The rotary cache is the target's (get_rope caches per process; same rope as the target here).
    shared_rope = sum(b for n, b in per.items() if ".rotary_emb." in n)
    ours = draft_weight_bytes(fixture_draft, tp_size=tp, ep_size=1)
    print(f"\nfixture Qwen3.8 draft tp {tp}: {ours:,} bytes per rank = SGLang's {theirs:,} less the shared rope {shared_rope:,}")
    assert ours == theirs - shared_rope


@pytest.mark.parametrize("tp", (1, 2))
def test_a_whole_model_draft_equals_sglangs_model_class(tp):
    config = dict(PRESETS["lfm2-350m"].hf_config)
    theirs, per = _sglang(config, tp)
    assert "fc.weight" not in per
    ours = draft_weight_bytes(config, tp_size=tp, ep_size=1)
    print(f"\nLFM2-350M draft tp {tp}: {ours:,} bytes per rank = SGLang's")
    assert ours == theirs
