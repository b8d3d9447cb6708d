"""Prolific (studies/prolific/): the API's base URL, its time-out, the NAME of the environment variable that holds
the webhook secret (the secret itself is only ever read from the environment), how old a signed webhook may be
before it counts as a replay, and how long a bonus sender holds a batch (longer than any call may take)."""
import os

PROLIFIC_API_URL = os.environ.get("PROLIFIC_API_URL", "https://api.prolific.com")
PROLIFIC_API_TIMEOUT_S = float(os.environ.get("PROLIFIC_API_TIMEOUT_S", "10"))
PROLIFIC_WEBHOOK_SECRET_ENV = os.environ.get("PROLIFIC_WEBHOOK_SECRET_ENV", "PROLIFIC_WEBHOOK_SECRET")
PROLIFIC_WEBHOOK_MAX_AGE_S = int(os.environ.get("PROLIFIC_WEBHOOK_MAX_AGE_S", "300"))
PROLIFIC_BONUS_CLAIM_S = int(os.environ.get("PROLIFIC_BONUS_CLAIM_S", "120"))
#: A bonus batch whose send ended without a known outcome is tried again (reconciled first) this many times, with
#: exponential backoff, by the worker; after that the periodic resume picks it up.
PROLIFIC_BONUS_SEND_RETRIES = int(os.environ.get("PROLIFIC_BONUS_SEND_RETRIES", "8"))
