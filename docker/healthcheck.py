"""Container health check of the web service: GET /healthz (answers only when the database does).

Sends the first ALLOWED_HOSTS name as Host and X-Forwarded-Proto: https (what the TLS proxy in
front sends), so neither host validation nor the HTTPS redirect turns the check into a failure.
Exit 0 when healthy.
"""
import os
import sys
import urllib.request

url = os.environ.get("HEALTHCHECK_URL", "http://127.0.0.1:8000/healthz")
host = (os.environ.get("ALLOWED_HOSTS", "localhost").split(",")[0].strip().lstrip(".") or "localhost")
if host == "*":
    host = "localhost"
request = urllib.request.Request(url, headers={"Host": host, "X-Forwarded-Proto": "https"})
try:
    with urllib.request.urlopen(request, timeout=5) as response:
        sys.exit(0 if response.status == 200 else 1)
except Exception as exc:  # any failure is "unhealthy"
    print(f"unhealthy: {exc}", file=sys.stderr)
    sys.exit(1)
