import pytest

from annotation.models import ItemStatus
from annotation.services.belief import belief_queue_for
from tests.annotation.workflow_support import make_items


@pytest.fixture
def items(db):
    return make_items(5, status=ItemStatus.PUBLISHED)


@pytest.fixture
def queue(db):
    return belief_queue_for(name="judge-a", order="triage", random_share=0.2, blind=False)  # sighted review
