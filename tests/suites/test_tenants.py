"""Many tenants on one `remd serve`: 1,000 namespaces saved and injected through the HTTP API,
then one daemon tick, in a real server process under ``ulimit -n 1024``
(benchmarks/bench_tenants.py's ``run``, once for the module). The process stays within the
issue's bounds (fds, threads, RSS, log volume, file size per memory) and the tick sees every
namespace. Timings are reported by the benchmark, never asserted.

The soak tier runs the 1,000; the default tier runs the same benchmark over 40 namespaces
(:func:`test_forty_tenants_on_one_server`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_tenants import TARGETS, Result, details, run

pytestmark = pytest.mark.backends

NAMESPACES = 1000
FEW = 40


@pytest.fixture(scope="module")
def tenants(tmp_path_factory: pytest.TempPathFactory) -> Result:
    return run(NAMESPACES, tmp_path_factory.mktemp("tenants"), concurrency=6)


@pytest.mark.soak
def test_every_request_succeeds_and_every_memory_is_stored(tenants: Result) -> None:
    assert tenants.errors == 0, details(tenants)
    assert tenants.exit_codes == (0, 0)  # both servers stopped cleanly on SIGTERM
    assert (tenants.stored, tenants.stored_namespaces) == (3 * NAMESPACES, NAMESPACES)


@pytest.mark.soak
def test_the_server_process_stays_within_its_bounds(tenants: Result) -> None:
    peaks = tenants.peaks
    assert peaks.samples > 0
    assert peaks.fds <= TARGETS["max_fds"], details(tenants)
    assert peaks.threads <= TARGETS["max_threads"], details(tenants)
    assert tenants.max_rss_mb <= TARGETS["max_rss_mb"], details(tenants)
    assert tenants.stderr.strip() == ""


@pytest.mark.soak
def test_the_log_grows_with_time_not_with_requests(tenants: Result) -> None:
    assert tenants.log_bytes <= TARGETS["log_bytes"], details(tenants)
    # 4,000 requests in well under a minute per server: summed up, not listed.
    assert tenants.log_by_event["http.request"] == 0
    assert tenants.log_by_event["http.summary"] > 0


@pytest.mark.soak
def test_one_tick_evaluates_every_namespace(tenants: Result) -> None:
    tick = tenants.tick
    assert tick["namespaces"] == NAMESPACES
    assert tick["fired"] == 0 and tick["runs"] == 0  # 3 memories each: no trigger fires
    assert tick["embedded"] == 0  # every save embedded its memory


@pytest.mark.soak
def test_the_file_takes_at_most_4_kb_per_memory(tenants: Result) -> None:
    assert tenants.bytes_per_memory <= TARGETS["bytes_per_memory"], details(tenants)


def test_forty_tenants_on_one_server(tmp_path: Path) -> None:
    """The 1,000-namespace soak's checks, over 40: every request succeeds, every memory is
    stored, both servers stop cleanly, the process stays within its bounds, requests are
    summed up in the log, and one tick evaluates every namespace."""
    few = run(FEW, tmp_path, concurrency=4)
    assert few.errors == 0 and few.exit_codes == (0, 0), details(few)
    assert (few.stored, few.stored_namespaces) == (3 * FEW, FEW)
    assert few.peaks.samples > 0 and few.peaks.fds <= TARGETS["max_fds"], details(few)
    assert few.peaks.threads <= TARGETS["max_threads"], details(few)
    assert few.stderr.strip() == ""
    assert few.log_by_event["http.request"] == 0 and few.log_by_event["http.summary"] > 0
    assert few.tick["namespaces"] == FEW and few.tick["fired"] == 0
