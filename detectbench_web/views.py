"""Project-level pages: the home page that routes each role to its area, and a health check."""
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render


@login_required
def home(request):
    # The links per role come from the roles context processor (AppConfig.home_links).
    return render(request, "home.html")


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
