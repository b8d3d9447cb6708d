from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Items and curation"
    # Navigation offered to each role by the base layout and the home page.
    home_links = {
        "annotators": [(_("Work queue"), "annotation:queue"), (_("Adjudication"), "annotation:adjudication_list"),
                       (_("Review judge labels"), "annotation:belief_queues")],
        "researchers": [(_("Curation progress"), "annotation:progress"), (_("Agreement"), "annotation:agreement"),
                        (_("Judge trust"), "annotation:belief_trust_index")],
    }
