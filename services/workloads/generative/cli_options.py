"""The options of the generative commands (cli.py's run, campaign_cli.py's campaigns), declared
once so each command spells and explains them alike."""

from __future__ import annotations

import typer

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
