"""A DLBricks evaluation on an agent (the stack's side of ``bricks generate/run/construct``).

In the measurement child: cut the evaluation's model into bricks here (a temporary
suite), read which bricks this system has measured already (the database, any agent's
and any model's), measure only the others with the same harness as ``bricks run``
(LoadGen SingleStream, many bricks per run, the empty brick's floor beside them),
construct the model's latency, and write everything to ``bricks.json`` under the
attempt's prefix. The aggregator, the only writer of results, stores the new timings,
the floor and the recipe, and the run with its constructed figures.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from services.core.manifest import parse_manifest
from services.core.workload import AgentRun
from services.workloads.agent_run import measure_holding_host
from services.workloads.bricks.construct import construct
from services.workloads.bricks.generate import generate_suite
from services.workloads.bricks.measure import MeasureSettings, Timing, system_key
from services.workloads.bricks.memory import measure_memory_read
from services.workloads.bricks.models import manifest_model_input
from services.workloads.bricks.options import BrickOptions
from services.workloads.bricks.results import SystemResults
from services.workloads.bricks.run import measure_chunks, median_floor
from services.workloads.bricks.store import system_results
from services.workloads.bricks.suite import list_bricks, read_recipe
from shared.environment import capture_environment


def measure(run: AgentRun) -> dict[str, str]:
    """The measurement child's entry: bricks.json under the run's prefix, the host held."""
    return measure_holding_host(run, measure_bricks)


def measure_bricks(run: AgentRun, threads: int) -> dict[str, Any]:
    """Generate, measure what is missing on this system, construct; returns the document
    written to ``bricks.json`` (the caller holds the host while this runs)."""
    message = run.message
    options = BrickOptions.model_validate(message.workload_options)
    manifest = parse_manifest(message.manifest)
    model = manifest_model_input(
        manifest, batch_size=message.batch_size, image_size=options.image_size
    )
    settings = MeasureSettings(
        min_queries=options.queries, min_duration_s=options.min_duration_s, threads=threads
    )
    system = system_key(threads)
    with tempfile.TemporaryDirectory(prefix="benchstack-bricks-") as folder:
        suite = Path(folder)
        generated = generate_suite([model], options.granularity, suite)
        recipe = read_recipe(suite, model.name)
        with run.resources.db() as session:
            known = system_results(session, system)
        wanted = list_bricks(suite)
        missing = [s for s in wanted if s not in known.bricks]
        measured: dict[str, dict[str, Any]] = {}
        floors: list[Timing] = []
        # Once per system, as `bricks run` does: the cold-weights construction's cost.
        memory = known.memory or measure_memory_read()
        # The floor is measured every run, beside whatever bricks are missing.
        for floor_now, timings in measure_chunks(
            suite, missing, settings, "torch", floor_alone=True
        ):
            floors.append(floor_now)
            measured.update({s: t.to_dict() for s, t in timings.items()})
    floor = median_floor(floors)
    results = SystemResults(system, {**known.bricks, **measured}, floor, memory=memory)
    construction = construct(recipe, results)
    return {
        "kind": "bricks",
        "system": system,
        "model": model.name,
        "options": options.model_dump(mode="json"),
        "batch_size": message.batch_size,
        "generated": asdict(generated),
        "recipe": recipe,
        "measured": measured,
        "reused": sorted(s for s in wanted if s in known.bricks),
        "floor": floor,
        "memory": memory,
        "constructed": asdict(construction),
        "measuring_s": sum(t["seconds"] for t in measured.values())
        + sum(f.seconds for f in floors),
        "environment": capture_environment(),
    }
