from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.roles import ADMIN, role_required
from health.checks import all_checks


@require_GET
@role_required(ADMIN)  # it names hosts, queues and workers: for the people who run the system
def status(request):
    checks = all_checks()
    code = 200 if all(check.ok for check in checks) else 503
    return render(request, "health/status.html", {"checks": checks}, status=code)
