"""Where a credential may not be (no Django inside): an endpoint names the environment variable that holds its key,
and nothing else about it may carry a secret, since an endpoint's settings are stored, shown on pages and returned
by the API.

- `url_credentials`: a base URL with a user part (``http://user:pass@host``, ``http://sk-...@host``), a query
  parameter named like a credential (``api_key=``, ``key=``, ``token=``, ...) or anything shaped like a key.
- `params_credentials`: extra parameters (at any depth: ``extra_headers``, ``extra_query``, lists) with a name
  like a credential (``Authorization``, ``api_key``, ``x-api-key``, ...) or a value shaped like a key
  (``sk-...``, ``gsk_...``, ``hf_...``, ``xai-...``, ``Bearer ...``), whatever its name (``{"user": "sk-..."}``).
- `key_variable_problem`: the key variable must be an environment variable's NAME matching the configured pattern
  and not one the app itself reads (its settings and their variables: HOME, PATH, SECRET_KEY, DATABASE_URL, ...).

Each says where the credential is (the URL's part, the parameter's path), never the value.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit

#: Key shapes of the common providers, anywhere in a text: OpenAI / Anthropic / OpenRouter / DeepSeek (sk-),
#: Groq (gsk_), Hugging Face (hf_), xAI (xai-), Perplexity (pplx-), NVIDIA (nvapi-), Replicate (r8_), GitHub
#: (ghp_ ...), GitLab (glpat-), Slack (xox.-), Stripe-like (sk_live_ ...), Fireworks (fw_). The part after the
#: prefix must look random (a digit in it, or 20 characters and more), so that words such as "hf-inference" in
#: a URL's path are not taken for keys.
PREFIXED_KEY = re.compile(
    r"(?<![A-Za-z0-9])(?:sk|gsk|hf|xai|pplx|nvapi|r8|ghp|gho|ghu|ghs|ghr|github_pat|glpat|xox[abpors]|"
    r"sk_live|sk_test|rk_live|rk_test|fw|tgp_v1)[-_]([A-Za-z0-9_\-]{6,})")
#: Google API keys, AWS access key ids, JSON web tokens, and "Bearer <token>".
OTHER_KEY = re.compile(
    r"(?<![A-Za-z0-9])AIza[A-Za-z0-9_\-]{20,}"
    r"|(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9])eyJ[A-Za-z0-9_\-]{6,}\.eyJ[A-Za-z0-9_\-]{6,}"
    r"|(?i:\bbearer\s+[A-Za-z0-9._~+/=\-]{6,})")
#: Parameter, header and query names that carry credentials, compared without case, "-", "_" or ".".
CREDENTIAL_NAMES = frozenset({
    "key", "apikey", "token", "auth", "authorization", "proxyauthorization", "cookie", "setcookie", "password",
    "passwd", "pwd", "pass", "secret", "clientsecret", "bearer", "credential", "credentials", "signature", "sig",
    "accesstoken", "authtoken", "refreshtoken", "idtoken", "sessiontoken", "securitytoken", "privatekey",
    "accesskey", "secretkey", "subscriptionkey", "ocpapimsubscriptionkey", "xapikey", "xauthtoken", "xgoogapikey",
})
_NAME_PARTS = re.compile(r"[^a-z0-9]+")


def looks_like_key(value: str) -> bool:
    """True when ``value`` holds something shaped like an API key or a bearer credential."""
    if OTHER_KEY.search(value):
        return True
    return any(any(c.isdigit() for c in body) or len(body) >= 20 for body in PREFIXED_KEY.findall(value))


def credential_name(name: str) -> bool:
    """True for a parameter, header or query name that carries a credential (``api_key``, ``X-Api-Key``,
    ``Authorization``, ``access_token``, ``key``, ...); not for ``max_tokens`` or ``stop_token_ids``."""
    lowered = str(name).lower()
    squashed = _NAME_PARTS.sub("", lowered)
    if squashed in CREDENTIAL_NAMES:
        return True
    parts = [p for p in _NAME_PARTS.split(lowered) if p]
    if not parts:
        return False
    # ..._key / ..._token / ..._secret / ..._password (api_key, auth_token, client_secret), not ..._tokens
    if parts[-1] in {"key", "token", "secret", "password", "passwd", "credential", "credentials"}:
        return True
    return any(word in squashed for word in ("apikey", "secret", "password", "authorization", "credential",
                                             "accesstoken", "authtoken", "privatekey", "bearer"))


def url_credentials(url: str) -> list[str]:
    """Where ``url`` carries a credential: "its user name or password", "its query parameter 'api_key'",
    "its path, query or fragment (shaped like a key)"; [] when it carries none."""
    found = []
    try:
        parts = urlsplit(url)
        has_user = parts.username is not None or parts.password is not None
    except ValueError:  # an invalid URL: its own validation says so
        return []
    if has_user or "@" in parts.netloc:
        found.append("its user name or password (user:password@)")
    names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
    found += [f"its query parameter {name!r}" for name in dict.fromkeys(names) if credential_name(name)]
    if not found and looks_like_key(f"{parts.path} {parts.query} {parts.fragment}"):
        found.append("a part shaped like an API key")
    return found


def params_credentials(params, path: str = "") -> list[str]:
    """The paths in ``params`` (a JSON value) that carry a credential: a name like a credential, or a value (or a
    name) shaped like a key, at any depth. Paths name keys and list positions, never values."""
    found: list[str] = []
    if isinstance(params, dict):
        for name, value in params.items():
            here = f"{path}.{name}" if path else str(name)
            if credential_name(str(name)) or looks_like_key(str(name)):
                found.append(here)
            else:
                found += params_credentials(value, here)
    elif isinstance(params, (list, tuple)):
        for index, value in enumerate(params):
            found += params_credentials(value, f"{path}[{index}]")
    elif isinstance(params, str) and looks_like_key(params):
        found.append(path or "(the value)")
    return found


#: Variables of the process and its platform that are never an endpoint's key (they hold the process's own
#: paths, identity and infrastructure credentials).
PLATFORM_VARIABLES = re.compile(
    r"^(HOME|PATH|USER|USERNAME|LOGNAME|SHELL|PWD|OLDPWD|TMPDIR|TEMP|TMP|HOSTNAME|TERM|LANG|LANGUAGE|MAIL|EDITOR"
    r"|LC_[A-Z_]*|PYTHON[A-Z_]*|VIRTUAL_ENV|LD_[A-Z_]*|SSH_[A-Z_]*|XDG_[A-Z_]*|GPG_[A-Z_]*|KUBERNETES_[A-Z_]*"
    r"|AWS_[A-Z_]*|AZURE_[A-Z_]*|GOOGLE_APPLICATION_CREDENTIALS|VAULT_[A-Z_]*|GITHUB_TOKEN|GH_TOKEN|CI_[A-Z_]*"
    r"|ACTIONS_[A-Z_]*|RUNNER_[A-Z_]*|DOCKER_[A-Z_]*|GUNICORN_[A-Z_]*|WEB_CONCURRENCY|PORT|HOST)$")
#: The app's own secrets and connection strings, whatever the settings module calls them.
APP_SECRET_VARIABLES = re.compile(r"^(SECRET_KEY|DJANGO_.*|DATABASE_.*|REDIS_.*|CELERY_.*|PG[A-Z]*|POSTGRES_.*"
                                  r"|EMAIL_HOST_PASSWORD|PROLIFIC_.*)$")
#: What any variable name looks like (upper case only: a lower-case "name" such as gsk_abc123... is far more likely
#: a pasted key than a variable).
ENV_VAR_RE = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")


def key_variable_problem(name: str, *, pattern: str, app_names: Iterable[str] = ()) -> tuple[str, str] | None:
    """Why ``name`` cannot be an endpoint's key variable, as (kind, message), or None when it can.

    kind: "not_a_name" (it is not a variable's name: probably a pasted key; the message does not repeat it),
    "app_setting" (a setting of the app or a variable the app or its platform reads), "pattern" (the name does
    not match ``pattern``)."""
    if not name:
        return None
    if not ENV_VAR_RE.match(name) or looks_like_key(name):
        return "not_a_name", ("Give the NAME of an environment variable (upper-case letters, digits and _, e.g. "
                              "OPENAI_API_KEY), not the key itself.")
    if name in set(app_names) or APP_SECRET_VARIABLES.match(name) or PLATFORM_VARIABLES.match(name):
        return "app_setting", (f"{name} is one of the app's own settings, secrets or connection variables (or the "
                               "platform's); it is never sent to a model server. Use a variable of its own, e.g. "
                               "OPENAI_API_KEY.")
    if not re.fullmatch(pattern, name):
        return "pattern", (f"{name} is not a name for an API-key variable: use upper-case letters, digits and _ "
                           f"ending in _API_KEY, _KEY or _TOKEN, e.g. OPENAI_API_KEY (the names allowed match "
                           f"{pattern}).")
    return None




REDACTED = "REDACTED"


def url_without_credentials(url: str) -> str:
    """``url`` as it may be shown: without its user part, without query parameters named like credentials, and
    with anything shaped like a key replaced (for endpoints stored before credentials were refused)."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rsplit("@", 1)[-1]
    except ValueError:
        return REDACTED if looks_like_key(url) else url
    query = urlencode([(name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True)
                       if not credential_name(name)])
    shown = parts._replace(netloc=host, query=query).geturl()
    shown = OTHER_KEY.sub(REDACTED, shown)
    return PREFIXED_KEY.sub(lambda m: REDACTED if looks_like_key(m.group(0)) else m.group(0), shown)


def params_without_credentials(params):
    """``params`` as they may be shown: what `params_credentials` finds replaced by REDACTED."""
    if isinstance(params, dict):
        return {name: REDACTED if credential_name(str(name)) or looks_like_key(str(name))
                else params_without_credentials(value) for name, value in params.items()}
    if isinstance(params, (list, tuple)):
        return [params_without_credentials(value) for value in params]
    if isinstance(params, str) and looks_like_key(params):
        return REDACTED
    return params


__all__ = ["APP_SECRET_VARIABLES", "ENV_VAR_RE", "PLATFORM_VARIABLES", "REDACTED", "credential_name",
           "key_variable_problem", "looks_like_key", "params_credentials", "params_without_credentials",
           "url_credentials", "url_without_credentials"]
