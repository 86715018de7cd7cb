"""The serving figure: p99 against what a fair queue gives N back-to-back clients at the measured rate."""

from build_scripts.measure.bench_load import starvation


def test_a_fair_queue_scores_one_and_a_starved_tail_scores_higher():
    # 32 clients at 128 calls/s: each call takes 250 ms on average however fair the server is.
    fair = {"rps": 128.0, "p99": 250.0}
    starved = {"rps": 128.0, "p99": 1000.0}
    assert starvation(fair, 32) == 1.0
    assert starvation(starved, 32) == 4.0
