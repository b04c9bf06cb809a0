"""Node labels -> the device they name (service/solver/gpu_labels.py): every catalog part's
own labels name it back; a GFD product the catalog lacks becomes a described device; missing
or malformed labels are errors naming `gpu_labels`."""

from __future__ import annotations

import pytest

from mambasizer.schemas.request import DeviceDescription
from mambasizer.service.planner import plan
from mambasizer.service.solver import gpu_labels, gpus
from mambasizer.service.solver.errors import PlanInputError


@pytest.mark.parametrize("name", sorted(gpus.CATALOG))
def test_each_parts_labels_name_it(name):
    gpu = gpus.CATALOG[name]
    labels = gpu_labels.labels_of(gpu)
    # Parts sharing a printed name (none today) would be ambiguous: the first is taken.
    assert gpu_labels.budget_gpu(labels) == name
    assert gpu_labels.budget_gpu(gpu_labels.parse(",".join(f"{k}={v}" for k, v in labels.items()))) == name


def test_gfd_spelling_of_a_printed_name_with_dashes():
    assert gpu_labels.budget_gpu({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}) == "a100-80gb"
    assert gpu_labels.budget_gpu(gpu_labels.parse("nvidia.com/gpu.product: NVIDIA-GB10\nnvidia.com/gpu.compute.major: 12")) == "gb10"


def test_an_uncatalogued_gfd_product_is_described_by_its_labels():
    labels = {"nvidia.com/gpu.product": "NVIDIA-RTX-PRO-4000-Blackwell", "nvidia.com/gpu.memory": "24467",
              "nvidia.com/gpu.compute.major": "12", "nvidia.com/gpu.compute.minor": "0"}
    desc = gpu_labels.budget_gpu(labels)
    assert desc == {"product": "NVIDIA RTX PRO 4000 Blackwell", "memory_mib": 24467, "compute_capability": "12.0",
                    "runtime": "cuda", "integrated": False}
    assert isinstance(desc, dict)
    gpu = gpus.lookup(DeviceDescription(**desc))
    assert gpu.device_class == "sm120" and gpu.memory_mib == 24467
    p = plan({"model": {"preset": "qwen3.5-27b"}, "server_args": {"tp_size": 2}, "budget": {"gpu": desc}})
    assert p.device is not None and p.device.name == "described:NVIDIA RTX PRO 4000 Blackwell" and not p.device.catalog
    assert p.resolved.attention_backend == "flashinfer" and p.gpu_memory_mib == 24467


@pytest.mark.parametrize("labels, field, says", [
    ({}, "gpu_labels", "names no GPU"),
    ({"nvidia.com/gpu.product": "NVIDIA-Foo"}, "gpu_labels", "needs nvidia.com/gpu.memory, nvidia.com/gpu.compute.major"),
    ({"nvidia.com/gpu.product": "NVIDIA-Foo", "nvidia.com/gpu.memory": "x", "nvidia.com/gpu.compute.major": "8",
      "nvidia.com/gpu.compute.minor": "9"}, "gpu_labels", "must be integers"),
    ({"amd.com/gpu.product-name": "AMD_Instinct_MI250X"}, "gpu_labels.amd.com/gpu.product-name", "no catalog AMD part"),
])
def test_bad_labels_name_the_field(labels, field, says):
    with pytest.raises(PlanInputError) as info:
        gpu_labels.budget_gpu(labels)
    assert info.value.field == field and says in info.value.message


def test_parse_refuses_a_word_without_a_value():
    with pytest.raises(PlanInputError) as info:
        gpu_labels.parse("nvidia.com/gpu.product")
    assert info.value.field == "gpu_labels"
