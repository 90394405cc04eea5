from accounts.roles import roles_of


def roles(request):
    user_roles = roles_of(getattr(request, "user", None)) if hasattr(request, "user") else set()
    return {
        "user_roles": user_roles,
        "is_admin_role": "admin" in user_roles,
        "is_reviewer_role": "reviewer" in user_roles,
        "is_rater_role": "rater" in user_roles,
    }
