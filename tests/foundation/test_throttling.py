"""Brute force: wrong passwords lock a username+address out (django-axes), wrong API tokens are
throttled per address, every API has anonymous and per-user rates; the suite's own logins still work."""
from __future__ import annotations

import itertools
import time

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.core.cache import cache
from django.test import Client, RequestFactory, override_settings
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from foundation.rate_log import SlidingLog
from foundation.throttling import client_address

pytestmark = pytest.mark.django_db

_addresses = (f"198.51.100.{n}" for n in itertools.count(1))


def _address() -> str:
    """A fresh client address per use, so throttle counters of other tests never meet this one's."""
    return next(_addresses)


def _login(client, username, password, address):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


def _logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_thirty_wrong_passwords_then_the_right_one_is_refused(client, researcher):
    address = _address()
    statuses = [_login(client, "res1", f"wrong-{n}", address).status_code for n in range(30)]
    # The first failures show the form again; the failure that reaches the limit and every
    # attempt after it get the lockout page.
    limit = settings.AXES_FAILURE_LIMIT
    assert statuses[:limit - 1] == [200] * (limit - 1)
    assert set(statuses[limit - 1:]) == {429}
    response = _login(client, "res1", "pw-res1", address)
    assert response.status_code == 429
    text = response.content.decode()
    assert "Too many failed logins" in text and "15 minutes" in text
    assert 'class="topbar"' in text  # the site's layout, not a bare message
    assert response["Retry-After"] == "900"
    assert not _logged_in(client)


def test_the_lock_holds_for_the_username_and_address_only(client, researcher, annotator):
    address = _address()
    for n in range(settings.AXES_FAILURE_LIMIT):
        _login(client, "res1", f"wrong-{n}", address)
    assert _login(client, "res1", "pw-res1", address).status_code == 429
    # The same user from another address, and another user from the same address, may log in.
    assert _login(client, "res1", "pw-res1", _address()).status_code == 302
    client.logout()
    assert _login(client, "ann1", "pw-ann1", address).status_code == 302
    assert _logged_in(client)


def test_a_success_below_the_limit_resets_the_count(client, researcher):
    address = _address()
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _login(client, "res1", f"wrong-{n}", address).status_code == 200
    assert _login(client, "res1", "pw-res1", address).status_code == 302
    client.logout()
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _login(client, "res1", f"again-{n}", address).status_code == 200
    assert _login(client, "res1", "pw-res1", address).status_code == 302


def test_admin_login_is_locked_out_too(client, researcher):
    address = _address()
    url = reverse("admin:login")
    for n in range(settings.AXES_FAILURE_LIMIT):
        client.post(url, {"username": "res1", "password": f"wrong-{n}"}, REMOTE_ADDR=address)
    response = client.post(url, {"username": "res1", "password": "pw-res1"}, REMOTE_ADDR=address)
    assert response.status_code == 429 and not _logged_in(client)


def test_the_test_clients_own_logins_still_work(client, researcher):
    assert client.login(username="res1", password="pw-res1")
    assert client.get(reverse("home")).status_code == 200
    client.logout()
    assert not client.login(username="res1", password="wrong")
    client.force_login(researcher)
    assert client.get(reverse("home")).status_code == 200


def _api(token: str | None, address: str):
    api = APIClient(REMOTE_ADDR=address)
    if token:
        api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return api.get(reverse("studies_api:study_list"))


def test_bad_token_brute_force_is_throttled_but_the_right_token_from_that_address_still_works(researcher):
    """The guesser's failures are throttled (429 after 10 a minute), not the people behind the same address."""
    good = Token.objects.create(user=researcher).key
    address = _address()
    statuses = [_api("f" * 40 if n % 2 else f"{n:040x}", address).status_code for n in range(30)]
    assert statuses[:10] == [401] * 10
    assert set(statuses[10:]) == {429}
    accepted = _api(good, address)
    assert accepted.status_code == 200
    refused = _api("e" * 40, address)  # and the guesses go on being refused
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert _api(good, _address()).status_code == 200


def test_good_tokens_are_not_counted_as_failures(researcher):
    good = Token.objects.create(user=researcher).key
    address = _address()
    assert all(_api(good, address).status_code == 200 for _ in range(15))


def test_every_api_has_anonymous_and_per_user_rates():
    rest = settings.REST_FRAMEWORK
    assert rest["DEFAULT_THROTTLE_CLASSES"] == ["foundation.throttling.AnonRateThrottle",
                                                "foundation.throttling.UserRateThrottle"]
    assert set(rest["DEFAULT_THROTTLE_RATES"]) >= {"anon", "user", "token_failure"}
    assert rest["NUM_PROXIES"] == 0  # a client-sent X-Forwarded-For cannot choose its own bucket


def test_a_user_over_the_rate_gets_429(researcher):
    """Fill this user's window up to the configured rate (its log in the shared cache)."""
    good = Token.objects.create(user=researcher).key
    limit = int(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["user"].split("/")[0])
    assert _api(good, _address()).status_code == 200
    key = f"throttle_user_{researcher.pk}"
    log = SlidingLog(cache, key, 60, limit)
    for _ in range(limit):
        log.add(time.time())
    try:
        response = _api(good, _address())
        assert response.status_code == 429 and "Retry-After" in response
    finally:
        cache.delete(key)


def test_spoofed_forwarded_for_does_not_escape_the_token_throttle(researcher):
    address = _address()
    for n in range(10):
        APIClient(REMOTE_ADDR=address, HTTP_X_FORWARDED_FOR=f"203.0.113.{n}").get(
            reverse("studies_api:study_list"), HTTP_AUTHORIZATION=f"Token {n:040x}")
    spoof = APIClient(REMOTE_ADDR=address, HTTP_X_FORWARDED_FOR="203.0.113.99")
    response = spoof.get(reverse("studies_api:study_list"), HTTP_AUTHORIZATION="Token " + "e" * 40)
    assert response.status_code == 429


def test_client_address_behind_proxies_is_the_one_they_appended():
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.66, 203.0.113.5")
    assert client_address(request) == "10.0.0.2"  # no proxy declared: the header is the client's own words
    with override_settings(BEHIND_PROXY=True, NUM_PROXIES=1):
        assert client_address(request) == "203.0.113.5"
    with override_settings(BEHIND_PROXY=True, NUM_PROXIES=2):
        assert client_address(request) == "198.51.100.66"
    with override_settings(BEHIND_PROXY=True, NUM_PROXIES=1):
        assert client_address(RequestFactory().get("/", REMOTE_ADDR="10.0.0.2")) == "10.0.0.2"
    with override_settings(BEHIND_PROXY=False, NUM_PROXIES=1):  # X-Forwarded-For only counts behind a proxy
        assert client_address(request) == "10.0.0.2"


def test_lockout_counts_the_forwarded_client_behind_a_proxy(client, researcher):
    with override_settings(BEHIND_PROXY=True, NUM_PROXIES=1):
        for n in range(settings.AXES_FAILURE_LIMIT):
            client.post(reverse("login"), {"username": "res1", "password": f"w{n}"}, REMOTE_ADDR="10.0.0.9",
                        HTTP_X_FORWARDED_FOR=f"198.18.{n}.1, 192.0.2.200")
        locked = client.post(reverse("login"), {"username": "res1", "password": "pw-res1"}, REMOTE_ADDR="10.0.0.9",
                             HTTP_X_FORWARDED_FOR="192.0.2.200")
        assert locked.status_code == 429
        other = client.post(reverse("login"), {"username": "res1", "password": "pw-res1"}, REMOTE_ADDR="10.0.0.9",
                            HTTP_X_FORWARDED_FOR="192.0.2.201")
        assert other.status_code == 302


# ---- a username of any length: axes' tables hold 255 characters, and Django's login forms send any length on


@pytest.mark.parametrize("url_name", ["login", "admin:login"])
def test_every_username_length_from_1_to_1000_gets_the_normal_failed_login_answer(url_name):
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    url = reverse(url_name)
    assert client.get(url).status_code == 200
    token = client.cookies["csrftoken"].value  # the form's token, as the page gives it
    address = _address()
    wrong = []
    for n in range(1, 1001):
        name = (f"{n}-" + "u" * n)[:n]  # each its own within the first 255 characters: counted apart
        response = client.post(url, {"username": name, "password": "wrong", "csrfmiddlewaretoken": token},
                               REMOTE_ADDR=address)
        errors = response.context["form"].errors.as_data() if response.status_code == 200 else {}
        if [e.code for e in errors.get("__all__", [])] != ["invalid_login"]:
            wrong.append(f"{n}: {response.status_code}")
    assert not wrong, f"{len(wrong)} lengths answered otherwise: {wrong[:20]}"
    counted = AccessAttempt.objects.filter(ip_address=address).values_list("username", flat=True)
    assert len(counted) == 1000 and max(map(len, counted)) == 255


def test_a_long_username_is_locked_out_under_its_first_255_characters(client):
    address, name = _address(), "x" * 300
    limit = settings.AXES_FAILURE_LIMIT
    statuses = [_login(client, name, f"wrong-{n}", address).status_code for n in range(limit)]
    assert statuses == [200] * (limit - 1) + [429]
    assert AccessAttempt.objects.get(ip_address=address).username == name[:255]
    assert _login(client, name + "y", "wrong", address).status_code == 429  # the same first 255: the same count
    assert _login(client, "x" * 255, "wrong", address).status_code == 429


def test_a_forwarded_entry_that_is_no_address_counts_as_the_proxy_s_and_logins_still_answer():
    with override_settings(BEHIND_PROXY=True, NUM_PROXIES=1):
        for entry in ("unknown", "203.0.113.5:4711", "_hidden", "fe80::1%eth0"):  # PostgreSQL's inet has no zone
            request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=f"198.51.100.1, {entry}")
            assert client_address(request) == "10.0.0.2", entry
            response = Client().post(reverse("login"), {"username": "u", "password": "p"}, REMOTE_ADDR="10.0.0.3",
                                     HTTP_X_FORWARDED_FOR=entry)
            assert response.status_code == 200, entry
        request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="2001:db8::1")
        assert client_address(request) == "2001:db8::1"
