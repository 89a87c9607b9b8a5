"""Every size and time a submission names is bounded by a setting; each refusal is a typed
error naming the field and the limit, and nothing is stored or published."""

from __future__ import annotations

from typing import Any

import pytest

from services.core.catalogue import CATALOGUE_DIR
from tests.services.api.conftest import Api
from tests.services.api.test_api_input_confinement import (
    assert_nothing_enqueued,
    submit,
)

REGISTER = """
mutation($manifest: String!) {
  registerModel(manifest: $manifest) {
    __typename
    ... on UserError { message field }
    ... on InvalidManifest { problems }
  }
}"""


def resnet18(**replace: str) -> str:
    """resnet18's manifest under another name, with text replaced (old=new pairs)."""
    text = (CATALOGUE_DIR / "resnet18.yaml").read_text().replace("name: resnet18", "name: probe")
    for old, new in replace.items():
        assert old.replace("_", " ") in text, old
        text = text.replace(old.replace("_", " "), new)
    return text


def inline(text: str) -> dict[str, Any]:
    return {"model": None, "manifest": text}


@pytest.mark.parametrize(
    ("manifest", "problem", "limit"),
    [
        (
            resnet18(**{"shape: [3, 224, 224]": "shape: [3, 100000, 224]"}),
            "inputs[0].shape",
            "4096",
        ),
        (
            resnet18(**{"shape: [3, 224, 224]": "shape: [4000, 4000, 4]"}),
            "inputs[0].shape",
            "16777216",
        ),
        # Under the manifest's own bound (65,535 a side), over the deployment's.
        (resnet18(**{"{size: 256,": "{size: 50000,"}), "inputs[0].steps[1].resize.size", "4096"),
        (
            resnet18(**{"{size: 224}": "{size: [224, 5000]}"}),
            "inputs[0].steps[2].center_crop.size",
            "4096",
        ),
    ],
)
def test_manifest_sizes_are_bounded(api: Api, manifest: str, problem: str, limit: str) -> None:
    api.add_agent()
    token = api.token("alice")
    result = submit(api, token, **inline(manifest))
    assert result["__typename"] == "InvalidManifest", result
    assert any(p.startswith(problem + ":") and limit in p for p in result["problems"]), result
    registered = api.data(token, REGISTER, {"manifest": manifest})["registerModel"]
    assert registered["__typename"] == "InvalidManifest", registered
    assert_nothing_enqueued(api, token)


def test_manifest_limits_are_settings(api: Api) -> None:
    api.add_agent()
    token = api.token("alice")
    text = resnet18()
    assert submit(api, token, **inline(text))["__typename"] == "Evaluation"
    api.settings.max_image_side = 200
    result = submit(api, token, **inline(text))
    assert "inputs[0].shape: 224 is above the limit of 200" in result["problems"][0]
    assert "BENCHSTACK_MAX_IMAGE_SIDE" in result["problems"][0]
    api.settings.max_manifest_chars = 100
    result = submit(api, token, **inline(text))
    assert result["problems"] == [f"(manifest): longer than 100 characters (got {len(text)})"]


def test_billion_laughs_is_refused_in_milliseconds(api: Api) -> None:
    api.add_agent()
    token = api.token("alice")
    laughs = resnet18(**{"licence: BSD-3-Clause": "licence: BSD-3-Clause, lol: &a [x, x]"})
    laughs += "".join(f"x{i}: &a{i} [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" for i in range(8))
    result = submit(api, token, **inline(laughs))
    assert result["__typename"] == "InvalidManifest", result
    assert "anchor '&a' is not accepted" in result["problems"][0]
    assert_nothing_enqueued(api, token)


@pytest.mark.parametrize(
    ("options", "field", "limit"),
    [
        (
            {"service_time_ms": 10_000.5},
            "backendOptions.service_time_ms",
            "BENCHSTACK_MAX_SERVICE_TIME_MS",
        ),
        ({"service_time_ms": -1}, "backendOptions.service_time_ms", "from 0 to 10000"),
        ({"service_time_ms": "slow"}, "backendOptions.service_time_ms", "a number"),
        ({"num_outputs": 100_001}, "backendOptions.num_outputs", "BENCHSTACK_MAX_NULL_OUTPUTS"),
        ({"num_outputs": 0}, "backendOptions.num_outputs", "from 1 to 100000"),
        ({"num_outputs": 2.5}, "backendOptions.num_outputs", "an integer"),
        ({"fail_every": -1}, "backendOptions.fail_every", "from 0 to"),
        ({"fail_every": True}, "backendOptions.fail_every", "an integer"),
    ],
)
def test_null_backend_options_are_bounded(
    api: Api, options: dict[str, Any], field: str, limit: str
) -> None:
    api.add_agent()
    token = api.token("alice")
    result = submit(api, token, backendOptions=options)
    assert (result["__typename"], result["field"]) == ("InvalidInput", field), result
    assert limit in result["message"], result
    assert_nothing_enqueued(api, token)


@pytest.mark.parametrize(
    ("settings", "field", "limit"),
    [
        ({"minQueryCount": 1_000_001}, "settings.min_query_count", "BENCHSTACK_MAX_QUERY_COUNT"),
        ({"maxQueryCount": 2_000_000}, "settings.max_query_count", "1 to 1e+06"),
        (
            {"samplesPerQuery": 5000},
            "settings.samples_per_query",
            "BENCHSTACK_MAX_SAMPLES_PER_QUERY",
        ),
        ({"targetQps": 2e6}, "settings.target_qps", "BENCHSTACK_MAX_TARGET_QPS"),
        ({"targetLatencyMs": 4e6}, "settings.target_latency_ms", "BENCHSTACK_MAX_RUN_SECONDS"),
        ({"expectedLatencyMs": 4e6}, "settings.expected_latency_ms", "3.6e+06"),
        (
            {"performanceSampleCount": 100_001},
            "settings.performance_sample_count",
            "BENCHSTACK_MAX_SAMPLES",
        ),
        ({"qslRngSeed": -1}, "settings.qsl_rng_seed", "0 to 1.84467e+19"),
        ({"scheduleRngSeed": 2**64}, "settings.schedule_rng_seed", "0 to"),
    ],
)
def test_scenario_settings_are_bounded(
    api: Api, settings: dict[str, Any], field: str, limit: str
) -> None:
    api.add_agent()
    token = api.token("alice")
    result = submit(api, token, settings={"minDurationS": 0.3, **settings})
    assert (result["__typename"], result["field"]) == ("InvalidScenarioSettings", field), result
    assert limit in result["message"], result
    assert_nothing_enqueued(api, token)


def test_bounds_at_their_limit_are_accepted(api: Api) -> None:
    api.add_agent()
    token = api.token("alice")
    result = submit(
        api,
        token,
        settings={"minDurationS": 0.3, "minQueryCount": 1_000_000, "samplesPerQuery": 4096},
        backendOptions={"service_time_ms": 10_000, "num_outputs": 100_000, "fail_every": 0},
        constraints={"require": ["null"] * 32},
    )
    assert result["__typename"] == "Evaluation", result


@pytest.mark.parametrize(
    ("constraints", "field", "limit"),
    [
        ({"require": ["null"] * 33}, "constraints.require", "at most 32 terms"),
        ({"require": ["null", "host=" + "h" * 200]}, "constraints.require[1]", "at most 200"),
        ({"hostname": "h" * 300}, "constraints.require[0]", "at most 200"),
        ({"frameworkVersion": ">=" + "1" * 300}, "constraints.frameworkVersion", "at most 200"),
    ],
)
def test_constraint_terms_are_bounded(
    api: Api, constraints: dict[str, Any], field: str, limit: str
) -> None:
    api.add_agent()
    token = api.token("alice")
    result = submit(api, token, constraints=constraints)
    assert (result["__typename"], result["field"]) == ("InvalidInput", field), result
    assert limit in result["message"], result
    assert_nothing_enqueued(api, token)


def test_an_architecture_from_no_known_zoo_is_refused_at_registration(api: Api) -> None:
    token = api.token("alice")
    text = resnet18(**{"'torchvision:resnet18'": "'os:system'"})
    registered = api.data(token, REGISTER, {"manifest": text})["registerModel"]
    assert registered["__typename"] == "InvalidManifest", registered
    assert any("unknown zoo 'os'" in p for p in registered["problems"]), registered
    assert_nothing_enqueued(api, token)
