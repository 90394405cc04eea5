from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.roles import ADMIN, RATER, REVIEWER, role_required
from workers.health import all_checks


@require_GET
@role_required(ADMIN, REVIEWER, RATER)
def status(request):
    checks = all_checks()
    code = 200 if all(check.ok for check in checks) else 503
    return render(request, "workers/status.html", {"checks": checks}, status=code)
