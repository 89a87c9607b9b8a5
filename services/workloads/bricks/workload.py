"""DLBricks on an agent: the model cut into unique layer sequences, those this system has
not measured yet measured through LoadGen, the model's latency constructed from them."""

from services.core.workload import Workload
from services.workloads.bricks.options import BrickOptions
from services.workloads.torch_models import torch_architecture

WORKLOAD = Workload(
    name="bricks",
    summary="the model's latency constructed from its measured bricks (DLBricks)",
    options=BrickOptions,
    needs_dataset=False,
    dataset_label="bricks",
    measure="services.workloads.bricks.stack_run:measure",
    read="services.workloads.bricks.outcome:read",
    save="services.workloads.bricks.outcome:save",
    accepts=torch_architecture("bricks are cut from its torch.fx trace"),
    options_field="bricks",
    report_section="services.workloads.bricks.report_section:report_section",
    cli_command="services.workloads.bricks.cli:register",
    graphql_options_input="services.workloads.bricks.graphql_types:BricksInput",
    graphql_queries="services.workloads.bricks.graphql_queries:queries",
)
