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
    help = ("Create the demo accounts that are missing (two annotators, one researcher). An account that exists is "
            "left as it is: its password, sessions and groups are never reset. For local use only.")

    def handle(self, *args, **options):
        User = get_user_model()
        for username, password, group, is_staff in DEMO_ACCOUNTS:
            if User.objects.filter(username=username).exists():
                self.stdout.write(f"kept {username} (exists; password unchanged)")
                continue
            user = User.objects.create_user(username=username, password=password, is_staff=is_staff)
            user.groups.add(Group.objects.get(name=group))
            self.stdout.write(f"created {username} / {password} ({group})")
