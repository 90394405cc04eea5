#!/usr/bin/env bash
# Runs the product locally until Ctrl-C: migrations, demo users and catalog, web server, workers.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
if [ -z "${DATABASE_URL:-}" ] || [ -z "${REDIS_URL:-}" ]; then
  urls="$($PY scripts/services.py urls)"  # a failure stops here (inside eval it would not)
  eval "$urls"
fi
export DEBUG="${DEBUG:-1}"
$PY manage.py migrate --noinput -v0
$PY manage.py collectstatic --noinput -v0
$PY manage.py create_demo_users
$PY manage.py load_demo_catalog

pids=()
cleanup() {
  trap - INT TERM EXIT
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  echo "Stopped the web server, the workers and beat (PostgreSQL and Redis keep running: make services-down)."
}
trap cleanup INT TERM EXIT

# One GPU-queue process per GPU (one here: the CPU), and a light queue for imports and exports.
.venv/bin/celery -A workers worker -Q gpu -c 1 -n gpu@%h --loglevel=INFO &
pids+=($!)
.venv/bin/celery -A workers worker -Q light -c 2 -n light@%h --loglevel=INFO &
pids+=($!)
# Training jobs ("Improve the model"): a process of their own, one job at a time.
.venv/bin/celery -A workers worker -Q train -c 1 -n train@%h --loglevel=INFO &
pids+=($!)
# The periodic reaper: celery beat sends the tasks of workers/celery.py's schedule to the light worker.
mkdir -p .data
.venv/bin/celery -A workers beat --schedule .data/celerybeat-schedule --loglevel=INFO &
pids+=($!)
echo "Slotwise is starting on http://localhost:8000  (Ctrl-C stops it)"
$PY manage.py runserver 0.0.0.0:8000 --noreload &
pids+=($!)
wait -n "${pids[@]}"
