from rest_framework.routers import DefaultRouter

from . import apis

app_name = "evaluation_api"
router = DefaultRouter()
router.register("endpoints", apis.EndpointViewSet, basename="endpoint")
router.register("runs", apis.RunViewSet, basename="run")
urlpatterns = router.urls
