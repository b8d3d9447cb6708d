"""annotation.screening: the judge's screening aspects are the verification criteria, one definition for both apps."""
from annotation.models import Criterion
from annotation.screening import SCREENING_CRITERIA
from evaluation.judge.specs import SCREENING, get_task


def test_the_aspects_are_the_verification_criteria_in_their_order():
    assert list(SCREENING_CRITERIA.values()) == list(Criterion.values)
    assert all(Criterion(value).label.startswith(aspect + " ") for aspect, value in SCREENING_CRITERIA.items())


def test_the_judge_asks_one_verdict_per_aspect_and_keep():
    assert [a.aspect for a in get_task(SCREENING).aspects] == [*SCREENING_CRITERIA, "keep"]
