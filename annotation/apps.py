from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Items and curation"
    # Navigation offered to each role by the base layout and the home page.
    home_links = {
        "annotators": [("Work queue", "annotation:queue"), ("Adjudication", "annotation:adjudication_list"),
                       ("Review judge labels", "annotation:belief_queues")],
        "researchers": [("Curation progress", "annotation:progress"), ("Agreement", "annotation:agreement"),
                        ("Judge trust", "annotation:belief_trust_index")],
    }
