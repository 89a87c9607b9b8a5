"""The constraint language and routing by it: pure, no broker, no database."""

from __future__ import annotations

import pytest

from services.core.constraints import (
    AgentView,
    ConstraintError,
    Requirement,
    device_named,
    framework_named,
    parse_term,
    parse_terms,
    requirement,
    stored_terms,
)
from services.scheduler.planner import AgentChoice, UnmetConstraint, match_agent
from shared.queues import direct_queue

FRAMEWORKS = ["null", "torch", "onnxruntime", "tensorflow", "triton", "tensorrt"]
GIB = 2**30


def agent(
    id: str,
    hostname: str = "cpu-box",
    *,
    framework: str = "onnxruntime",
    version: str = "1.31.1",
    device: str = "cpu",
    arch: str = "x86_64",
    gpus: tuple[str, ...] = (),
    memory_gib: int = 16,
    cores: int = 8,
    threads: int = 0,
) -> AgentView:
    queue = f"inference.{framework}.{device}"
    return AgentView(
        id=id,
        hostname=hostname,
        queue=queue,
        framework=framework,
        framework_version=version,
        device=device,
        arch=arch,
        gpus=gpus,
        memory_bytes=memory_gib * GIB,
        logical_cores=cores,
        threads=threads,
        direct_queue=direct_queue(queue, hostname, int(id.rsplit("-", 1)[-1])),
    )


FLEET = [
    agent("cpu-1", threads=1),
    agent("cpu-2", threads=2),
    agent("gpu-3", "gpu-box", gpus=("NVIDIA A100-SXM4-80GB",), memory_gib=256, cores=64),
    agent("arm-4", "arm-box", arch="aarch64", version="1.19.0"),
]


def need(*terms: str, framework: str = "onnxruntime", device: str = "cpu") -> Requirement:
    return requirement(framework=framework, device=device, texts=terms, frameworks=FRAMEWORKS)


def matched(choice: AgentChoice | UnmetConstraint) -> list[str]:
    assert isinstance(choice, AgentChoice), choice
    return sorted(a.id for a in choice.agents)


@pytest.mark.parametrize(
    ("terms", "ids"),
    [
        (["onnxruntime>=1.20", "arch=x86_64", "gpu"], ["gpu-3"]),
        (["onnxruntime>=1.20"], ["cpu-1", "cpu-2", "gpu-3"]),
        (["onnxruntime=1.19.0"], ["arm-4"]),
        (["arch=arm64"], ["arm-4"]),  # arm64 is read as aarch64
        (["!gpu"], ["arm-4", "cpu-1", "cpu-2"]),
        (["gpu=a100"], ["gpu-3"]),
        (["memory>=64GiB"], ["gpu-3"]),
        (["memory<20GB"], ["arm-4", "cpu-1", "cpu-2"]),
        (["threads=2"], ["cpu-2"]),
        (["threads>=1"], ["cpu-1", "cpu-2"]),
        (["cores>8"], ["gpu-3"]),
        (["host=cpu-box", "threads!=2"], ["cpu-1"]),
        (["hostname!=cpu-box", "arch=x86_64"], ["gpu-3"]),
        (["agent=arm-4"], ["arm-4"]),
        (["ONNXRuntime", "GPU"], ["gpu-3"]),
    ],
)
def test_terms_select_agents(terms: list[str], ids: list[str]) -> None:
    assert matched(match_agent(FLEET, need(*terms))) == ids


@pytest.mark.parametrize(
    ("term", "constraint", "quoted"),
    [
        ("gpu=H100", "gpu", "cpu-box: no GPU, gpu-box: NVIDIA A100-SXM4-80GB"),
        ("arch=riscv64", "arch", "x86_64"),
        ("memory>=1TiB", "memory", "256.0 GiB"),
        ("threads=4", "threads", "0, 1, 2"),
        ("onnxruntime<1.0", "frameworkVersion", "onnxruntime 1.19.0, onnxruntime 1.31.1"),
        ("host=nowhere", "hostname", "arm-box, cpu-box, gpu-box"),
        ("agent=gone-9", "agent", "cpu-1"),
    ],
)
def test_an_unmet_term_is_named_with_what_agents_have(
    term: str, constraint: str, quoted: str
) -> None:
    result = match_agent(FLEET, need(term))
    assert isinstance(result, UnmetConstraint)
    assert result.constraint == constraint
    assert result.message.startswith(f"{constraint}: ")
    assert repr(term) in result.message and quoted in result.message, result.message


def test_gpu_on_machines_without_one_is_named() -> None:
    result = match_agent(FLEET[:2], need("gpu"))
    assert isinstance(result, UnmetConstraint) and result.constraint == "gpu"
    assert result.message == (
        "gpu: no live onnxruntime/cpu agent satisfies 'gpu'; "
        "those that satisfy the rest have cpu-box: no GPU"
    )


def test_the_first_unmet_term_is_the_one_named() -> None:
    result = match_agent(FLEET, need("!gpu", "arch=aarch64", "threads=2"))
    assert isinstance(result, UnmetConstraint) and result.constraint == "threads"
    # Only the agents left after the earlier terms are quoted.
    assert result.message.endswith("have 0"), result.message


def test_the_manifest_constraint_binds_its_own_framework_only() -> None:
    strict = requirement(
        framework="onnxruntime",
        device="cpu",
        texts=[],
        frameworks=FRAMEWORKS,
        manifest_framework="onnxruntime",
        manifest_version="<1.0",
        manifest_ref="old-model:1.0.0",
    )
    refused = match_agent(FLEET, strict)
    assert isinstance(refused, UnmetConstraint) and refused.constraint == "frameworkVersion"
    assert "'onnxruntime<1.0'" in refused.message
    assert "required by manifest old-model:1.0.0" in refused.message
    assert "1.31.1" in refused.message and "1.19.0" in refused.message
    # The same manifest measured on the null backend (the harness alone) is not bound.
    harness = requirement(
        framework="null",
        device="cpu",
        texts=[],
        frameworks=FRAMEWORKS,
        manifest_framework="onnxruntime",
        manifest_version="<1.0",
    )
    assert harness.terms == ()


def test_user_and_manifest_specifiers_both_hold() -> None:
    both = requirement(
        framework="onnxruntime",
        device="cpu",
        texts=["onnxruntime<1.30"],
        frameworks=FRAMEWORKS,
        manifest_framework="onnxruntime",
        manifest_version=">=1.0",
    )
    assert matched(match_agent(FLEET, both)) == ["arm-4"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("arc=x86_64", "unknown key"),
        ("torch>>2", "not a version specifier"),
        ("memory>=lots", "a size such as 16GiB"),
        ("threads=two", "a whole number"),
        ("arch>=x86_64", "arch accepts =, ==, !="),
        ("!torch", "cannot be negated"),
        ("host", "needs an operator"),
        ("!gpu=A100", "write '!gpu' or 'gpu=NAME'"),
        ("__import__('os')", "is not a term"),
        ("", "is not a term"),
    ],
)
def test_bad_terms_are_refused_with_the_reason(text: str, fragment: str) -> None:
    with pytest.raises(ConstraintError, match="constraints.require\\[3\\]") as caught:
        parse_term(text, frameworks=FRAMEWORKS, index=3)
    assert fragment in str(caught.value)
    assert caught.value.index == 3


def test_framework_and_device_named_by_terms() -> None:
    terms = parse_terms(["torch>=2", "torch<3", "device=cuda", "gpu"], frameworks=FRAMEWORKS)
    assert framework_named(terms) == "torch" and device_named(terms) == "cuda"
    with pytest.raises(ValueError, match="two frameworks"):
        framework_named(parse_terms(["torch", "onnxruntime"], frameworks=FRAMEWORKS))


def test_rows_from_before_the_language_read_as_terms() -> None:
    legacy = {"hostname": "gpu-box", "framework_version": ">=1.20"}
    assert stored_terms(legacy, "onnxruntime") == ["host=gpu-box", "onnxruntime>=1.20"]
    assert stored_terms({"require": ["gpu"]}, "torch") == ["gpu"]


def test_routing_keeps_the_shared_queue_when_every_consumer_matches() -> None:
    same = [agent("cpu-1"), agent("cpu-2", "other-box")]
    choice = match_agent(same, need("arch=x86_64"))
    assert isinstance(choice, AgentChoice) and choice.queue == "inference.onnxruntime.cpu"


def test_routing_narrows_to_a_host_then_to_one_worker() -> None:
    host = match_agent(FLEET, need("gpu"))
    assert isinstance(host, AgentChoice)
    assert host.queue == "inference.onnxruntime.cpu@gpu-box"
    # cpu-1 and cpu-2 share a host but not a thread setting: only a direct queue is exact.
    one = match_agent(FLEET, need("threads=2"))
    assert isinstance(one, AgentChoice)
    assert one.queue == "inference.onnxruntime.cpu@cpu-box/2"
