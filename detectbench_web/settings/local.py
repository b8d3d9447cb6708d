"""Settings for `make run` (scripts/run.sh): production mode on this machine, with nothing to configure.

DEBUG is off, so a newcomer meets the app's own 404 and 500 pages (never Django's technical pages with the URL
list) and static files come from whitenoise's collected, hashed copies (`manage.py setup_demo` collects them).
The secret key is the local one that scripts/run.sh generates once into var/secret_key (mode 0600) and keeps;
SECRET_KEY in the environment (or .env) wins. Plain HTTP on this machine: no secure-only cookies, no redirect
to HTTPS. Anything set in the environment or .env still wins over these defaults.
"""
import os
from pathlib import Path

from dotenv import load_dotenv

_BASE_DIR = Path(__file__).resolve().parent.parent.parent
load_dotenv(_BASE_DIR / ".env", override=False)  # .env first, so that the defaults below do not hide it
_VAR_DIR = Path(os.environ.get("VAR_DIR", _BASE_DIR / "var"))
#: The local secret key's file (written by scripts/run.sh; settings never touch the disk but to read it).
SECRET_KEY_FILE = _VAR_DIR / "secret_key"

os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECURE_COOKIES", "0")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("SECURE_HSTS_SECONDS", "0")
os.environ.setdefault("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
# Model endpoints on this machine (a local llama.cpp or vLLM) stay allowed (DEBUG off refuses loopback, private
# and link-local addresses unless listed).
os.environ.setdefault("EVALUATION_ENDPOINT_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
if not os.environ.get("SECRET_KEY") and SECRET_KEY_FILE.is_file():
    os.environ["SECRET_KEY"] = SECRET_KEY_FILE.read_text(encoding="ascii").strip()

from detectbench_web.settings.base import *  # noqa: E402,F401,F403

# The embedded broker's URL names a host: without one kombu warns "No hostname was supplied" on every connection
# (the worker's and each task sent), which is nothing anyone has to do about.
if CELERY_BROKER_URL == "filesystem://":  # noqa: F405
    CELERY_BROKER_URL = "filesystem://localhost//"

# Hashed names as in production, without the compressed copies: whitenoise serves the files as they are, and
# compressing them (a dozen seconds) would only hold up a newcomer's first start on this machine.
if not DEBUG:  # noqa: F405
    STORAGES["staticfiles"] = {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"}  # noqa: F405

# SQLite ignores the non-key (INCLUDE) columns of evaluation.Result's covering index, which only PostgreSQL
# uses: Django's models.W040 says so on every start, and there is nothing for the person running the demo to do
# about it. Silenced on SQLite only; on PostgreSQL the check stays (and does not fire).
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
