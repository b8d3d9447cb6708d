"""Simulated review rounds of the sampling-design tests: hand-outs as annotation.review_order.pick makes them."""
from __future__ import annotations

import heapq

from annotation import review_order as ro


def hand_out(labels: list[dict], handouts: int, share: float = 0.2) -> None:
    """Hand-outs 1..`handouts` of a queue in triage order with a uniform `share`, over heaps: the order stream takes
    the smallest triage key (belief, then the label's "tie" key, or its audit key "u" without one), the random
    stream the smallest "u". Each label handed out gets its "stream"."""
    by_key = [(ro.triage_key(x["belief"], x["u"] if x.get("tie") is None else x["tie"]), i)
              for i, x in enumerate(labels)]
    by_u = [(x["u"], i) for i, x in enumerate(labels)]
    heapq.heapify(by_key)
    heapq.heapify(by_u)
    for number in range(1, handouts + 1):
        stream = ro.handout_stream(ro.TRIAGE, number, share)
        heap = by_u if stream == ro.RANDOM else by_key
        while labels[heap[0][1]]["stream"] is not None:
            heapq.heappop(heap)
        labels[heapq.heappop(heap)[1]]["stream"] = stream
