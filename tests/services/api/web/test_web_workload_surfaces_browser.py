"""A workload owns its surfaces: a throw-away folder dropped into services/workloads/ that
declares a report section, a web view, a CLI command and a GraphQL input and result type
is measured through a stack, shown by `benchstack show` and `benchstack report --csv` as
its section says, and drawn on its run page in Chromium by its own module; its command
runs from the CLI and its types are in the GraphQL schema. Nothing outside the folder is
written (git sees no other change). The stack starts after the folder is in place."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import services.workloads as workloads_package
from tests.integration.conftest import GraphQLClient, running_stack
from tests.services.api.web.conftest import watched_page
from tests.support.ephemeral import EphemeralStack
from tests.support.throwaway_workload import options_field, type_prefix, write_workload_folder
from tests.support.web import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[4]
SUMMARY = "a throw-away workload that owns its surfaces"
SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename ... on Evaluation { id } ... on UserError { message field }
  }
}
"""
RESULT = """
query($id: String!) { evaluation(id: $id) { state reason runs { id } } }
"""
TYPE = """
query($name: String!) { __type(name: $name) { kind fields { name } inputFields { name } } }
"""


def _changes_outside(folder: Path) -> set[str]:
    """What git sees changed in the checkout, less the folder itself."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    inside = folder.relative_to(REPO).as_posix()
    return {line for line in status if inside not in line}


@pytest.fixture(scope="module")
def surfaced() -> Iterator[str]:
    folder = Path(workloads_package.__path__[0]) / f"surfaced_{uuid.uuid4().hex[:8]}"
    before = _changes_outside(folder)
    folder.mkdir()
    try:
        yield write_workload_folder(folder, SUMMARY, surfaces=True)
        assert _changes_outside(folder) == before
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        workloads_package.workloads.cache_clear()


@pytest.fixture(scope="module")
def surf_stack(surfaced: str) -> Iterator[EphemeralStack]:
    yield from running_stack(EphemeralStack())


@pytest.fixture(scope="module")
def client(surf_stack: EphemeralStack) -> GraphQLClient:
    from services.api.auth import create_token
    from shared.db.session import session_scope

    with session_scope(surf_stack.database_url) as session:
        token = create_token(session, user_name="surfaces-author", label="test")
    return GraphQLClient(surf_stack.api_url, token)


def cli(stack: EphemeralStack, *args: str) -> str:
    """`benchstack ARGS` in a process of its own, on the stack's database and store (the
    local path: no API URL), from this checkout."""
    env = {**os.environ, **stack.env(), "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    env.pop("BENCHSTACK_API_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "services.cli.main", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_its_run_is_shown_by_its_section_in_the_cli_and_its_view_in_chromium(
    surf_stack: EphemeralStack, client: GraphQLClient, surfaced: str, browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    given = {"model": "resnet18", "framework": "null", "workload": surfaced}
    # Its options come in its own typed input field.
    created = client(SUBMIT, {"input": {**given, options_field(surfaced): {"repeats": 3}}})
    created = created["submitEvaluation"]
    assert created["__typename"] == "Evaluation", created
    evaluation = client.until_final(RESULT, created["id"], timeout_s=120)
    assert evaluation["state"] == "SUCCEEDED", evaluation
    run_id = evaluation["runs"][0]["id"]

    # GraphQL serves its outcome as Run's field of its name, in its own result type.
    # named as GraphQL camel-cases it, as its options field is.
    field = options_field(surfaced)
    asked = f"query($id: String!) {{ evaluation(id: $id) {{ runs {{ {field} {{ echoed }} }} }} }}"
    outcome = client(asked, {"id": created["id"]})
    assert outcome["evaluation"]["runs"] == [{field: {"echoed": 3}}], outcome

    # The CLI's table and the CSV are its section's.
    shown = cli(surf_stack, "show", run_id)
    assert f"echoes of {surfaced}" in shown and "3 times" in shown, shown
    table = tmp_path / "runs.csv"
    cli(surf_stack, "report", run_id, "--csv", str(table))
    with table.open(newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row[f"{surfaced}.echoed"] == "3", row

    # The run page draws its section from the folder's module, not LoadGen's cards.
    for page in watched_page(browser, surf_stack.api_url):
        sign_in(page, str(client.token))
        page.goto(f"/#/evaluations/{created['id']}")
        section = page.locator(f'[data-workload-section="{surfaced}"]')
        expect(section.locator("#echo-title")).to_have_text(f"Echoes of {surfaced}")
        expect(section.locator("[data-echoed]")).to_have_text("echoed 3")
        expect(page.locator("#headline-title")).to_have_count(0)


def test_its_cli_command_and_graphql_types_are_there(
    surf_stack: EphemeralStack, client: GraphQLClient, surfaced: str
) -> None:
    assert cli(surf_stack, surfaced, "say", "--repeats", "2").strip() == "echo echo"
    prefix = type_prefix(surfaced)
    options = client(TYPE, {"name": f"{prefix}Options"})["__type"]
    assert options["kind"] == "INPUT_OBJECT", options
    assert [f["name"] for f in options["inputFields"]] == ["repeats"]
    result = client(TYPE, {"name": f"{prefix}Result"})["__type"]
    assert result["kind"] == "OBJECT" and [f["name"] for f in result["fields"]] == ["echoed"]
