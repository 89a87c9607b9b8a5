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
    # LoadGen's verdict is its verdict, but its figures are token figures, not the LoadGen
    # workload's report: a fan-out compares it by name until it declares its own figures.
    judged_by_loadgen=False,
    cli_command="services.workloads.generative.cli:register",
)
