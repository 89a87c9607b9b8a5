"""One generative measurement: load the engine, make the prompts, run LoadGen with token
latencies, and judge it: the document a launcher prints and the stack stores
(``generative.json``)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from services.workloads.generative.distributions import run_distributions
from services.workloads.generative.engine import Engine, GenerationRequest
from services.workloads.generative.figures import figures_document, request_counts, run_figures
from services.workloads.generative.lengths import INPUT_RANGE, OUTPUT_RANGE, parse_length
from services.workloads.generative.loadgen_run import LOG_FILES, run_test
from services.workloads.generative.options import GenerativeOptions
from services.workloads.generative.prompts import file_prompts, synthetic_prompts, token_counts
from services.workloads.generative.sharegpt import sharegpt_prompts
from services.workloads.generative.stability import run_stability
from services.workloads.generative.transformers_engine import TransformersEngine, load_tokenizer
from services.workloads.generative.verdict import loadgen_verdict


def make_prompts(
    options: GenerativeOptions, tokenizer: Any
) -> tuple[list[GenerationRequest], dict[str, Any]]:
    """The run's requests and where they came from."""
    outputs = parse_length("output_tokens", options.output_tokens, OUTPUT_RANGE)
    if options.conversations_file:
        path = Path(options.conversations_file)
        requests, skipped = sharegpt_prompts(tokenizer, path, options.prompts)
        return requests, {"source": "conversations file", "file": path.name, "skipped": skipped}
    if options.prompts_file:
        path = Path(options.prompts_file)
        requests = file_prompts(tokenizer, path, outputs, options.seed)
        return requests, {"source": "prompts file", "file": path.name}
    inputs = parse_length("input_tokens", options.input_tokens, INPUT_RANGE)
    requests = synthetic_prompts(tokenizer, options.prompts, inputs, outputs, options.seed)
    source = f"synthetic, input {inputs.describe()}, output {outputs.describe()} tokens"
    return requests, {"source": source, "seed": options.seed}


def load_engine(options: GenerativeOptions) -> tuple[Engine, Any]:
    """The engine the options name, and the tokenizer its prompts are made with."""
    if options.engine == "openai":
        from services.workloads.generative.openai_engine import OpenAIEngine

        if not options.url:
            raise ValueError(
                "url: the openai engine needs the server's url (on the stack, or an agent "
                "serving one: BENCHSTACK_AGENT_ENDPOINT_URL)"
            )

        client = OpenAIEngine(
            options.url or "",
            options.served_model or options.model,
            api=options.api,
            timeout_s=options.timeout_s,
            api_key_env=options.api_key_env,
        )
        return client, load_tokenizer(options.model)
    local = TransformersEngine.load(
        options.model, device=options.device, max_batch=options.batch_size
    )
    return local, local.tokenizer


def measure_generation(
    options: GenerativeOptions,
    *,
    threads: int = 0,
    on_stage: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """The run's document: settings, prompts, LoadGen's verdict and figures, ours with
    intervals, the requests (failed ones by reason) and LoadGen's summary log."""
    if threads:
        import torch

        torch.set_num_threads(threads)
    on_stage("loading model")
    engine, tokenizer = load_engine(options)
    try:
        return measure_loaded(engine, tokenizer, options, threads=threads, on_stage=on_stage)
    finally:
        engine.close()


def measure_loaded(
    engine: Engine,
    tokenizer: Any,
    options: GenerativeOptions,
    *,
    threads: int = 0,
    on_stage: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """``measure_generation`` on an engine already loaded (a campaign's runs share one;
    the caller closes it)."""
    describe = getattr(engine, "describe", None)
    server = describe() if describe is not None else None
    on_stage("making prompts")
    prompts, origin = make_prompts(options, tokenizer)
    on_stage("running")
    with tempfile.TemporaryDirectory(prefix="benchstack-generative-") as tmp:
        outcome = run_test(engine, prompts, options.plan(), Path(tmp), workers=options.workers)
    bounds = options.token_bounds()
    figures = run_figures(outcome.records, options.scenario, bounds)
    concurrency = options.workers * engine.max_batch
    stability = run_stability(outcome.records, options.scenario, concurrency)
    return {
        "kind": "generative",
        "options": options.model_dump(mode="json"),
        "engine": {
            "name": options.engine,
            "model": options.served_model or options.model,
            "url": options.url,
            "server": server,
            "threads": threads,
        },
        "prompts": token_counts(prompts) | origin,
        "bounds": bounds.to_dict() if bounds else None,
        "target_qps": outcome.target_qps,
        "warm_up": {"seconds": outcome.warm_up.seconds, "requests": outcome.warm_up.requests},
        "loadgen": loadgen_verdict(outcome.logs),
        "requests": request_counts(outcome.records),
        "stability": stability.to_dict(),
        **figures_document(figures),
        "distributions": run_distributions(outcome.records),
        "loadgen_summary": outcome.logs.get(LOG_FILES[0], ""),
    }
