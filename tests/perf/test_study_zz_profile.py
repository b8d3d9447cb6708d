import cProfile, pstats, re, time, io
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from studies.services import attempt_start, study_create, study_join
from tests.studies.conftest import import_items

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

def test_profile(detectbench_dir):
    ids = import_items(detectbench_dir, 250)
    study = study_create(slug="prof", item_ids=ids, per_participant=15, raters=6, time_limit_seconds=3600, status="open", completion_code="X")
    attempts = [attempt_start(attempt_id=study_join(study=study, participant_id=f"p{i}").pk) for i in range(40)]
    client = Client()
    # warm
    for a in attempts[:2]:
        client.get(reverse("studies_public:attempt", args=[a.token]))
    def page(a):
        return client.get(reverse("studies_public:attempt", args=[a.token]))
    def answer(a):
        html = page(a).content.decode()
        pos = re.search(r'data-position="(\d+)"', html).group(1)
        return client.post(reverse("studies_public:answer", args=[a.token]), {"position": pos, "chosen_option": 0, "confidence": "3", "highlights": "[]"}, HTTP_HX_REQUEST="true")
    N = 200
    t = time.perf_counter(); c0 = time.process_time()
    for i in range(N): page(attempts[i % 40])
    print(f"\nquestion page: wall {(time.perf_counter()-t)/N*1000:.2f} ms cpu {(time.process_time()-c0)/N*1000:.2f} ms")
    # answer submit timing only posts
    tot = 0.0; cpu = 0.0
    for i in range(100):
        a = attempts[i % 40]
        html = page(a).content.decode()
        pos = re.search(r'data-position="(\d+)"', html).group(1)
        t = time.perf_counter(); c0 = time.process_time()
        r = client.post(reverse("studies_public:answer", args=[a.token]), {"position": pos, "chosen_option": 0, "confidence": "3", "highlights": "[]"}, HTTP_HX_REQUEST="true")
        tot += time.perf_counter()-t; cpu += time.process_time()-c0
        assert r.status_code in (200, 204), r.status_code
    print(f"answer submit: wall {tot/100*1000:.2f} ms cpu {cpu/100*1000:.2f} ms")
    pr = cProfile.Profile(); pr.enable()
    for i in range(200): page(attempts[i % 40])
    pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(45); open("/tmp/prof/page.txt","w").write(s.getvalue())
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(40); open("/tmp/prof/page_tot.txt","w").write(s.getvalue())
    with CaptureQueriesContext(connection) as q: page(attempts[5])
    print("page queries", len(q.captured_queries)); [print("  ", x["sql"][:200]) for x in q.captured_queries]
