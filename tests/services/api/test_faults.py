"""Which dependency an exception names, and the words a client reads for it."""

from __future__ import annotations

from services.api.faults import DependencyUnavailable, unavailable_dependency
from shared.storage import ObjectStoreUnavailable


def test_an_object_store_outage_is_named_through_the_chain() -> None:
    outage = ObjectStoreUnavailable("cannot connect to minio:9000: connection refused")
    assert unavailable_dependency(outage) == "object_store"
    try:
        try:
            raise outage
        except ObjectStoreUnavailable as exc:
            raise RuntimeError("reading a run's latencies") from exc
    except RuntimeError as wrapped:
        assert unavailable_dependency(wrapped) == "object_store"


def test_the_message_names_the_dependency_in_words() -> None:
    error = DependencyUnavailable("object_store")
    assert str(error) == "object store unavailable"
    assert error.code == "OBJECT_STORE_UNAVAILABLE"
    assert str(DependencyUnavailable("database")) == "database unavailable"
