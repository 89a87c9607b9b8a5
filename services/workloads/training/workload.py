"""Training throughput on an agent: `benchstack train`'s measurement, alone or as one rank
of a data-parallel gang, on synthetic tensors."""

from services.core.workload import Workload
from services.workloads.torch_models import torch_architecture
from services.workloads.training.options import TrainingOptions

WORKLOAD = Workload(
    name="training",
    summary="training steps timed (images/s, data share, peak memory)",
    options=TrainingOptions,
    needs_dataset=False,
    dataset_label="synthetic",
    measure="services.workloads.training.stack_run:measure",
    read="services.workloads.training.outcome:read",
    save="services.workloads.training.outcome:save",
    accepts=torch_architecture("torch training"),
    # Its peak memory is the process's, and it keeps nothing loaded: a child of its own.
    resident=False,
    options_field="training",
    data_parallel=True,
    judged_by_loadgen=False,
    fan_out_figures="services.workloads.training.summary:fan_out_figures",
    report_section="services.workloads.training.report_section:report_section",
    web_view="services.workloads.training:web/view.js",
    cli_command="services.workloads.training.cli:register",
    graphql_options_input="services.workloads.training.graphql_types:TrainingInput",
    graphql_result="services.workloads.training.graphql_types:TrainingType",
)
