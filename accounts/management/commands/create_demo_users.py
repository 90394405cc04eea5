"""Create one demo user per role (idempotent) and print their credentials."""

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand

from accounts.roles import ALL_ROLES

DEMO_PASSWORD = "slotwise-demo"
DEMO_USERS = {"alice": "admin", "bob": "reviewer", "carol": "rater", "dave": "rater"}


class Command(BaseCommand):
    help = "Create the demo users alice (admin), bob (reviewer), carol and dave (raters)."

    def handle(self, *args, **options):
        for role in ALL_ROLES:
            Group.objects.get_or_create(name=role)
        for username, role in DEMO_USERS.items():
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_password(DEMO_PASSWORD)
                user.is_staff = role == "admin"
                user.save()
            user.groups.add(Group.objects.get(name=role))
        self.stdout.write(f"Demo users (password for all: {DEMO_PASSWORD}):")
        for username, role in DEMO_USERS.items():
            self.stdout.write(f"  {username:<6} {role}")
