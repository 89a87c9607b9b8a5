"""The evaluation an embedded request is, as the API would store it (api/submission's
``_evaluation``): never stored here, it gives the scheduler's RunInference message and
the aggregator's ``read`` what they take from a stored one."""

from __future__ import annotations

import uuid

from services.core.manifest import ModelManifest
from services.core.request import RunRequest
from services.core.scenario import ScenarioConfig
from services.core.workload import DEFAULT_WORKLOAD
from services.preprocess.local_shard import LocalShard
from shared.db.evaluations import Evaluation, Shard


def evaluation_of(
    request: RunRequest, scenario: ScenarioConfig, manifest: ModelManifest, shard: LocalShard
) -> Evaluation:
    """No id (nothing stores it: the run's report names no evaluation); ``scenario`` is
    the request's, checked; its one shard is the one prepared in this process."""
    group = request.group or {}
    # Its folder too: the measurement resolves the manifest's relative paths there.
    folder = {"base_dir": manifest.base_dir} if manifest.base_dir else {}
    return Evaluation(
        id="",
        run_id=str(uuid.uuid4()),
        model_name=manifest.name,
        model_version=manifest.version,
        manifest=manifest.to_dict() | folder,
        framework=request.framework or manifest.framework.name,
        device=request.device or "cpu",
        scenario=scenario.model_dump(mode="json"),
        batch_size=request.batch_size,
        dataset=request.dataset,
        dataset_count=request.samples,
        seed=request.seed,
        trace_level=request.trace_level,
        constraints=dict(request.constraints),
        backend_options=dict(request.backend_options),
        threads=request.threads,
        workload=DEFAULT_WORKLOAD,
        group_id=group.get("id"),
        group_info=request.group,
        preprocess_reused=shard.reused,
        shards=[Shard(index=0, key=shard.key, sample_count=shard.samples, ready=True)],
    )
