"""Joins are throttled per address (STUDY_JOIN_RATE_PER_ADDRESS), generously enough for a class behind one NAT:
past the rate a join gets the participants' "too many joins" page (429, the layout, a way back) and no attempt;
other addresses join as before."""
from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import Client, override_settings
from django.urls import reverse
from rest_framework.throttling import SimpleRateThrottle

from studies.models import Attempt
from tests.conftest import REPO_DIR

pytestmark = pytest.mark.django_db

_addresses = (f"198.18.7.{n}" for n in itertools.count(1))


def _join(study, address: str, pid: str):
    return Client(REMOTE_ADDR=address).post(reverse("studies_public:join", args=[study.slug]),
                                            {"consent": "yes", "PROLIFIC_PID": pid, "SESSION_ID": "S"})


def test_the_default_rate_lets_a_class_behind_one_address_join():
    """The production default (the test settings raise it: every test joins from 127.0.0.1)."""
    code = ("import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'detectbench_web.settings.base');"
            "import django; django.setup(); from django.conf import settings as s;"
            "print(s.STUDY_JOIN_RATE_PER_ADDRESS)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_DIR, capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "DEBUG": "1", "VAR_DIR": "/tmp/join-rate"})
    assert out.returncode == 0, out.stderr
    count, seconds = SimpleRateThrottle.parse_rate(None, out.stdout.strip())
    assert count / seconds * 3600 >= 300
    assert settings.STUDY_JOIN_RATE_PER_ADDRESS  # a rate is set in every configuration


def test_joins_past_the_rate_from_one_address_get_a_clear_page_and_no_attempt(make_study):
    study = make_study(n_items=10, per_participant=1, raters=10)
    crowded, other = next(_addresses), next(_addresses)
    with override_settings(STUDY_JOIN_RATE_PER_ADDRESS="5/hour"):
        joined = [_join(study, crowded, f"NAT{n}") for n in range(5)]
        assert [r.status_code for r in joined] == [302] * 5
        refused = _join(study, crowded, "NAT5")
        assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
        body = refused.content.decode()
        assert "<html" in body and "participant-bar" in body and "Too many joins from your network" in body
        assert f'href="{reverse("studies_public:landing", args=[study.slug])}"' in body  # "Try again"
        assert _join(study, other, "ELSEWHERE").status_code == 302
    assert Attempt.objects.filter(study=study).count() == 6
    assert not Attempt.objects.filter(external_participant_id="NAT5").exists()
    # A client-sent X-Forwarded-For does not give it another bucket (no proxy declared).
    with override_settings(STUDY_JOIN_RATE_PER_ADDRESS="5/hour"):
        spoofed = Client(REMOTE_ADDR=crowded, HTTP_X_FORWARDED_FOR="203.0.113.9").post(
            reverse("studies_public:join", args=[study.slug]), {"consent": "yes", "PROLIFIC_PID": "SPOOF"})
    assert spoofed.status_code == 429
