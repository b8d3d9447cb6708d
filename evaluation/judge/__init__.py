"""The LLM judge: judge configurations and runs that propose belief labels for annotators to review.

Pure pieces (no Django): ``parsing`` (the strict JSON reply), ``beliefs`` (logprob,
sampled, verbal), ``specs`` (the three tasks), ``templates`` (prompt files under
evaluation/judge_templates/), ``builtin`` (the offline judge), ``drafts`` (clue-graph
drafts anchored in the context), ``clients`` (log-probabilities from the chat API),
``solving`` (one judgement, run by the evaluation engine). Django side: ``models``,
``services``, ``selectors``, ``execution``, ``apis``. Labels are written only through
annotation's belief-label service.
"""
