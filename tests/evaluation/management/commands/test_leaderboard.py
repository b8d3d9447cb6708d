"""`leaderboard`: its JSON is the API's document (cells, baselines, rejected items, scope), not the cells alone."""
import io
import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from evaluation.services import runs as services
from tests.support.items import import_items

pytestmark = pytest.mark.django_db


def test_the_json_format_prints_the_apis_document(detectbench_dir, compute, researcher):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=10)
    for model in ("first-option", "lexical"):
        compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin=model), method="naive", split="test",
                                    enqueue=False))
    api = APIClient()
    api.force_authenticate(researcher)
    for args, query in (([], {}), (["--reference", "naive@builtin:lexical", "--common"],
                                   {"reference": "naive@builtin:lexical", "common": "true"})):
        out = io.StringIO()
        call_command("leaderboard", "--split", "test", *args, "--format", "json", stdout=out)
        document = json.loads(out.getvalue())
        assert document == api.get("/api/evaluation/leaderboard/", {"split": "test", **query}).json()
        assert {"baselines", "rejected_items", "scope", "cells"} <= set(document) and len(document["cells"]) == 2
