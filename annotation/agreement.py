"""Inter-annotator agreement statistics (pure Python, no Django).

* percent agreement of two raters: the share of items on which they gave the same label;
* Cohen's kappa (Cohen 1960) for a pair of raters: (p_o - p_e) / (1 - p_e), p_e from
  each rater's own label distribution;
* Fleiss' kappa (Fleiss 1971) for a fixed number n >= 2 of raters per item, from a
  table counts[item][category] whose rows each sum to n.

Kappa is undefined (returned as None) when the chance agreement p_e is 1, i.e. every
rating falls into one category.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence


def percent_agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Share of positions where the two raters agree (None for no items)."""
    if len(a) != len(b):
        raise ValueError("both raters must rate the same items")
    if not a:
        return None
    return sum(x == y for x, y in zip(a, b)) / len(a)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters over the same items."""
    observed = percent_agreement(a, b)
    if observed is None:
        return None
    n = len(a)
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa from counts[item][category]; every row must sum to the same n >= 2."""
    if not counts:
        return None
    n = sum(counts[0])
    if n < 2 or any(sum(row) != n for row in counts):
        raise ValueError("every item needs the same number (>= 2) of ratings")
    items = len(counts)
    categories = len(counts[0])
    p_j = [sum(row[j] for row in counts) / (items * n) for j in range(categories)]
    p_i = [(sum(c * c for c in row) - n) / (n * (n - 1)) for row in counts]
    p_bar = sum(p_i) / items
    p_e = sum(p * p for p in p_j)
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1 - p_e)


def counts_table(ratings: Sequence[Sequence[Hashable]], categories: Sequence[Hashable]) -> list[list[int]]:
    """Turn per-item lists of labels into Fleiss' counts table over `categories`."""
    position = {c: i for i, c in enumerate(categories)}
    table = []
    for labels in ratings:
        row = [0] * len(categories)
        for label in labels:
            row[position[label]] += 1
        table.append(row)
    return table


def agreement_summary(
    ratings: Mapping[Hashable, Mapping[str, Hashable]],
    *,
    categories: Sequence[Hashable],
) -> dict:
    """Agreement on one question (e.g. one criterion) from ratings[item][rater] = label.

    Returns percent agreement and Cohen's kappa per rater pair (over the items both
    rated), and Fleiss' kappa over the items with the most common number of raters.
    """
    raters = sorted({r for per_item in ratings.values() for r in per_item})
    pairs = []
    for i, first in enumerate(raters):
        for second in raters[i + 1:]:
            shared = [item for item, per_item in ratings.items() if first in per_item and second in per_item]
            a = [ratings[item][first] for item in shared]
            b = [ratings[item][second] for item in shared]
            if shared:
                pairs.append({"raters": (first, second), "items": len(shared),
                              "percent_agreement": percent_agreement(a, b), "cohen_kappa": cohen_kappa(a, b)})
    multi = [per_item for per_item in ratings.values() if len(per_item) >= 2]
    fleiss = None
    fleiss_items = 0
    if multi:
        n = Counter(len(per_item) for per_item in multi).most_common(1)[0][0]
        rows = [list(per_item.values()) for per_item in multi if len(per_item) == n]
        fleiss = fleiss_kappa(counts_table(rows, categories))
        fleiss_items = len(rows)
    agreeing = [len(set(per_item.values())) == 1 for per_item in multi]
    return {
        "items": len(multi),
        "percent_agreement": (sum(agreeing) / len(agreeing)) if agreeing else None,
        "fleiss_kappa": fleiss,
        "fleiss_items": fleiss_items,
        "pairs": pairs,
    }
