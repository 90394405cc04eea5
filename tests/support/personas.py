from django.contrib.auth.models import Group, User

PASSWORD = "correct horse battery staple"


def make_persona(username: str, role: str) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD, is_staff=(role == "admin"))
    group, _ = Group.objects.get_or_create(name=role)
    user.groups.add(group)
    return user
