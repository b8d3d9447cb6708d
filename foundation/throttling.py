"""Brute-force protection: password logins are locked out by django-axes, API tokens by a failure throttle.

- `LoginLockoutBackend` is axes' lockout check (first in AUTHENTICATION_BACKENDS): after
  AXES_FAILURE_LIMIT wrong passwords for one username from one address, every login of that
  pair is refused for AXES_COOLOFF_TIME, the right password included.
- `ThrottledTokenAuthentication` is DRF's token authentication that counts wrong tokens per
  client address (rate scope "token_failure"). DRF's own throttles run only after
  authentication succeeded, so a guessed token is answered 401 forever without this; once
  the limit is reached every wrong token from that address is answered 429 until the window
  has passed. A valid token is never refused: people behind the same address as a guesser
  (a campus NAT, a proxy) keep working. So the throttle slows no guessing down (a blocked
  address's tokens are still checked); what keeps a token safe is its 160 random bits, which
  no rate a server can answer finds. The 429 tells the guesser, and the logs, that it was seen.
- `JoinThrottle`: participants joining a study, per client address (STUDY_JOIN_RATE_PER_ADDRESS,
  generous enough for a class behind one NAT).
- `AnonRateThrottle`, `UserRateThrottle` (the API's rates, REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES) and the two
  above count in a `foundation.rate_log.SlidingLog`: read and changed in one atomic step, so that requests sent at
  once cannot drop each other's counts (DRF's own get-change-set can).
- `client_address`: REMOTE_ADDR, or the proxies' X-Forwarded-For entry only when settings say the
  app is behind them (BEHIND_PROXY, NUM_PROXIES) and it is an address; axes, the token throttle and the join
  throttle use it.
- `lockout_username`: the username axes counts a failed login under, cut to the 255 characters its tables hold (the
  login form sends any length on, and a longer one answered 500 instead of "wrong username or password").
"""
from __future__ import annotations

import ipaddress

from axes.backends import AxesStandaloneBackend
from django.utils.translation import gettext
from rest_framework import throttling
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.throttling import SimpleRateThrottle

from foundation.rate_log import SlidingLog


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR, or behind NUM_PROXIES trusted proxies (BEHIND_PROXY) the entry they
    appended to X-Forwarded-For (counted from the right: what a client sends itself comes first).
    The same rule as DRF's throttles (REST_FRAMEWORK["NUM_PROXIES"]); axes' AXES_CLIENT_IP_CALLABLE. An entry that is
    no address (a proxy set up otherwise: "unknown", "host:port") gives REMOTE_ADDR: axes stores the address in an
    `inet` column, which refuses anything else."""
    from django.conf import settings

    remote = request.META.get("REMOTE_ADDR", "")
    proxies = getattr(settings, "NUM_PROXIES", 0) if getattr(settings, "BEHIND_PROXY", False) else 0
    forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
    if not proxies or not forwarded:
        return remote
    entry = forwarded[-min(proxies, len(forwarded))]
    try:
        address = ipaddress.ip_address(entry)
    except ValueError:
        return remote
    return remote if getattr(address, "scope_id", None) else entry  # an IPv6 zone ("%eth0"): no inet either


def lockout_username(request, credentials=None):
    """AXES_USERNAME_CALLABLE: the username a login is counted under, found as axes finds it (the credentials, else the
    request's form field) and cut to axes' column (255 characters). Django's login form does not hold a username to
    its length, and a longer one made axes' write fail (a 500). No account has a name that long (150 at most), so
    two long names that share their first 255 characters share a count that can lock no one out of an account."""
    from axes.models import AccessAttempt
    from django.conf import settings

    field = settings.AXES_USERNAME_FORM_FIELD
    if credentials:
        username = credentials.get(field)
    else:
        username = None if request is None else getattr(request, "data", request.POST).get(field)
    if isinstance(username, str):
        return username[:AccessAttempt._meta.get_field("username").max_length]
    return username


class LoginLockoutBackend(AxesStandaloneBackend):
    """django-axes' lockout check for every login over HTTP.

    A login without a request (the test client's `login()`, a shell) comes from no client
    address that could be locked, so it goes on to the next backend; axes itself would raise.
    Every HTTP path (login page, admin login, DRF) passes the request.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class AtomicRateThrottle(SimpleRateThrottle):
    """DRF's rate throttle counted in a `SlidingLog`: the same rate and window, the count atomic."""

    _wait: float | None = None

    def allow_request(self, request, view):
        self._wait = None
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        allowed, self._wait = self.log().try_add(self.timer())
        return allowed

    def wait(self):
        """Seconds until the oldest request that counts leaves the window (for Retry-After)."""
        return self._wait

    def log(self) -> SlidingLog:
        return SlidingLog(self.cache, self.key, self.duration, self.num_requests)


class AnonRateThrottle(AtomicRateThrottle, throttling.AnonRateThrottle):
    """DRF's anonymous rate (scope "anon"), counted atomically."""


class UserRateThrottle(AtomicRateThrottle, throttling.UserRateThrottle):
    """DRF's per-user rate (scope "user"), counted atomically."""


class TokenFailureThrottle(AtomicRateThrottle):
    """Wrong API tokens per client address; only failures are recorded."""

    scope = "token_failure"

    def get_ident(self, request) -> str:
        return client_address(request)

    def get_cache_key(self, request, view=None):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def wait_if_blocked(self, request) -> float | None:
        """Seconds until this address may try a token again (at least a second), or None when it may now."""
        self.key = self.get_cache_key(request)
        wait = self.log().wait(self.timer())
        return None if wait is None else max(1.0, wait)

    def record_failure(self, request) -> None:
        """Count a wrong token (the newest ``num_requests`` failures are kept: enough to know the address is
        over its rate, and a guesser who goes on stays blocked)."""
        self.key = self.get_cache_key(request)
        self.log().add(self.timer())


class ThrottledTokenAuthentication(TokenAuthentication):
    """TokenAuthentication that answers an address's wrong tokens with 429 after too many of them; a valid token
    is accepted whatever the address's failures."""

    def authenticate(self, request):
        auth = get_authorization_header(request).split()
        if not auth or auth[0].lower() != self.keyword.lower().encode():
            return None  # no token offered: other authentication classes decide
        throttle = TokenFailureThrottle()
        wait = throttle.wait_if_blocked(request)
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            throttle.record_failure(request)
            if wait is not None:
                raise Throttled(wait=wait, detail=gettext("Too many invalid API tokens from this address; "
                                                          "try again later.")) from None
            raise


class JoinThrottle(AtomicRateThrottle):
    """Joins of a study per client address (settings.STUDY_JOIN_RATE_PER_ADDRESS, e.g. "300/hour"; empty: none).

    Counted in the shared cache (Redis when there is one), so every web process counts the same joins."""

    scope = "study_join"

    def get_rate(self):
        from django.conf import settings

        return getattr(settings, "STUDY_JOIN_RATE_PER_ADDRESS", "") or None

    def get_cache_key(self, request, view=None):
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}

    def wait_if_over(self, request) -> float | None:
        """Count this join; seconds to wait (at least 1) when the address is over its rate, else None."""
        if self.allow_request(request, None):
            return None
        return max(1.0, self.wait() or 1.0)


def lockout_response(request, original_response=None, credentials=None):
    """AXES_LOCKOUT_CALLABLE: the lockout page with the lock's length in minutes, HTTP 429."""
    from django.conf import settings
    from django.shortcuts import render

    minutes = round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "lockout_minutes": minutes}
    response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(minutes * 60)
    return response
