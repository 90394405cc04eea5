from django.db.models.signals import post_migrate
from django.dispatch import receiver

from accounts.roles import ALL_ROLES


@receiver(post_migrate)
def create_role_groups(sender, **kwargs):
    if sender.name != "accounts":
        return
    from django.contrib.auth.models import Group

    for role in ALL_ROLES:
        Group.objects.get_or_create(name=role)
