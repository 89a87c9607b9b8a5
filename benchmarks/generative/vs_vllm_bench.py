"""benchstack's generative Server run against vLLM's own `vllm bench serve`, one server,
one sitting (issue 58's benchmark; run it on a quiet host).

Both sides send the same prompts (one JSONL file of synthetic prompts of exact token
lengths, made with the served model's tokenizer), the same count, the same output length
(forced with ignore_eos) and the same Poisson rate to the same server; rounds interleave
them, the order swapped each round. For each: TTFT p50, TPOT p50 and output tokens/s, per
round and the medians over rounds, with benchstack / vLLM ratios. `vllm bench serve` runs
as a module from the server's virtualenv (benchmarks/generative/README.md says why).

Then the client's own cost, with no model in the way: benchstack's openai engine against
a bare httpx streaming client, each draining the same number of streamed tokens, one
request at a time, from the local streaming server of the tests (it streams as fast as
its Python can); tokens/s each, interleaved rounds, medians.

    PYTHONPATH=$PWD python benchmarks/generative/vs_vllm_bench.py --rounds 3
    # another server: --url http://HOST:8000 --model-dir DIR --served-model NAME

Without --url it starts the tests' vLLM server (tests/support/vllm_server.py) on the tiny
Llama (seed 58); the virtualenv must exist (`python3 -m tests.support.vllm_server --prepare`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# The vLLM and streaming servers live with the tests; make the repository root importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx

from services.workloads.generative.engine import GenerationRequest
from services.workloads.generative.lengths import (
    INPUT_RANGE,
    OUTPUT_RANGE,
    parse_length,
)
from services.workloads.generative.openai_engine import OpenAIEngine
from services.workloads.generative.options import GenerativeOptions
from services.workloads.generative.prompts import synthetic_prompts
from services.workloads.generative.run import measure_generation
from services.workloads.generative.transformers_engine import load_tokenizer
from tests.support.streaming_server import streaming_server
from tests.support.tiny_llm import tiny_llm
from tests.support.vllm_server import (
    VllmEndpoint,
    VllmServer,
    bench_serve_command,
    server_env,
    venv_is_current,
)

FIGURES = ("ttft_p50_ms", "tpot_p50_ms", "output_tokens_per_s")
BENCH_TIMEOUT_S = 3600


def write_prompts(args: argparse.Namespace, path: Path) -> None:
    """The shared prompts: exact token lengths from the served model's tokenizer."""
    tokenizer = load_tokenizer(str(args.model_dir))
    inputs = parse_length("input_tokens", str(args.input_tokens), INPUT_RANGE)
    outputs = parse_length("output_tokens", str(args.output_tokens), OUTPUT_RANGE)
    requests = synthetic_prompts(tokenizer, args.prompts, inputs, outputs, args.seed)
    lines = [json.dumps({"prompt": r.prompt_text, "output_tokens": r.max_tokens}) for r in requests]
    path.write_text("\n".join(lines) + "\n")


def benchstack_round(
    args: argparse.Namespace, endpoint: VllmEndpoint, prompts: Path
) -> dict[str, float]:
    """A Server run of the prompts at the rate: LoadGen issues at least as many requests
    as there are prompts (its duration is kept below what that many take)."""
    options = GenerativeOptions(
        engine="openai",
        model=str(endpoint.model_dir),
        url=endpoint.url,
        served_model=endpoint.model,
        scenario="server",
        prompts=args.prompts,
        prompts_file=str(prompts),
        output_tokens=str(args.output_tokens),
        workers=args.workers,
        target_qps=args.rate,
        min_duration_s=max(0.1, 0.5 * args.prompts / args.rate),
        min_query_count=args.prompts,
        ttft_ms=60_000.0,
        tpot_ms=60_000.0,
        percentile=50.0,
        seed=args.seed,
    )
    document = measure_generation(options)
    figures = document["figures"]
    failed = document["requests"]["failed"]
    if failed:
        print(f"  benchstack: {failed} failed requests: {document['requests']['failures']}")
    return {
        "ttft_p50_ms": figures["ttft_p50"]["estimate"],
        "tpot_p50_ms": figures["tpot_p50"]["estimate"],
        "output_tokens_per_s": figures["output_tokens_per_s"]["estimate"],
        "requests": document["requests"]["completed"],
    }


def vllm_round(
    args: argparse.Namespace, endpoint: VllmEndpoint, prompts: Path, out: Path
) -> dict[str, float]:
    """`vllm bench serve` on the same prompts, count, output length and rate."""
    command = bench_serve_command(
        *("--backend", "vllm", "--base-url", endpoint.url, "--model", endpoint.model),
        *("--tokenizer", str(endpoint.model_dir), "--dataset-name", "custom"),
        *("--dataset-path", str(prompts), "--skip-chat-template"),
        *("--custom-output-len", str(args.output_tokens), "--num-prompts", str(args.prompts)),
        *("--request-rate", str(args.rate), "--ignore-eos", "--seed", str(args.seed)),
        *("--temperature", "0", "--percentile-metrics", "ttft,tpot,itl,e2el"),
        *("--save-result", "--result-dir", str(out.parent), "--result-filename", out.name),
    )
    done = subprocess.run(
        command, env=server_env(), capture_output=True, text=True, timeout=BENCH_TIMEOUT_S
    )
    if done.returncode != 0:
        raise SystemExit(f"vllm bench serve failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    result = json.loads(out.read_text())
    if result["failed"]:
        print(f"  vllm bench serve: {result['failed']} failed requests")
    return {
        "ttft_p50_ms": result["median_ttft_ms"],
        "tpot_p50_ms": result["median_tpot_ms"],
        "output_tokens_per_s": result["output_throughput"],
        "requests": result["completed"],
    }


def warm_up(endpoint: VllmEndpoint, args: argparse.Namespace, requests: int = 8) -> None:
    """A fresh server's first requests are slow (lazy set-up): a few, untimed, go first,
    so that neither side's first round pays for them."""
    engine = OpenAIEngine(endpoint.url, endpoint.model, timeout_s=300)
    request = GenerationRequest((), args.output_tokens, prompt_text="ka lo mi ne")
    for _ in range(requests):
        engine.generate([request], [_Count()])
    engine.close()


class _Count:
    def __init__(self) -> None:
        self.tokens = 0

    def token(self, count: int = 1) -> None:
        self.tokens += count


def _row(name: str, figures: dict[str, float]) -> str:
    return (
        f"  {name:<12}"
        + "".join(f"{figures[f]:>22.2f}" for f in FIGURES)
        + f"{figures['requests']:>10.0f}"
    )


def compare_serving(args: argparse.Namespace, endpoint: VllmEndpoint, work: Path) -> None:
    prompts = work / "prompts.jsonl"
    write_prompts(args, prompts)
    print(
        f"{args.prompts} prompts of {args.input_tokens} tokens, "
        f"{args.output_tokens} out, {args.rate} requests/s"
    )
    print(f"  {'':<12}" + "".join(f"{f:>22}" for f in FIGURES) + f"{'requests':>10}")
    warm_up(endpoint, args)
    sides: dict[str, list[dict[str, float]]] = {"benchstack": [], "vllm": []}
    for number in range(args.rounds):
        order = ["benchstack", "vllm"] if number % 2 == 0 else ["vllm", "benchstack"]
        print(f"round {number + 1}")
        for side in order:
            if side == "benchstack":
                figures = benchstack_round(args, endpoint, prompts)
            else:
                figures = vllm_round(args, endpoint, prompts, work / f"vllm-{number}.json")
            sides[side].append(figures)
            print(_row(side, figures))
    medians = {
        side: {f: statistics.median(r[f] for r in rounds) for f in (*FIGURES, "requests")}
        for side, rounds in sides.items()
    }
    print("medians")
    for side, figures in medians.items():
        print(_row(side, figures))
    ratios = "".join(f"{medians['benchstack'][f] / medians['vllm'][f]:>22.3f}" for f in FIGURES)
    print(f"  {'ratio':<12}{ratios}")
    for f in FIGURES:
        low = min(r[f] for r in sides["vllm"])
        high = max(r[f] for r in sides["vllm"])
        print(
            f"  vllm {f} over rounds {low:.2f}..{high:.2f}; "
            f"benchstack median {medians['benchstack'][f]:.2f}"
        )


def drain_benchstack(url: str, requests: int, tokens: int) -> int:
    engine = OpenAIEngine(url, "tiny", timeout_s=60)
    request = GenerationRequest((), tokens, prompt_text="ka")
    sink = _Count()
    for _ in range(requests):
        result = engine.generate([request], [sink])[0]
        if result.failed:
            raise SystemExit(f"benchstack's client failed: {result.failure}")
    engine.close()
    return sink.tokens


def drain_bare(url: str, requests: int, tokens: int) -> int:
    """A bare streaming client: a line of `data: {...}` with text is a token."""
    counted = 0
    body = {"model": "tiny", "prompt": "ka", "max_tokens": tokens, "stream": True}
    with httpx.Client(timeout=60) as client:
        for _ in range(requests):
            with client.stream("POST", f"{url}/v1/completions", json=body) as response:
                for line in response.iter_lines():
                    if line.startswith("data: {") and '"text"' in line:
                        counted += 1
    return counted


def compare_clients(args: argparse.Namespace) -> None:
    requests = max(1, args.client_tokens // args.client_request_tokens)
    total = requests * args.client_request_tokens
    print(
        f"client cost: {requests} requests of {args.client_request_tokens} tokens "
        "from the local streaming server"
    )
    clients: dict[str, Callable[[str, int, int], int]] = {
        "benchstack": drain_benchstack,
        "bare httpx": drain_bare,
    }
    rates: dict[str, list[float]] = {name: [] for name in clients}
    with streaming_server() as server:
        url = server.url  # type: ignore[attr-defined]
        for number in range(args.rounds):
            names = list(clients) if number % 2 == 0 else list(clients)[::-1]
            for name in names:
                start = time.perf_counter()
                counted = clients[name](url, requests, args.client_request_tokens)
                seconds = time.perf_counter() - start
                if counted != total:
                    raise SystemExit(f"{name}: {counted} tokens of {total}")
                rates[name].append(total / seconds)
                print(f"  round {number + 1} {name:<12} {total / seconds:>12,.0f} tokens/s")
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for name, value in medians.items():
        print(f"  median {name:<12} {value:>12,.0f} tokens/s")
    print(f"  benchstack / bare: {medians['benchstack'] / medians['bare httpx']:.3f}")


@contextmanager
def served(args: argparse.Namespace, work: Path) -> Iterator[VllmEndpoint]:
    """The server to measure: the one given, or the tests' vLLM on the tiny Llama."""
    if args.url:
        if not args.model_dir:
            raise SystemExit("--url needs --model-dir: the served model's tokenizer folder")
        yield VllmEndpoint(args.url, args.served_model, Path(args.model_dir))
        return
    if not venv_is_current():
        raise SystemExit("no vLLM virtualenv: python3 -m tests.support.vllm_server --prepare")
    server = VllmServer(tiny_llm(work / "model", seed=58), work, args.served_model)
    print("starting vLLM on the tiny Llama (about a minute)")
    server.start()
    try:
        args.model_dir = str(server.model_dir)
        yield server.endpoint
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", help="a running server (default: start the tests' vLLM)")
    parser.add_argument("--model-dir", help="with --url: the served model's folder (its tokenizer)")
    parser.add_argument("--served-model", default="tiny-llama")
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--input-tokens", type=int, default=128)
    parser.add_argument("--output-tokens", type=int, default=128)
    parser.add_argument("--rate", type=float, default=4.0, help="requests/s (Poisson)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=64, help="benchstack's concurrent streams")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--client-tokens", type=int, default=200_000)
    parser.add_argument("--client-request-tokens", type=int, default=1000)
    parser.add_argument("--skip-serving", action="store_true", help="the client cost only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="benchstack-vs-vllm-") as tmp:
        work = Path(tmp)
        if not args.skip_serving:
            with served(args, work) as endpoint:
                compare_serving(args, endpoint, work)
        compare_clients(args)


if __name__ == "__main__":
    main()
