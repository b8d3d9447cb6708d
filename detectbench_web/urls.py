from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from detectbench_web import views
from foundation.roles import IsAnnotator, admin_site_has_permission

admin.site.has_permission = admin_site_has_permission
admin.site.site_header = "DetectBench Web administration"

# Error pages with the site's layout (used when DEBUG is off).
handler403 = "detectbench_web.views.permission_denied"
handler404 = "detectbench_web.views.page_not_found"
handler500 = "detectbench_web.views.server_error"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("annotation/", include("annotation.urls")),
    path("s/", include("studies.urls_public")),
    path("studies/", include("studies.urls")),
    path("evaluation/", include("evaluation.urls")),
    path("api/annotation/", include("annotation.api_urls")),
    path("api/studies/", include("studies.api_urls")),
    path("api/evaluation/", include("evaluation.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(permission_classes=[IsAnnotator]), name="schema"),
    # The split view serves its start-up script as a file, so the page needs no inline script (CSP).
    # GET only: its OPTIONS answer had no template to render with (a 500).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema", permission_classes=[IsAnnotator],
                                                          http_method_names=["get", "head"]), name="swagger-ui"),
]
