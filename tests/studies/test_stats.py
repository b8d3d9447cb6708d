"""Agreement statistics (pure), checked against textbook numbers."""
import pytest

from studies.stats import accuracy_summary, category_table, fleiss_kappa, histogram_svg, majority, median


def test_fleiss_kappa_textbook_example():
    """Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories -> kappa = 0.210."""
    table = [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-4)


def test_fleiss_kappa_perfect_and_undefined():
    assert fleiss_kappa(category_table([[0, 0, 0], [1, 1, 1], [2, 2, 2]], 4)) == pytest.approx(1.0)
    assert fleiss_kappa(category_table([[0, 0, 0], [0, 0, 0]], 4)) is None
    assert fleiss_kappa([]) is None
    with pytest.raises(ValueError):
        fleiss_kappa([[3, 0], [1, 0]])


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
