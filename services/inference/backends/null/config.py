"""The null backend's registration: zeros in no time, to measure the harness alone."""

from __future__ import annotations

from pydantic import Field

from services.inference.backends.spec import BackendOptionsModel, BackendSpec


class NullOptions(BackendOptionsModel):
    # Upper bounds are the deployment's (BENCHSTACK_MAX_SERVICE_TIME_MS,
    # BENCHSTACK_MAX_NULL_OUTPUTS): CONFIG.settings_bounds, checked by the API first.
    fail_every: int = Field(0, ge=0, le=2**31 - 1)  # every Nth batch raises; 0 never
    num_outputs: int = Field(10, ge=1)
    service_time_ms: float = Field(0.0, ge=0.0)  # a server of known capacity


CONFIG = BackendSpec(
    name="null",
    summary="zeros in no time (or a fixed service time): the harness alone",
    entry="backend:NullBackend",
    options=NullOptions,
    extra="stack",  # nothing beyond the base install
    devices=("cpu", "cuda"),  # it touches no device, so any device string is its own
    # A size and a time each batch costs the worker: the deployment bounds them.
    settings_bounds={
        "service_time_ms": "max_service_time_ms",
        "num_outputs": "max_null_outputs",
        "fail_every": "",
    },
)
