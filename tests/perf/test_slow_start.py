"""Benchmark: how spread the first wave of requests is under slow start (printed, not asserted).

    pytest tests/perf/test_slow_start.py -m perf -s
"""
import pytest

from evaluation.services import runs as services
from tests.evaluation.test_execution import endpoint_for, items, launch  # noqa: F401  (fixture)
from tests.support.model_server import start_server_process

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]


def test_first_wave_spread_is_printed(items, settings):  # noqa: F811
    from evaluation.model_calls.engine import RAMP_MAX_S

    settings.EVALUATION_RAMP_SPACING_S = spacing = 0.004
    concurrency = 32
    with start_server_process(latency_s=0.2) as server:
        run = launch(endpoint_for(server, max_concurrency=concurrency))
        services.run_execute_in_process(run=run)
        stats = server.stats()
    first_wave = sorted(stats["arrivals"])[:concurrency]
    spread = first_wave[-1] - first_wave[0]
    planned = (concurrency - 1) * min(spacing, RAMP_MAX_S / concurrency)
    burst = max(sum(1 for b in first_wave if a <= b < a + 0.005) for a in first_wave)
    print(f"\nslow start: first wave of {concurrency} spread over {spread * 1000:.1f} ms "
          f"(planned {planned * 1000:.1f} ms), largest 5 ms burst {burst} requests, "
          f"peak in flight {stats['peak_in_flight']}")
    assert stats["peak_in_flight"] == concurrency
