"""Generative inference: a language model's requests under a LoadGen scenario with token
latencies (TTFT, TPOT, tokens/s, goodput), on prompts it makes itself."""

from services.core.workload import Workload
from services.workloads.generative.options import GenerativeOptions

WORKLOAD = Workload(
    name="generative",
    summary="a language model's serving under LoadGen with token latencies (TTFT, TPOT, tokens/s)",
    options=GenerativeOptions,
    needs_dataset=False,
    dataset_label="synthetic prompts",
    measure="services.workloads.generative.stack_run:measure",
    read="services.workloads.generative.outcome:read",
    save="services.workloads.generative.outcome:save",
    # Its model and peak memory are its own: a fresh child each run.
    resident=False,
    options_field="generative",
    # LoadGen's verdict is its verdict, but its figures are token figures, not the LoadGen
    # workload's report: its own fan-out figures, report section and run page say them.
    judged_by_loadgen=False,
    fan_out_figures="services.workloads.generative.summary:fan_out_figures",
    priced_rate="services.workloads.generative.summary:priced_rate",
    report_section="services.workloads.generative.report_section:report_section",
    web_view="services.workloads.generative:web/view.js",
    cli_command="services.workloads.generative.cli:register",
    graphql_options_input="services.workloads.generative.graphql_types:GenerativeInput",
    graphql_result="services.workloads.generative.graphql_types:GenerativeType",
)
