"""Summary statistics of human studies (pure)."""
import pytest

from annotation.agreement import counts_table, fleiss_kappa
from studies.stats import accuracy_summary, histogram_svg, majority, median


def test_kappa_over_answer_options_uses_the_shared_implementation():
    """Studies tabulate chosen options per item; Fleiss' kappa itself is annotation.agreement's
    (checked against the textbook example in tests/annotation/test_agreement.py)."""
    assert fleiss_kappa(counts_table([[0, 0, 0], [1, 1, 1], [2, 2, 2]], range(4))) == pytest.approx(1.0)
    assert fleiss_kappa(counts_table([[0, 0, 0], [0, 0, 0]], range(4))) is None
    assert fleiss_kappa([]) is None


def test_accuracy_summary_like_table_3():
    summary = accuracy_summary([(14, 15), (8, 15), (11, 15), (0, 0)])
    assert summary.n == 3
    assert summary.top == pytest.approx(14 / 15)
    assert summary.lowest == pytest.approx(8 / 15)
    assert summary.average == pytest.approx(33 / 45)


def test_majority_and_median_and_svg():
    assert majority([1, 1, 2]) == 1
    assert majority([1, 2, 3]) is None
    assert median([3.0, 1.0, 2.0]) == 2.0
    svg = histogram_svg([1.0, 2.0, 2.5, 30.0], label="t")
    assert svg.startswith("<svg") and svg.count("<rect") == 12
