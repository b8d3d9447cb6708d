"""The screening aspects of a judge: paper Table 7's question-verification criteria by number (pure, no Django).

One definition for both apps: annotation stores and reviews a screening label per aspect and maps its verdict
to the criterion (annotation.models.Criterion, whose values these are, in its order); the judge
(evaluation.judge.specs) asks one verdict per aspect, in this order.
"""

#: Aspect (Table 7 numbering) -> the verification criterion it is (annotation.models.Criterion's value).
SCREENING_CRITERIA: dict[str, str] = {"1.1": "needs_media", "1.2": "heavy_math", "1.3": "no_daily_scenario",
                                      "1.4": "wrong_answer", "1.5": "bias"}
