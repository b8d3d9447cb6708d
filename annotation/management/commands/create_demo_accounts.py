from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from foundation.roles import ANNOTATORS, RESEARCHERS

DEMO_ACCOUNTS = (
    # username, password, group, is_staff
    ("annotator", "annotator-demo", ANNOTATORS, False),
    ("annotator2", "annotator-demo", ANNOTATORS, False),
    ("researcher", "researcher-demo", RESEARCHERS, True),
)


class Command(BaseCommand):
    help = "Create demo accounts (one or two annotators, one researcher). For local use only."

    def handle(self, *args, **options):
        User = get_user_model()
        for username, password, group, is_staff in DEMO_ACCOUNTS:
            user, created = User.objects.get_or_create(username=username)
            user.set_password(password)
            user.is_staff = is_staff
            user.is_superuser = is_staff  # the demo researcher may use every admin page
            user.save()
            user.groups.add(Group.objects.get(name=group))
            self.stdout.write(f"{'created' if created else 'updated'} {username} / {password} ({group})")
