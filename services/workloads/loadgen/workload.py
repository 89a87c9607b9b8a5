"""A LoadGen run on the evaluation's dataset, preprocessed into shards first."""

from services.core.workload import DEFAULT_WORKLOAD, Workload

WORKLOAD = Workload(
    name=DEFAULT_WORKLOAD,
    summary="the model under an MLPerf scenario through LoadGen, on a dataset's shards",
    options=None,
    needs_dataset=True,
    dataset_label="",
    measure="services.workloads.loadgen.measure:measure",
    read="services.workloads.loadgen.outcome:read",
    save="services.workloads.loadgen.outcome:save",
    runs_scenario=True,
)
