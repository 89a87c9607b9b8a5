"""`benchstack generative [MODEL]`: a language model's serving judged by LoadGen with token
latencies (services/workloads/generative), in this process."""

from __future__ import annotations

import json
import sys

import typer

from services.core.workload import CommandKit

MODEL = typer.Argument(
    "tiny-llama",
    help="tiny-llama (random weights) or a save_pretrained dir (openai: its tokenizer).",
)
ENGINE = typer.Option("transformers", help="transformers (in this process) or openai (a server).")
URL = typer.Option(None, help="openai: the server, e.g. http://127.0.0.1:8000.")
API = typer.Option("completions", help="openai: completions or chat.")
SERVED_MODEL = typer.Option(None, help="openai: the model's name on the server (default: MODEL).")
TIMEOUT = typer.Option(60.0, "--timeout", help="openai: seconds a read may wait.")
SCENARIO = typer.Option("single-stream", "--scenario", "-s", help="single-stream|server|offline")
PROMPTS = typer.Option(16, help="Synthetic prompts LoadGen draws from.")
INPUT_TOKENS = typer.Option("32", help="Prompt tokens: N, uniform:LOW:HIGH or normal:MEAN:STD.")
OUTPUT_TOKENS = typer.Option("16", help="Output tokens, as --input-tokens.")
PROMPTS_FILE = typer.Option(None, help='JSONL: {"prompt": ..., "output_tokens": N} a line.')
CONVERSATIONS_FILE = typer.Option(None, help="ShareGPT-shaped JSON: first exchanges.")
DURATION = typer.Option(2.0, "--duration", help="LoadGen min duration, seconds.")
MIN_QUERIES = typer.Option(None, help="LoadGen min query count (single-stream: 64).")
TARGET_QPS = typer.Option(None, help="Server arrival rate, requests/s.")
BOUNDS = typer.Option(None, help="Server TTFT/TPOT preset, e.g. llama3.1-8b-interactive.")
TTFT_MS = typer.Option(None, help="Server TTFT bound, ms.")
TPOT_MS = typer.Option(None, help="Server TPOT bound, ms.")
PERCENTILE = typer.Option(None, help="Percentile the bounds apply to (MLPerf: 99).")
BATCH_SIZE = typer.Option(1, "--batch-size", "-b", help="Requests per engine call.")
WORKERS = typer.Option(1, help="SUT threads issuing engine calls.")
THREADS = typer.Option(0, help="torch threads (0: torch's default).")
SEED = typer.Option(0, help="Seed of the prompts and their lengths.")
DEVICE = typer.Option("cpu", help="cpu or cuda[:N].")
AS_JSON = typer.Option(False, "--json", help="The run's document as JSON.")


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
