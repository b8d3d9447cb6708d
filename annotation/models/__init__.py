"""Models of the annotation app, by sub-domain: the item store and the curation workflow.

A new sub-domain adds its module here and to the imports below (Django finds
models through this package).
"""
from annotation.models.belief import (
    BeliefLabel,
    BeliefLease,
    BeliefLeaseStatus,
    BeliefQueue,
    BeliefReview,
    BeliefSighting,
    HandoutStream,
    LabelSource,
    LabelStatus,
    LabelTask,
    ReviewOrder,
    ReviewVia,
)
from annotation.models.items import CONTENT_FIELDS, MAX_VERSION, Item, ItemRevision, QuestionType
from annotation.models.stages import ItemStatus, Stage
from annotation.models.workflow import (
    CRITERIA,
    Adjudication,
    AdjudicationStatus,
    AnnotatorLease,
    AnnotatorLeaseStatus,
    Criterion,
    Decision,
    Draft,
    ReviewAction,
    ReviewDecision,
    StageConfig,
    VerificationDecision,
)

__all__ = [
    "CONTENT_FIELDS", "MAX_VERSION", "Item", "ItemRevision", "ItemStatus", "QuestionType",
    "Stage", "CRITERIA", "Adjudication", "AdjudicationStatus", "AnnotatorLease", "AnnotatorLeaseStatus",
    "Criterion", "Decision", "Draft", "ReviewAction", "ReviewDecision", "StageConfig",
    "VerificationDecision",
    "BeliefLabel", "BeliefLease", "BeliefLeaseStatus", "BeliefQueue", "BeliefReview", "BeliefSighting", "HandoutStream",
    "LabelSource",
    "LabelStatus", "LabelTask", "ReviewOrder", "ReviewVia",
]
