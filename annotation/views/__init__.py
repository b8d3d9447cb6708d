"""Pages of the annotation app, one module per screen family.

items (browser, import), queue (work queue, leases), verification (and
adjudication), rewrite, clue_graph, review, history (and revert), researchers
(progress, agreement). urls.py names each view by its module.
"""
