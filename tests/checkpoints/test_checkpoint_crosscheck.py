"""The inventory cross-check reports a difference that loading the same tensors does not
explain, rather than hiding it: an FP8 config over BF16 files (a quant config that does not
describe the checkpoint) is flagged with its size; the plan keeps the model classes' figure."""

from __future__ import annotations

import ckpt_fixtures as F
from mambasizer.service.checkpoints import Inventory, Tensor, cross_check


def _inventory(scheme: str) -> Inventory:
    return Inventory(tuple(Tensor(n, d, s, F.nbytes(d, s)) for n, d, s in F.tensors(scheme)))


def test_matching_files_agree_and_the_mtp_head_is_set_apart():
    check = cross_check(F.config("fp8"), _inventory("fp8"))
    assert check["agrees"] is True and abs(check["difference_fraction"]) < 0.001
    assert check["mtp_bytes"] > 0 and check["built_at_load_bytes"] > 0


def test_a_quant_config_that_does_not_describe_the_files_is_reported():
    check = cross_check(F.config("fp8"), _inventory("bf16-mtp"))
    assert check["agrees"] is False
    assert check["difference_fraction"] < -0.4  # the files hold ~1.8x what an FP8 model allocates
    assert "does not explain" in check["note"] and "the plan keeps the model classes' figure" in check["note"]
