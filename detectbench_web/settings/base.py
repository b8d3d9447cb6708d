"""DetectBench Web settings, driven by the environment.

With no environment at all the app runs embedded: SQLite (WAL) under var/ and a
Celery broker on the filesystem under var/, so `make run` needs no services.
Set DATABASE_URL / REDIS_URL to use PostgreSQL (psycopg 3, connection pool) and Redis.
A `.env` file beside manage.py is read when present (python-dotenv); the process
environment wins over it. DEBUG is off unless set; without DEBUG a SECRET_KEY is required.
Every setting the apps read is declared here; nothing here touches the disk
(`manage.py prepare_var` / `make run` create the folders under var/).
"""
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from dotenv import load_dotenv

BASE_DIR = Path(__file__).resolve().parent.parent.parent
load_dotenv(BASE_DIR / ".env", override=False)
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set in the environment when DEBUG is off "
            "(`make run` keeps a local one in var/secret_key; or set DEBUG=1 to try the app; see .env.example)")
    SECRET_KEY = "dev-insecure-key-only-for-local-use-with-debug-on"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "template_partials",
    "annotation",
    "studies",
    "evaluation",
    "detectbench_web",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "foundation.database_faults.DatabaseFaultMiddleware",  # before all that reads the database: a GET runs again
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A NUL or a lone surrogate in the path, a query parameter, a form field or a JSON string: 400 before any view.
    "foundation.request_text.RequestTextMiddleware",
    "foundation.error_mapping.ServiceErrorMiddleware",
]

ROOT_URLCONF = "detectbench_web.urls"
WSGI_APPLICATION = "detectbench_web.wsgi.application"
ASGI_APPLICATION = "detectbench_web.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates", "DIRS": [BASE_DIR / "templates"], "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
                "detectbench_web.navigation.navigation_context",
            ],
        },
    },
    # The participant's question (studies/jinja2/, studies/page_templates.py), included by Django templates.
    {"BACKEND": "django.template.backends.jinja2.Jinja2", "DIRS": [], "APP_DIRS": True,
     "OPTIONS": {"environment": "studies.page_templates.environment"}},
]

# --- Database -------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    _db = dj_database_url.parse(DATABASE_URL)
    if _db["ENGINE"] == "django.db.backends.postgresql":
        _db["CONN_MAX_AGE"] = 0
        if env_bool("DATABASE_POOL", True):
            _db.setdefault("OPTIONS", {})["pool"] = {
                "min_size": 1, "max_size": int(os.environ.get("DATABASE_POOL_MAX", "10")), "timeout": 20,
            }
        _db["ENGINE"] = "foundation.postgresql"  # Django's, with a pool check that has no round trip
    DATABASES = {"default": _db}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=10000;",
                "transaction_mode": "IMMEDIATE",
            },
        }
    }
# A dead connection is never handed to a view: Django 5.2 makes this the pool's check (foundation.postgresql: one
# without a round trip when the socket has no news), else a health check; foundation.database_faults does the rest.
for _database in DATABASES.values():
    _database["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery ---------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
#: Seconds an unacknowledged chunk waits before the broker hands it to another worker. A running chunk's
#: heartbeat renews it (evaluation.execution.recovery), so it need not cover a chunk's duration: a killed worker's
#: chunk is redelivered within about a minute (this, plus the restore sweep below).
BROKER_VISIBILITY_TIMEOUT_S = int(os.environ.get("BROKER_VISIBILITY_TIMEOUT_S", "45"))
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": BROKER_VISIBILITY_TIMEOUT_S,
                                       # every worker looks for expired messages every 5 s (default: 100 s)
                                       "unacked_restore_interval": 5, "unacked_restore_throttle": 1}
else:
    _broker_dir = VAR_DIR / "celery-broker"
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),  # kombu's default is ./control, in whatever the cwd is
        "store_processed": False, "polling_interval": 0.02,  # a worker looks for tasks every 20 ms (default: 1 s)
    }
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# On a lost broker connection running chunks go on (their rows are upserted); a chunk whose message the
# broker lost is found by the reconciliation.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_WORKER_CONCURRENCY = int(os.environ.get("CELERY_WORKER_CONCURRENCY", "2"))  # a worker's processes
#: How often the periodic sweep closes study attempts whose deadline passed (seconds).
STUDIES_SWEEP_INTERVAL_S = float(os.environ.get("STUDIES_SWEEP_INTERVAL_S", "30"))
from detectbench_web.settings.prolific import *  # noqa: E402,F403 - Prolific's settings, in their own module

#: How often expired annotator leases are swept back to the queue (seconds).
ANNOTATION_LEASE_SWEEP_INTERVAL_S = float(os.environ.get("ANNOTATION_LEASE_SWEEP_INTERVAL_S", "300"))
#: Runs heal themselves (evaluation.execution.recovery): a chunk's heartbeat period; chunk retries on a Redis or
#: database error (exponential backoff with jitter, capped below the visibility timeout); how often the
#: reconciliation looks for work nothing is doing, how long an item must stay uncovered before it is
#: enqueued again, and how long a run with no chunk at all must write nothing before it is.
EVALUATION_CHUNK_HEARTBEAT_S = float(os.environ.get("EVALUATION_CHUNK_HEARTBEAT_S", "5"))
EVALUATION_CHUNK_RETRY_BACKOFF_S = 1
EVALUATION_CHUNK_RETRY_BACKOFF_MAX_S = min(30, max(1, BROKER_VISIBILITY_TIMEOUT_S // 2))
EVALUATION_CHUNK_MAX_RETRIES = int(os.environ.get("EVALUATION_CHUNK_MAX_RETRIES", "12"))
EVALUATION_RECONCILE_INTERVAL_S = float(os.environ.get("EVALUATION_RECONCILE_INTERVAL_S", "15"))
EVALUATION_RECONCILE_GRACE_S = float(os.environ.get("EVALUATION_RECONCILE_GRACE_S", "10"))
EVALUATION_RECONCILE_STALL_S = float(os.environ.get("EVALUATION_RECONCILE_STALL_S", "60"))
#: Workers ask for the reconciliation themselves too (healing does not depend on a beat process).
EVALUATION_RECONCILE_IN_WORKERS = env_bool("EVALUATION_RECONCILE_IN_WORKERS", True)
CELERY_BEAT_SCHEDULE = {
    "evaluation-reconcile-runs": {
        "task": "evaluation.tasks.reconcile_runs", "schedule": EVALUATION_RECONCILE_INTERVAL_S},
    "studies-sweep-expired-attempts": {
        "task": "studies.tasks.sweep_expired_attempts", "schedule": STUDIES_SWEEP_INTERVAL_S},
    "studies-resume-bonus-batches": {  # a bonus batch whose sender died is finished (reconciled, never paid twice)
        "task": "studies.tasks.resume_bonus_batches", "schedule": STUDIES_SWEEP_INTERVAL_S},
    "studies-report-screen-outs": {  # a screen-out whose report was never queued, or given up, is sent again
        "task": "studies.tasks.report_pending_screen_outs", "schedule": STUDIES_SWEEP_INTERVAL_S},
    # Stale "next item" leases come back on demand; the sweep keeps the progress board tidy.
    "annotation-expire-leases": {
        "task": "annotation.tasks.leases_expire_sweep", "schedule": ANNOTATION_LEASE_SWEEP_INTERVAL_S},
}

# --- Auth, i18n, static ---------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "foundation.roles.ResearcherPermissionBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
if DEBUG:
    STORAGES["staticfiles"] = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
MEDIA_ROOT = VAR_DIR / "media"
DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024

# --- Item import bounds (annotation.dataformat.Limits): a line past one is refused as FILE:LINE: field ---------
# A real DetectBench record has 4 options and at most ~2,000 characters in any field.
ITEM_IMPORT_MAX_OPTIONS = int(os.environ.get("ITEM_IMPORT_MAX_OPTIONS", "26"))
ITEM_IMPORT_MAX_CONTEXT_CHARS = int(os.environ.get("ITEM_IMPORT_MAX_CONTEXT_CHARS", "50000"))
ITEM_IMPORT_MAX_QUESTION_CHARS = int(os.environ.get("ITEM_IMPORT_MAX_QUESTION_CHARS", "5000"))
ITEM_IMPORT_MAX_OPTION_CHARS = int(os.environ.get("ITEM_IMPORT_MAX_OPTION_CHARS", "2000"))
ITEM_IMPORT_MAX_CLUE_GRAPH_CHARS = int(os.environ.get("ITEM_IMPORT_MAX_CLUE_GRAPH_CHARS", "50000"))  # each part
ITEM_IMPORT_MAX_FILE_BYTES = int(os.environ.get("ITEM_IMPORT_MAX_FILE_BYTES", str(50 * 1024 * 1024)))

# --- Security (production when DEBUG is off) ------------------------------
_secure = env_bool("SECURE_COOKIES", not DEBUG)
SESSION_COOKIE_SECURE = _secure
CSRF_COOKIE_SECURE = _secure
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
#: Behind a TLS-terminating proxy (BEHIND_PROXY=1) its X-Forwarded-Proto and X-Forwarded-For (NUM_PROXIES, default 1)
#: are honoured; without one they are a client's own words, and ignored.
BEHIND_PROXY = env_bool("BEHIND_PROXY", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_PROXY else None
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0" if DEBUG else "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# --- REST framework -------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "foundation.throttling.ThrottledTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["foundation.roles.IsResearcher"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "foundation.error_mapping.api_exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
# --- Security: brute-force protection (issue 11) ---------------------------
# Wrong passwords: django-axes locks a username+address pair out after AXES_FAILURE_LIMIT failures
# for AXES_COOLOFF_TIME (a page saying so, HTTP 429). Wrong API tokens: 429 per address after
# the "token_failure" rate (foundation.throttling). DRF throttles: anonymous and
# per-user rates on every API. Client address = REMOTE_ADDR unless BEHIND_PROXY, and then the entry that
# the NUM_PROXIES trusted proxies appended to X-Forwarded-For (a client-sent header must not pick its own bucket).
INSTALLED_APPS += ["axes"]
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]  # last: turns a locked-out login into the lockout page
AUTHENTICATION_BACKENDS = ["foundation.throttling.LoginLockoutBackend", *AUTHENTICATION_BACKENDS]
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "10"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False  # no start-up banner in every command's output
AXES_LOCKOUT_CALLABLE = "foundation.throttling.lockout_response"  # registration/locked_out.html, 429
NUM_PROXIES = int(os.environ.get("NUM_PROXIES") or "1") if BEHIND_PROXY else 0
if not BEHIND_PROXY and int(os.environ.get("NUM_PROXIES") or "0") > 0:
    raise ImproperlyConfigured("NUM_PROXIES is set but BEHIND_PROXY is not: set BEHIND_PROXY=1 behind a reverse "
                               "proxy, or NUM_PROXIES=0 without one")
AXES_CLIENT_IP_CALLABLE = "foundation.throttling.client_address"  # DRF's rule, for both
AXES_USERNAME_CALLABLE = "foundation.throttling.lockout_username"  # cut to axes' column: a long one was a 500
REST_FRAMEWORK.update({
    "DEFAULT_THROTTLE_CLASSES": [
        "foundation.throttling.AnonRateThrottle",  # DRF's, counted atomically (foundation/rate_log.py)
        "foundation.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_THROTTLE_ANON", "60/minute"),
        "user": os.environ.get("API_THROTTLE_USER", "1200/minute"),
        "token_failure": os.environ.get("API_THROTTLE_TOKEN_FAILURE", "10/minute"),
    },
    "NUM_PROXIES": NUM_PROXIES,
})
# Throttle counters must be shared by all web processes: Redis when there is one, each call bounded (README, Hardening).
_redis_s = float(os.environ.get("CACHE_REDIS_TIMEOUT_S", "2"))
CACHES = {"default": {"BACKEND": "foundation.redis_cache.RedisCache", "LOCATION": REDIS_URL, "KEY_PREFIX": "detectbench",
                      "OPTIONS": {"socket_connect_timeout": _redis_s, "socket_timeout": _redis_s}}} if REDIS_URL else \
    {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
#: Study joins per client address (a class behind one NAT is one address; "N/hour", empty = none); past it a 429 page.
STUDY_JOIN_RATE_PER_ADDRESS = os.environ.get("STUDY_JOIN_RATE_PER_ADDRESS", "300/hour")
# --- end of brute-force protection ------------------------------------------

# --- Security: Content-Security-Policy (issue 11; django-csp 4 format) ----------
# Only this site's own files: htmx and the apps' scripts and styles are served from static.
# No template holds an inline script or event handler (tests/project/test_content_security_policy.py fails on
# a new one), so scripts come only from this site. Styles keep 'unsafe-inline': the matplotlib
# figures are embedded as SVG markup styled by style="..." attributes (styles cannot run code).
CSP_INLINE_SCRIPTS_TODAY = env_bool("CSP_INLINE_SCRIPTS_TODAY", False)
CSP_INLINE_STYLES_TODAY = env_bool("CSP_INLINE_STYLES_TODAY", True)
MIDDLEWARE.insert(MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
                  "foundation.content_security.ContentSecurityPolicyMiddleware")  # outermost: error and lockout pages get it too
INSTALLED_APPS += ["csp", "drf_spectacular_sidecar"]  # sidecar: Swagger UI from static files, not a CDN
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", *(["'unsafe-inline'"] if CSP_INLINE_SCRIPTS_TODAY else [])],
        "style-src": ["'self'", *(["'unsafe-inline'"] if CSP_INLINE_STYLES_TODAY else [])],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
# --- end of Content-Security-Policy -------------------------------------------

SPECTACULAR_SETTINGS = {
    "TITLE": "DetectBench Web API",
    "DESCRIPTION": "Items, curation, studies and model evaluation for DetectBench.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Security (issue 11): Swagger UI from the sidecar's static files (offline, CSP 'self').
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Offline: Swagger UI's default validatorUrl loads a badge from validator.swagger.io on any non-local host.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    # `check --deploy` without warnings (issue 11): "status" choice sets spectacular cannot name by
    # itself (drf_spectacular.W001, "StatusD9eEnum"); runs and judge runs share RunStatus.
    "ENUM_NAME_OVERRIDES": {"StudyStatusEnum": "studies.models.StudyStatus",
                            "RunStatusEnum": "evaluation.models.RunStatus",
                            "QuestionTypeEnum": "annotation.item_facts.QUESTION_TYPES",
                            "MethodEnum": "evaluation.prompting.methods.METHOD_CHOICES",
                            "ReviewOrderEnum": "annotation.models.belief.ReviewOrder"},
}

# Logging: one handler, on the root logger. Django's own "django" logger had a console handler of
# its own and also passed its records up to the root, so every line appeared twice; here it has
# none and only propagates (the dev server's request lines, "django.server", keep their own
# handler and do not propagate: shown once too). A refused request (4xx: a 403 from a role check, a 404) is one line
# without its traceback; a 500 keeps it (foundation.log_filters).
LOG_LEVEL = os.environ.get("LOG_LEVEL", "WARNING")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"no_client_error_traceback": {"()": "foundation.log_filters.WithoutClientErrorTraceback"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain",
                             "filters": ["no_client_error_traceback"]}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # Django's INFO lines (the dev server's reloader) in a DEBUG demo, as Django shows them by default.
    "loggers": {"django": {"handlers": [], "level": os.environ.get("LOG_LEVEL", "INFO" if DEBUG else "WARNING"),
                           "propagate": True}},
}

# --- evaluation (read by evaluation.execution; the pure limiter/engine get them as arguments) ---------------
#: Worker processes in all (several workers: their sum): a run's tasks are split evenly over them.
EVALUATION_WORKER_PROCESSES = max(1, int(os.environ.get("EVALUATION_WORKER_PROCESSES", str(CELERY_WORKER_CONCURRENCY))))
#: Seconds a Redis limiter lease lives unrenewed: the slots of a killed worker come back after this.
EVALUATION_LIMITER_LEASE_S = float(os.environ.get("EVALUATION_LIMITER_LEASE_S", "10"))
#: The circuit breaker: a chunk stops and its run fails after this many endpoint failures in a row (connection refused,
#: DNS, 401/403/404, unknown model) or this many seconds of nothing but them (evaluation.execution.chunks).
EVALUATION_BREAKER_THRESHOLD = int(os.environ.get("EVALUATION_BREAKER_THRESHOLD", "20"))
EVALUATION_BREAKER_WINDOW_S = float(os.environ.get("EVALUATION_BREAKER_WINDOW_S", "30"))
#: Slow start: the first requests of a chunk are launched this many seconds apart (0 = all at once).
EVALUATION_RAMP_SPACING_S = float(os.environ.get("EVALUATION_RAMP_SPACING_S", "0.0002"))
#: Slot files of the embedded-mode limiter (used when REDIS_URL is empty); created on first use.
EVALUATION_LIMITER_DIR = Path(os.environ.get("EVALUATION_LIMITER_DIR", VAR_DIR / "limiter"))
#: An endpoint's key variable (a NAME, never the key) matches this and is no setting or variable the app reads.
EVALUATION_API_KEY_ENV_PATTERN = os.environ.get("EVALUATION_API_KEY_ENV_PATTERN", r"[A-Z][A-Z0-9_]*_(API_KEY|KEY|TOKEN)")
#: Restricted (unless DEBUG), endpoints reach public addresses and these networks only (CIDRs; a local llama.cpp or
#: vLLM: 127.0.0.0/8,::1/128, as `make run` sets); evaluation.model_calls.destinations, checked by evaluation's app.
EVALUATION_ENDPOINT_RESTRICTED = env_bool("EVALUATION_ENDPOINT_RESTRICTED", not DEBUG)
EVALUATION_ENDPOINT_ALLOWED_NETWORKS = env_list("EVALUATION_ENDPOINT_ALLOWED_NETWORKS")
# --- end of evaluation -------------------------------------------------------
