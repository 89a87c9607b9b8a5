"""Bounds of what a client may submit: samples, manifests, scenarios, GraphQL requests."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class RequestLimits(BaseSettings):
    """The ``max_*`` bounds of ``Settings`` that each submission is checked against."""

    # The most samples one API submission may ask for.
    max_samples: int = Field(default=100_000, ge=1)
    # Bounds of what a client may submit. Each refusal names the field and the limit; the
    # defaults are far above what the catalogue's models and the web UI use.
    # Manifest YAML: its length, nesting and node count. Aliases and anchors are always
    # refused, so the parsed manifest is never larger than its text.
    max_manifest_chars: int = Field(default=256 * 1024, ge=1)
    max_manifest_depth: int = Field(default=32, ge=1)
    max_manifest_nodes: int = Field(default=20_000, ge=1)
    # A manifest's input shape dimensions and resize/crop sides, in pixels.
    max_image_side: int = Field(default=4096, ge=1)
    # Elements of one preprocessed sample (the product of its input shape): 2**24 is
    # 64 MiB of float32, e.g. 4 x 2048 x 2048.
    max_sample_elements: int = Field(default=2**24, ge=1)
    # The null backend's options: the sleep per batch and the width of its output.
    max_service_time_ms: float = Field(default=10_000.0, gt=0)
    max_null_outputs: int = Field(default=100_000, ge=1)
    # Scenario settings: LoadGen keeps a record per query and per issued sample.
    max_query_count: int = Field(default=1_000_000, ge=1)
    max_samples_per_query: int = Field(default=4096, ge=1)
    max_target_qps: float = Field(default=1_000_000.0, gt=0)
    # Constraint terms of one submission, and the length of each.
    max_constraint_terms: int = Field(default=32, ge=1)
    max_constraint_term_chars: int = Field(default=200, ge=1)
    # One GraphQL request: its body, the nesting of its JSON, and the operation's depth
    # (introspection aside), aliases and tokens. The CLI and web UI stay under 6 levels,
    # 3 aliases and 100 tokens.
    max_request_bytes: int = Field(default=2 * 1024 * 1024, ge=1)
    max_json_depth: int = Field(default=32, ge=1)
    max_query_depth: int = Field(default=12, ge=1)
    max_query_aliases: int = Field(default=20, ge=0)
    max_query_tokens: int = Field(default=2000, ge=1)
    # Fields and fragment spreads of one document once every fragment is inlined where it
    # is spread (services/api/graphql/expansion.py), judged before validation: the rules
    # that follow fragments walk this many nodes, so 2 KB of fragments spreading each
    # other twice cannot stand for 2^31 of them. GraphiQL's introspection query holds
    # ~240, the web UI's largest ~100; within 5,000 a document validates in milliseconds.
    max_query_expanded_size: int = Field(default=5000, ge=1)
    # Pairs of fields under one response name, and of fragments, spread side by side in
    # one selection set, which graphql-core's overlap rule compares two by two
    # (services/api/graphql/merge_pairs.py): 300 copies of one field took 0.3-0.5 s to
    # validate. The web UI and the CLI send at most 1, GraphiQL's introspection 0.
    max_query_merge_pairs: int = Field(default=1000, ge=0)
    # The estimated cost of one operation (services/api/graphql/query_cost.py: fields times
    # the sizes of the lists they sit in); the web UI's heaviest view costs ~2 x 10^5.
    max_query_cost: int = Field(default=1_000_000, ge=1)
    # Query cost one caller (a user, or an address without a token) may spend per second,
    # with bursts up to query_cost_burst, per API process: the web UI's views cost 10^3 to
    # 10^5, so a person never meets it; a loop of the most costly queries allowed does.
    query_cost_per_second: int = Field(default=2_000_000, ge=1)
    query_cost_burst: int = Field(default=5_000_000, ge=1)
    # evaluationUpdates subscriptions one user may hold open at once, per API process.
    max_subscriptions_per_user: int = Field(default=50, ge=1)
    # One GraphQL response body: a larger one is replaced by a RESPONSE_TOO_LARGE error.
    max_response_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
