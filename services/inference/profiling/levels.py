"""Trace levels and the instruments each one switches on."""

from __future__ import annotations

from dataclasses import dataclass

from services.core.trace_levels import TRACE_LEVELS

# APPLICATION is the other name for MODEL: the evaluation's own steps.
LEVEL_ALIASES = {"APPLICATION": "MODEL"}


class TraceLevelError(ValueError):
    """A trace level that is not one of ``TRACE_LEVELS``."""


@dataclass(frozen=True)
class Instruments:
    """What a level measures beyond LoadGen."""

    model: bool = False  # spans for the steps and each predict batch
    framework: bool = False  # per-layer / per-node spans from the framework
    library: bool = False  # library calls below the layers (aten/oneDNN ops, GPU kernels)
    system: bool = False  # CPU and memory sampled (NVML where present)

    @property
    def any(self) -> bool:
        return self.model or self.framework or self.library or self.system


INSTRUMENTS = {
    "NONE": Instruments(),
    "MODEL": Instruments(model=True),
    "FRAMEWORK": Instruments(model=True, framework=True),
    "LIBRARY": Instruments(model=True, framework=True, library=True),
    "SYSTEM": Instruments(model=True, system=True),
    "FULL": Instruments(model=True, framework=True, library=True, system=True),
}

# The passes a level runs, shallowest first; each is its own pass (leveled measurement).
PASS_LEVELS = {
    "NONE": ("NONE",),
    "MODEL": ("NONE", "MODEL"),
    "FRAMEWORK": ("NONE", "MODEL", "FRAMEWORK"),
    "LIBRARY": ("NONE", "MODEL", "FRAMEWORK", "LIBRARY"),
    "SYSTEM": ("NONE", "MODEL", "SYSTEM"),
    "FULL": ("NONE", "MODEL", "FRAMEWORK", "LIBRARY", "SYSTEM"),
}


def parse_trace_level(value: str, field: str = "trace_level") -> str:
    """The canonical level for ``value`` (any case; APPLICATION -> MODEL)."""
    upper = str(value).strip().upper()
    if upper not in TRACE_LEVELS:
        raise TraceLevelError(
            f"{field}: {value!r} is not a trace level; accepted: {', '.join(TRACE_LEVELS)}"
        )
    return LEVEL_ALIASES.get(upper, upper)


def instruments_for(level: str) -> Instruments:
    return INSTRUMENTS[parse_trace_level(level)]


def passes_for(level: str) -> tuple[str, ...]:
    return PASS_LEVELS[parse_trace_level(level)]
