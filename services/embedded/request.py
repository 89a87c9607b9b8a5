"""What only the embedded launcher is told beside the run request (services/core/request.py
``RunRequest``): its local choices (``Local``), and the hooks a front end follows while a
run goes (``Progress``); and the request checked, as both launchers check it (``checked``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from services.core.manifest import ModelManifest
from services.core.request import RequestProblem, RunRequest, request_problem, scenario_of
from services.core.scenario import ScenarioConfig
from services.inference.loadgen.progress import ProgressCallback
from services.inference.profiling.passes import DEFAULT_ITERATIONS
from shared.settings import Settings


@dataclass(frozen=True)
class Local:
    """The run's local choices, which a stack's agent makes for itself."""

    # SUT worker threads for Offline and Server.
    workers: int = 1
    # Iterations of each profiling pass (above trace level NONE).
    profile_iterations: int = DEFAULT_ITERATIONS
    # The manifest itself, instead of resolving ``RunRequest.model`` (a rerun uses the
    # stored one, not today's catalogue).
    manifest: ModelManifest | None = None


@dataclass
class Progress:
    """Hooks a front end (the CLI's progress bars) can follow; all optional."""

    on_stage: Callable[[str], None] = lambda stage: None
    on_preprocess_start: Callable[[int], None] = lambda total: None
    on_preprocess_advance: Callable[[int], None] = lambda n: None
    on_run_start: Callable[[float], None] = lambda expected_s: None
    # Each LoadGen phase (warming up, calibrating, measuring), from a thread of its own;
    # None: no one watches and no polling thread runs.
    on_loadgen: ProgressCallback | None = None


def checked(
    request: RunRequest, settings: Settings, spell: Callable[[str], str] = str
) -> ScenarioConfig:
    """The request's scenario, once its fields pass the checks the stack makes of a
    submission's; ValueError naming the field (spelled by ``spell``) otherwise."""
    problem: RequestProblem | None = request_problem(request, max_samples=settings.max_samples)
    scenario = scenario_of(request)
    if problem is None and isinstance(scenario, RequestProblem):
        problem = scenario
    if problem is not None:
        raise ValueError(problem.said(spell))
    assert isinstance(scenario, ScenarioConfig)
    return scenario
