from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from accounts.roles import ADMIN, RATER, REVIEWER, role_required, roles_of


@require_GET
@role_required(ADMIN, REVIEWER, RATER)
def home(request):
    """Send each person to the screen of their main job."""
    user_roles = roles_of(request.user)
    if ADMIN in user_roles or REVIEWER in user_roles:
        return redirect("catalog:products")
    if RATER in user_roles:
        return redirect("evaluation:my_campaigns")
    return render(request, "accounts/no_role.html")
