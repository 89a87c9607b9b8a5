"""The one run report: what is stored reads back as the same typed report, NaN figures
included (stored as null, read as NaN, stored as null again)."""

from __future__ import annotations

import math
from typing import Any

from services.core.run_report import RunReport

TINY = "tests/fixtures/tiny_cnn.yaml"


def test_a_stored_report_reads_back_as_the_same_report(null_run_report: dict[str, Any]) -> None:
    stored = null_run_report
    typed = RunReport.from_dict(stored)
    assert typed.to_dict() == stored
    # Offline has no QPS figure of its own: null when stored, NaN when read by attribute.
    assert stored["performance"]["qps"] is None
    assert math.isnan(typed.measurement.performance.qps)
    assert typed.validity == stored["performance"]["validity"]["result"]
    assert typed.settings.backend_options.extra == {"service_time_ms": 1.0}
    assert typed.logs == stored["log_keys"] and typed.log_locations == stored["logs"]
