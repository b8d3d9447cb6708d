"""The study link works without its trailing slash, and the new-study form starts with its required grace
period and bonus filled in (both had started empty although required)."""
import re

from django.urls import reverse

from studies.models import Study, StudyStatus


def test_a_study_link_without_its_trailing_slash_leads_to_the_study_with_its_query(client, make_study):
    make_study(slug="pilot", status=StudyStatus.OPEN)
    response = client.get("/s/pilot?PROLIFIC_PID=p1&STUDY_ID=s1&SESSION_ID=x1")
    assert response.status_code == 302
    assert response["Location"] == "/s/pilot/?PROLIFIC_PID=p1&STUDY_ID=s1&SESSION_ID=x1"
    assert client.get(response["Location"]).status_code == 200
    # Addresses that name nothing, with or without a slash, still get the participants' 404 page.
    for path in ("/s/pilot/nothing-here", "/s/pilot/a/unknown-token/extra", "/s/pilot/a/no-such-token/"):
        missing = client.get(path)
        assert missing.status_code == 404, path
        assert "Django tried these URL patterns" not in missing.content.decode()
    assert client.post("/s/pilot", {}).status_code == 404  # only GET/HEAD are redirected


def test_the_new_study_form_starts_with_the_default_grace_period_and_bonus(researcher_client, items):
    items(6)
    page = researcher_client.get(reverse("studies:study_create")).content.decode()
    assert re.search(r'name="grace_seconds" value="5"', page)
    assert re.search(r'name="bonus_per_correct" value="0(\.00)?"', page)
    # What the browser sends back unchanged is accepted.
    created = researcher_client.post(reverse("studies:study_create"), {
        "slug": "defaults", "title": "Defaults", "status": StudyStatus.DRAFT, "pool_split": "test", "pool_sample": "",
        "seed": 0, "per_participant": 3, "raters": 1, "time_limit_minutes": "30", "grace_seconds": "5",
        "language": "", "bonus_per_correct": "0", "bonus_currency": "GBP"})
    assert created.status_code == 302
    assert Study.objects.get(slug="defaults").grace_seconds == 5
