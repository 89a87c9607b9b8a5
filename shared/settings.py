"""One settings object for every service; every URL and secret comes from here.

Values come from environment variables prefixed ``BENCHSTACK_`` (or a ``.env`` file).
The defaults describe the embedded mode: an SQLite file and a local folder under
``~/.benchstack``, no broker, so ``benchstack bench`` works on a fresh machine.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

PLACEHOLDER_SECRETS = frozenset(
    {
        "",
        "change-me",
        "changeme",
        "secret",
        "dev-secret-change-me",
        "minioadmin",
        "password",
        "postgres",
    }
)
# Fields whose value is, or holds, a secret: never shown in clear by repr() or str().
SECRET_FIELDS = ("secret_key", "s3_access_key", "s3_secret_key")
URL_FIELDS = ("database_url", "broker_url")
MASK = "**********"

DEFAULT_DATA_DIR = Path.home() / ".benchstack"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BENCHSTACK_", env_file=".env", extra="ignore")

    environment: Literal["development", "test", "production"] = "development"
    data_dir: Path = DEFAULT_DATA_DIR
    # Where the datasets an API submission may name live ("imagenet/val" is
    # <datasets_dir>/imagenet/val); a submission can name nothing outside it.
    datasets_dir: Path = Field(default_factory=lambda data: Path(data["data_dir"]) / "datasets")
    # Where relative model file paths of manifests sent through the API resolve.
    models_dir: Path = Field(default_factory=lambda data: Path(data["data_dir"]) / "models")
    # Empty means "the SQLite file inside data_dir" (embedded mode).
    database_url: str = ""
    broker_url: str = "redis://127.0.0.1:6379/0"
    # A Redis broker's connect and each socket read or write (shared/celery_app.py): a
    # hung Redis answers nothing, and a publish waited for ever. The socket bound must
    # exceed kombu's 1 s BRPOP wait, which workers' consumers make in a loop.
    broker_connect_timeout_seconds: float = Field(default=2.0, gt=0, le=60)
    broker_socket_timeout_seconds: float = Field(default=3.0, gt=1, le=300)
    # One publish, its retries (at most broker_publish_retries) included, ends within this
    # or raises celery_app.PublishFailed: the API answers 503 with the stored evaluation's
    # id, and the evaluation waits for the scheduler's sweeper.
    broker_publish_timeout_seconds: float = Field(default=6.0, gt=0, le=600)
    broker_publish_retries: int = Field(default=2, ge=0, le=20)
    # Each process's Postgres connections (shared/db/session.py): a pool of this many kept
    # open, and up to database_max_overflow more opened under a burst and closed after.
    # Connections grow with processes, never with agents or requests: a process holds at
    # most the sum, and waits up to database_pool_timeout_seconds for one beyond it.
    # Size Postgres' max_connections (or a PgBouncer in front of it) for processes x sum;
    # docs/scale.md gives the count per service.
    database_pool_size: int = Field(default=5, ge=1, le=100)
    database_max_overflow: int = Field(default=10, ge=0, le=100)
    database_pool_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    # Every database connection (shared/db/session.py): a connect ends within the first
    # (libpq's connect_timeout, whole seconds, at least 2; SQLite: its busy timeout), and
    # Postgres ends a statement past the second (statement_timeout, sent as the startup
    # parameter "options"; 0 sends none). psycopg2 gives up on a server that answers
    # nothing after their sum (shared/db/bounded_waits.py). Migrations run without them.
    database_connect_timeout_seconds: float = Field(default=5.0, gt=0, le=300)
    database_statement_timeout_seconds: float = Field(default=30.0, ge=0, le=3600)
    # Empty endpoint means "a local folder inside data_dir" as the object store.
    s3_endpoint: str = ""
    s3_access_key: str = ""
    s3_secret_key: str = ""
    s3_bucket: str = "benchstack"
    s3_secure: bool = False
    s3_region: str = "us-east-1"
    # Bounds on every object-store request (shared/s3_client.py): a server that refuses,
    # hangs or answers 5xx costs a caller at most s3_client.worst_case_seconds, then
    # ObjectStoreUnavailable, which tasks retry with backoff. The read timeout is per read
    # of the socket, not per transfer, so large objects are not cut short.
    s3_connect_timeout_seconds: float = Field(default=3.0, gt=0, le=60)
    s3_read_timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    # Retries of a refused connection or a 5xx answer, with exponential backoff
    # (s3_backoff_seconds doubled each time, at most 8 s); a read that timed out is
    # retried once at most, since a hung server rarely answers the second time.
    s3_retries: int = Field(default=4, ge=0, le=10)
    s3_backoff_seconds: float = Field(default=0.5, ge=0, le=10)
    # /readyz asks the object store whether its bucket exists within this many seconds and
    # keeps the answer this long, so a loop of probes makes one request per interval.
    s3_probe_timeout_seconds: float = Field(default=2.0, gt=0, le=30)
    s3_probe_cache_seconds: float = Field(default=1.5, ge=0, le=60)
    # /readyz's whole answer (database, broker, object store) is kept this long: probes in
    # a loop are answered from memory and cost other clients nothing.
    readiness_cache_seconds: float = Field(default=1.0, ge=0, le=60)
    # Each of /readyz's checks (database, broker, object store), run side by side, answers
    # within this or is reported timed out: /readyz answers within about this, whatever hangs.
    readiness_check_timeout_seconds: float = Field(default=2.0, gt=0, le=30)
    secret_key: str = "dev-secret-change-me"
    otlp_endpoint: str = ""
    api_url: str = "http://127.0.0.1:8000"
    # API server processes; 0 starts one per usable CPU (the GraphQL layer is CPU-bound
    # and holds the GIL, so one process cannot use a second core).
    api_workers: int = Field(default=0, ge=0)
    # One log line per HTTP request from uvicorn. Off by default: /metrics already counts
    # requests by route and status, and the line cost about 6 % of an API process's CPU
    # under benchmarks/api_load.py.
    api_access_log: bool = False
    # Allocations between collections of the youngest generation in an API process
    # (Python's default is 700; services/stack/entry.py settle_garbage_collector says why).
    api_gc_threshold: int = Field(default=20_000, ge=100, le=1_000_000)
    # GraphQL requests in progress at once per API process; the rest wait their turn
    # (services/api/admission.py says why). 0: no limit.
    api_max_requests_in_progress: int = Field(default=8, ge=0, le=10_000)
    # Reads that every caller sees alike (the live agents) are kept this long per API
    # process: a client may see an agent's heartbeat up to this much late. 0: not kept.
    api_shared_reads_cache_seconds: float = Field(default=1.0, ge=0, le=60)
    # How long an API process trusts a token it has looked up before asking the database
    # again; a revoked token stops working within this many seconds. 0 asks every time.
    api_token_cache_seconds: float = Field(default=5.0, ge=0)
    # Reads of the API run on its event loop through asyncpg (shared/db/loop_reads.py says
    # why) when the database is Postgres; false: every read in a worker thread (psycopg2).
    api_reads_on_loop: bool = True
    # The API's reads on the loop: connecting, waiting for a pooled connection and each
    # statement end within this many seconds (then "database unavailable", 503).
    api_database_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    # host:port of the Triton (KServe-V2) server the triton backend talks to from the
    # stack (API submissions cannot name one); empty keeps the backend's own default.
    triton_url: str = ""
    agent_heartbeat_seconds: float = Field(default=10.0, gt=0)
    # An agent is live while its last heartbeat is younger than this many heartbeats.
    agent_live_heartbeats: float = Field(default=3.0, gt=1)
    # Samples per preprocessing shard: the unit of parallel work and of reuse.
    shard_samples: int = Field(default=64, ge=1)
    # The most pixels one image may have when decoded (after any reduced-scale JPEG
    # decoding); a larger one is a per-sample error, refused from its header, so a folder
    # of huge images cannot exhaust memory. 50 megapixels is an 8660x5773 photo.
    max_image_pixels: int = Field(default=50_000_000, ge=1)
    # What a sample's preprocessing may make of it, checked from its header before any
    # pixel is decoded (services/preprocess/sizes.py): the most pixels any step's output
    # may have (a 1x60000 image resized to 256 on its short side would be 256 x 15360000),
    # and the longest side over the shortest. 4096 x 4096 is the largest square a
    # manifest's sides allow (max_image_side).
    max_output_pixels: int = Field(default=4096 * 4096, ge=1)
    max_aspect_ratio: float = Field(default=100.0, ge=1)
    # The bytes one dataset file may have, and all the files one evaluation's samples may
    # have together, checked with stat before any byte is read (services/preprocess/
    # sample_files.py): by the scheduler, which hashes them for the shard keys, and by the
    # preprocess workers, which decode them. A larger file is that sample's error, never
    # read (a 3 GB file took the scheduler to 3.3 GB); a larger total fails the evaluation
    # at planning. 256 MiB holds any photo (a 50-megapixel TIFF is 150 MB); 64 GiB is
    # 100,000 samples (max_samples) of 640 KB, five times ImageNet's mean.
    max_sample_bytes: int = Field(default=256 * 2**20, ge=1)
    max_dataset_bytes: int = Field(default=64 * 2**30, ge=1)
    # The memory one preprocessing process may allocate beyond what it held when it
    # started (its address-space limit, RLIMIT_AS): a shard that needs more fails with
    # "needed more than N GB" instead of the kernel's OOM killer picking a victim. 0: no
    # limit.
    max_preprocess_memory_mb: int = Field(default=4096, ge=0)
    # The synthetic datasets kept made (<data_dir>/synthetic, content-addressed by seed,
    # count and generator): past this the least recently used are evicted, though never
    # one used in the last 10 minutes. 10,000 samples are about 860 MB.
    synthetic_cache_mb: int = Field(default=4096, ge=0)
    # The most samples one API submission may ask for.
    max_samples: int = Field(default=100_000, ge=1)
    # The longest one run may measure (the measurement is ended past it); the broker's
    # visibility timeout derives from it, so a long run is not redelivered for no reason.
    max_run_seconds: float = Field(default=3600.0, gt=0)
    # A measuring worker renews its run's claim every third of this; a claim not renewed for
    # this long is lapsed and the run is dispatched again (recovery in about a minute,
    # whatever MAX_RUN_SECONDS is).
    claim_lease_seconds: float = Field(default=30.0, gt=0)
    # The most resident memory one measurement (its child process and what it starts) may
    # hold; past it the run is ended and FAILED with that reason. 0 disables the check.
    max_run_memory_mb: int = Field(default=16384, ge=0)
    # Memory for models kept loaded between runs (services/inference/model_cache.py), so a
    # sweep loads its model once; 0 loads every run afresh. Never more than half of
    # max_run_memory_mb, since a measurement process holds its cached models too.
    model_cache_mb: int = Field(default=2048, ge=0, le=1_048_576)
    # How often the scheduler's sweeper looks for evaluations that stopped moving, and how
    # long one may sit in a waiting state before it is dispatched again (idempotently).
    sweep_interval_seconds: float = Field(default=10.0, gt=0)
    stall_seconds: float = Field(default=45.0, gt=0)
    # An agent silent this long is gone for good: the sweeper drops its direct queue (and
    # its host's, with no live agent left there) from the broker once empty
    # (services/scheduler/dead_queues.py), so agents that come and go leave no keys behind.
    dead_agent_queue_seconds: float = Field(default=600.0, gt=0)
    # Dispatches of one evaluation by the sweeper before it is failed instead of looped.
    max_dispatches: int = Field(default=3, ge=1, le=100)
    # Fair shares. At submission (services/api/user_quota.py): the most evaluations one
    # user may have QUEUED, and the most agent-seconds all their unfinished evaluations
    # may hold, each counted at its longest possible run (max_duration_s plus the setup
    # allowance, else max_run_seconds). At dispatch (services/scheduler/fair_order.py): the
    # most one user may have preprocessing or running at once. 0: no limit.
    user_max_queued: int = Field(default=1000, ge=0)
    user_max_agent_seconds: float = Field(default=1000 * 3600.0, ge=0)
    user_max_running: int = Field(default=0, ge=0)
    # Per-user exceptions by user name, e.g. {"ci": {"user_max_queued": 0}} (JSON in
    # BENCHSTACK_USER_LIMIT_OVERRIDES): there are no admin roles, the operator grants them.
    user_limit_overrides: dict[str, dict[str, float]] = Field(default_factory=dict)
    # Tries of one run whose shards vanished from the object store (an emptied bucket):
    # each sends the evaluation back to have them prepared again; the last fails it,
    # naming the object (shared/db/lost_objects.py).
    lost_object_tries: int = Field(default=3, ge=1, le=20)
    # One measurement per host at a time (agents and embedded runs alike); false lets
    # measurements share the machine, and each run then records what overlapped it.
    measure_exclusive: bool = True
    # Where measurements on this host meet: the lock file and the registry of active runs.
    # Every agent and bench on one machine must see the same folder.
    host_slot_dir: Path = Path("/tmp/benchstack-host")
    # Whether a measuring process keeps the memory it frees ("keep", the default) or lets
    # glibc hand it back ("release"), which costs a depthwise net a page fault per 4 KiB
    # of activations on every inference (shared/allocator.py). Recorded with every run.
    allocator: Literal["keep", "release"] = "keep"
    # What this machine costs per hour (any currency, the same for every machine compared):
    # recorded in the agent's settings and with every run it measures (embedded runs too),
    # so `benchstack advise` can price an inference. Unset: no cost is given.
    agent_price_per_hour: float | None = Field(default=None, gt=0, le=1_000_000)
    # The machine `advise` files this agent's runs and price under; empty: the host and
    # queue of its agent id. Set it where a host name changes at every restart (pods of a
    # Deployment) or to tell apart agents that share a host. Letters, digits, ".-_:/".
    agent_machine: str = Field(default="", max_length=200, pattern=r"^[A-Za-z0-9._:/-]*$")
    # How long a new API token lives unless `token create --expires-in` says otherwise,
    # and the longest lifetime anyone may ask for: no token lives for ever.
    token_lifetime_days: float = Field(default=90.0, gt=0)
    max_token_lifetime_days: float = Field(default=365.0, gt=0)
    # Whether the API serves Prometheus metrics at /metrics (scrapers need it; turn it off
    # where the API faces the internet and nothing scrapes it) and its OpenAPI description
    # at /openapi.json (a map of the API: hidden in production; /docs and /redoc, which
    # would load Swagger UI and ReDoc from a CDN, are never served).
    expose_metrics: bool = True
    expose_docs: bool = Field(
        default_factory=lambda data: data.get("environment", "development") != "production"
    )

    @model_validator(mode="after")
    def _known_user_limits(self) -> Settings:
        known = {"user_max_queued", "user_max_agent_seconds", "user_max_running"}
        for user, limits in self.user_limit_overrides.items():
            if bad := sorted(k for k, v in limits.items() if k not in known or v < 0):
                raise ValueError(
                    f"user_limit_overrides[{user!r}]: {bad} not accepted; accepted: "
                    f"{sorted(known)}, each 0 (no limit) or more"
                )
        return self

    @model_validator(mode="after")
    def _token_lifetime_within_limit(self) -> Settings:
        if self.token_lifetime_days > self.max_token_lifetime_days:
            raise ValueError(
                f"token_lifetime_days: {self.token_lifetime_days:g} is longer than "
                f"max_token_lifetime_days ({self.max_token_lifetime_days:g}); lower it or "
                "raise BENCHSTACK_MAX_TOKEN_LIFETIME_DAYS"
            )
        return self

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

    @model_validator(mode="after")
    def _refuse_placeholder_secrets(self) -> Settings:
        # A production deployment with a default secret is worse than one that will not start.
        # Development and test modes stay permissive. Messages never quote the secret.
        if self.environment != "production":
            return self
        checks: list[tuple[str, str | None]] = [
            ("BENCHSTACK_SECRET_KEY", self.secret_key),
            ("the password in BENCHSTACK_DATABASE_URL", _database_password(self.database_url)),
            ("the password in BENCHSTACK_BROKER_URL", _url_password(self.broker_url)),
        ]
        if self.s3_endpoint:
            checks += [
                ("BENCHSTACK_S3_ACCESS_KEY", self.s3_access_key),
                ("BENCHSTACK_S3_SECRET_KEY", self.s3_secret_key),
            ]
        for name, value in checks:
            # None: the URL carries no password (e.g. the embedded SQLite file).
            if value is not None and value.strip().lower() in PLACEHOLDER_SECRETS:
                raise ValueError(f"{name} is a placeholder; set a real secret in production")
        return self

    def __repr_args__(self) -> Any:
        # repr(settings) ends up in logs and tracebacks: mask secrets and URL passwords.
        for name, value in super().__repr_args__():
            if name in SECRET_FIELDS and value:
                yield name, MASK
            elif name in URL_FIELDS and isinstance(value, str):
                yield name, _mask_url_password(value)
            else:
                yield name, value

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'benchstack.db'}"

    @property
    def model_cache_bytes(self) -> int:
        """The model cache's budget: model_cache_mb, at most half the run memory limit."""
        budget = self.model_cache_mb
        if self.max_run_memory_mb:
            budget = min(budget, self.max_run_memory_mb // 2)
        return budget * 2**20

    @property
    def objects_dir(self) -> Path:
        return self.data_dir / "objects"


def _database_password(url: str) -> str | None:
    if not url:
        return None
    try:
        return make_url(url).password
    except (ArgumentError, ValueError):
        # Not a URL SQLAlchemy can read: the engine will say so; nothing to check here.
        return None


def _url_password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def _mask_url_password(url: str) -> str:
    """``scheme://user:SECRET@host`` -> ``scheme://user:**********@host``."""
    password = _url_password(url)
    if not password:
        return url
    parts = urlsplit(url)
    userinfo, _, hostinfo = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return parts._replace(netloc=f"{user}:{MASK}@{hostinfo}").geturl()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
