import gc

from django.apps import AppConfig


class DetectbenchWebConfig(AppConfig):
    name = "detectbench_web"

    def ready(self) -> None:
        """The apps are loaded: what exists now lives as long as the process. Freeze it (the collector never walks
        it again, and forked workers share its pages) and turn collection back on (off since the package was
        imported, see detectbench_web/__init__.py). The pure packages' words translate through Django's gettext, and
        `{% translate "literal" %}` keeps its rendered words per language (foundation.cached_i18n)."""
        from django.utils.translation import gettext, ngettext

        from foundation import cached_i18n
        from foundation.words import set_translator

        set_translator(gettext, ngettext)
        cached_i18n.install()
        gc.freeze()
        gc.enable()
