"""The zoo registry agrees with the backends that build its models."""

from __future__ import annotations

import pytest

from services.core.architectures import architecture_problem
from services.inference.backend_interface import BackendError
from services.inference.backends.torch import architectures as torch_architectures
from services.inference.backends.torch.zoos import BENCHSTACK_ARCHITECTURES


def test_benchstack_zoo_lists_what_the_torch_backend_builds() -> None:
    assert set(BENCHSTACK_ARCHITECTURES) == set(torch_architectures._BENCHSTACK)
    for name in BENCHSTACK_ARCHITECTURES:
        assert architecture_problem(f"benchstack:{name}", "torch") is None


def test_torchvision_names_are_what_get_model_accepts() -> None:
    assert architecture_problem("torchvision:squeezenet1_1", "torch") is None
    problem = architecture_problem("torchvision:squeezenet2", "torch")
    assert problem is not None
    assert problem.startswith("source.architecture: torchvision has no model 'squeezenet2'")
    assert "squeezenet1_1" in problem


def test_the_backend_refuses_with_the_same_words() -> None:
    expected = architecture_problem("torchvision:squeezenet2", "torch")
    with pytest.raises(BackendError) as info:
        torch_architectures.build_architecture("torchvision:squeezenet2")
    assert str(info.value) == expected


@pytest.mark.parametrize(
    ("spec", "framework", "words"),
    [
        ("caffe:alexnet", "torch", "unknown zoo 'caffe'"),
        ("keras:ResNet50", "torch", "is not a torch model (the tensorflow backend builds it)"),
        ("torchvision:resnet18", "tensorflow", "accepted: 'keras:<name>', or framework.name"),
    ],
)
def test_zoo_and_framework_must_fit(spec: str, framework: str, words: str) -> None:
    problem = architecture_problem(spec, framework)
    assert problem is not None and words in problem


def test_frameworks_that_never_build_are_not_held_to_the_zoo() -> None:
    # A Triton manifest names the architecture for the record; the server holds the model.
    assert architecture_problem("torchvision:resnet18", "triton") is None
