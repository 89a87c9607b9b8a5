"""`benchstack generative [MODEL]`: a language model's serving judged by LoadGen with token
latencies (services/workloads/generative), in this process."""

from __future__ import annotations

import json
import sys

import typer

from services.core.workload import CommandKit
from services.workloads.generative.campaign_cli import register as register_campaigns
from services.workloads.generative.cli_options import (
    API,
    AS_JSON,
    BATCH_SIZE,
    BOUNDS,
    CONVERSATIONS_FILE,
    DEVICE,
    DURATION,
    ENGINE,
    INPUT_TOKENS,
    MIN_QUERIES,
    MODEL,
    OUTPUT_TOKENS,
    PERCENTILE,
    PROMPTS,
    PROMPTS_FILE,
    SCENARIO,
    SEED,
    SERVED_MODEL,
    TARGET_QPS,
    THREADS,
    TIMEOUT,
    TPOT_MS,
    TTFT_MS,
    URL,
    WORKERS,
)


def generative(
    ctx: typer.Context,
    model: str = MODEL,
    engine: str = ENGINE,
    url: str | None = URL,
    api: str = API,
    served_model: str | None = SERVED_MODEL,
    timeout: float = TIMEOUT,
    scenario: str = SCENARIO,
    prompts: int = PROMPTS,
    input_tokens: str = INPUT_TOKENS,
    output_tokens: str = OUTPUT_TOKENS,
    prompts_file: str | None = PROMPTS_FILE,
    conversations_file: str | None = CONVERSATIONS_FILE,
    duration: float = DURATION,
    min_queries: int | None = MIN_QUERIES,
    target_qps: float | None = TARGET_QPS,
    bounds: str | None = BOUNDS,
    ttft_ms: float | None = TTFT_MS,
    tpot_ms: float | None = TPOT_MS,
    percentile: float | None = PERCENTILE,
    batch_size: int = BATCH_SIZE,
    workers: int = WORKERS,
    threads: int = THREADS,
    seed: int = SEED,
    device: str = DEVICE,
    as_json: bool = AS_JSON,
) -> None:
    """Benchmark a language model: TTFT, TPOT, tokens/s with intervals, LoadGen's verdict."""
    # The workload brings torch and transformers: imported when the command runs.
    from services.workloads.generative.options import GenerativeOptions
    from services.workloads.generative.render import print_generative
    from services.workloads.generative.run import measure_generation

    kit = CommandKit.of(ctx)
    with kit.user_errors():
        options = GenerativeOptions(
            model=model,
            engine=engine,  # type: ignore[arg-type]
            url=url,
            api=api,  # type: ignore[arg-type]
            served_model=served_model,
            timeout_s=timeout,
            scenario=scenario,  # type: ignore[arg-type]
            prompts=prompts,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            prompts_file=prompts_file,
            conversations_file=conversations_file,
            seed=seed,
            batch_size=batch_size,
            workers=workers,
            min_duration_s=duration,
            min_query_count=min_queries,
            target_qps=target_qps,
            bounds=bounds,
            ttft_ms=ttft_ms,
            tpot_ms=tpot_ms,
            percentile=percentile,
            device=device,
        )
        document = measure_generation(options, threads=threads)
    if as_json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        print_generative(kit.output_console(), document)
    if document["requests"]["failed"]:
        raise typer.Exit(code=1)


def register(root: typer.Typer) -> None:
    root.command("generative")(generative)
    register_campaigns(root)
