"""Bounded YAML: aliases, anchors, deep nesting and huge documents are refused before PyYAML
builds anything, in milliseconds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from services.core.manifest import ManifestError, parse_manifest_text
from shared.bounded_yaml import YamlLimits, YamlRefused, load_bounded


def billion_laughs(levels: int = 9) -> str:
    """Each level names the one before nine times: 9**levels strings from ~1 KB of text."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        refs = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


def test_plain_yaml_loads_as_pyyaml_would() -> None:
    text = Path("services/core/catalogue/resnet18.yaml").read_text()
    assert load_bounded(text, YamlLimits()) == yaml.safe_load(text)


def test_billion_laughs_is_refused_without_expanding() -> None:
    text = billion_laughs()
    assert len(text) < 1500
    start = time.perf_counter()
    with pytest.raises(YamlRefused, match=r"line 1, column 5: anchor '&l0' is not accepted"):
        load_bounded(text, YamlLimits())
    assert time.perf_counter() - start < 0.05


def test_an_alias_is_refused_on_its_own() -> None:
    # Real documents hit the anchor first; the parser reports aliases before resolving them.
    with pytest.raises(YamlRefused, match=r"alias '\*nowhere' is not accepted"):
        load_bounded("a: *nowhere\n", YamlLimits())


def test_merge_keys_are_aliases_and_refused() -> None:
    text = "base: &b {size: 224}\nresize:\n  <<: *b\n"
    with pytest.raises(YamlRefused, match="anchor '&b'"):
        load_bounded(text, YamlLimits())


@pytest.mark.parametrize(
    "text", ["[" * 20_000 + "]" * 20_000, "{a: " * 20_000 + "1" + "}" * 20_000]
)
def test_deep_nesting_is_refused_not_a_recursion_error(text: str) -> None:
    with pytest.raises(YamlRefused, match="nested deeper than 32 levels"):
        load_bounded(text, YamlLimits())


def test_depth_at_the_limit_loads() -> None:
    assert load_bounded("[" * 4 + "]" * 4, YamlLimits(max_depth=4)) == [[[[]]]]
    with pytest.raises(YamlRefused, match="deeper than 3"):
        load_bounded("[" * 4 + "]" * 4, YamlLimits(max_depth=3))


def test_length_and_node_count_are_bounded() -> None:
    with pytest.raises(YamlRefused, match=r"longer than 10 characters \(got 11\)"):
        load_bounded("a: 12345678", YamlLimits(max_chars=10))
    assert load_bounded("[1, 2, 3]", YamlLimits(max_nodes=4)) == [1, 2, 3]
    with pytest.raises(YamlRefused, match="more than 3 values"):
        load_bounded("[1, 2, 3]", YamlLimits(max_nodes=3))


def test_nul_escapes_and_giant_integers_are_refused() -> None:
    with pytest.raises(YamlRefused, match=r"line 1, column 4: NUL characters"):
        load_bounded('a: "x\\0y"\n', YamlLimits())
    with pytest.raises(YamlRefused, match="4300 digits"):
        load_bounded("a: " + "9" * 5000, YamlLimits())


def test_manifest_loading_names_the_refusal() -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest_text(billion_laughs(), source="manifest")
    (problem,) = info.value.problems
    assert problem.startswith("(manifest): line 1") and "anchor" in problem
    with pytest.raises(ManifestError, match="nested deeper than 5 levels"):
        parse_manifest_text("[" * 6 + "]" * 6, limits=YamlLimits(max_depth=5))


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("name: a\nversion: '1'\nname: b\n", "line 3, column 1: key 'name'"),
        ("a:\n  x: 1\n  y: [1, {z: 2}]\n  x: 2\n", "line 4, column 3: key 'x'"),
        ("steps: [{resize: {size: 1, size: 2}}]\n", "line 1, column 28: key 'size'"),
        ("a: 1\n'a': 2\n", "line 2, column 1: key 'a'"),
    ],
)
def test_a_duplicate_key_is_refused_naming_it_and_its_line(text: str, where: str) -> None:
    # PyYAML itself keeps the last value silently.
    assert isinstance(yaml.safe_load(text), dict)
    with pytest.raises(YamlRefused) as info:
        load_bounded(text, YamlLimits())
    assert str(info.value).startswith(where), info.value
    assert "written twice in one mapping" in str(info.value)


def test_the_same_key_in_different_mappings_is_kept() -> None:
    text = "a: {x: 1}\nb: {x: 2}\nc: [{x: 3}, {x: 4}]\nx: 5\n"
    assert load_bounded(text, YamlLimits()) == yaml.safe_load(text)


def test_a_manifest_with_a_duplicate_key_names_it() -> None:
    text = Path("services/core/catalogue/resnet18.yaml").read_text() + "framework: {name: onnx}\n"
    with pytest.raises(ManifestError) as info:
        parse_manifest_text(text)
    assert "key 'framework' is written twice" in info.value.problems[0]
