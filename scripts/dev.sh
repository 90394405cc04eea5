#!/usr/bin/env bash
# Runs the product locally until Ctrl-C: migrations, demo users and catalog, web server, workers.
# The web server, the workers and beat write to one log file; the terminal ends, once the web server
# answers, with where to go and who to sign in as.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PORT="${SLOTWISE_WEB_PORT:-8000}"
URL="http://localhost:$PORT"
LOG=.data/dev.log
# Generous: the web server answers within seconds, but a busy machine can take a minute to import Django.
START_LIMIT_SECONDS="${SLOTWISE_START_LIMIT_SECONDS:-180}"

answers() { $PY - "$1" <<'EOF'
import http.client
import sys
import urllib.error
import urllib.request

try:
    urllib.request.urlopen(sys.argv[1] + "/login/", timeout=5)
except urllib.error.HTTPError:
    pass  # an error page is an answer too: the server is up
except (OSError, http.client.HTTPException):  # nothing listens yet, or it speaks no HTTP
    sys.exit(1)
EOF
}

if answers "$URL"; then  # else the wait below would take someone else's server for ours
  echo "Something already answers on $URL (another make dev?): stop it, or choose another port: SLOTWISE_WEB_PORT=8001 make dev" >&2
  exit 1
fi
if [ -z "${DATABASE_URL:-}" ] || [ -z "${REDIS_URL:-}" ]; then
  urls="$($PY scripts/services.py urls)"  # a failure stops here (inside eval it would not)
  eval "$urls"
fi
export DEBUG="${DEBUG:-1}"
$PY manage.py migrate --noinput -v0
$PY manage.py collectstatic --noinput -v0
users="$($PY manage.py create_demo_users)"  # printed last, once the server answers
$PY manage.py load_demo_catalog

mkdir -p .data
: >"$LOG"  # this start's log only
pids=()
cleanup() {
  trap - EXIT
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  echo "Stopped the web server, the workers and beat (PostgreSQL and Redis keep running: make services-down)."
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # Ctrl-C: stop them all (cleanup, on the way out)

# One GPU-queue process per GPU (one here: the CPU), and a light queue for imports and exports.
.venv/bin/celery -A workers worker -Q gpu -c 1 -n gpu@%h --loglevel=INFO >>"$LOG" 2>&1 &
pids+=($!)
.venv/bin/celery -A workers worker -Q light -c 2 -n light@%h --loglevel=INFO >>"$LOG" 2>&1 &
pids+=($!)
# Training jobs ("Improve the model"): a process of their own, one job at a time.
.venv/bin/celery -A workers worker -Q train -c 1 -n train@%h --loglevel=INFO >>"$LOG" 2>&1 &
pids+=($!)
# The periodic reaper: celery beat sends the tasks of workers/celery.py's schedule to the light worker.
.venv/bin/celery -A workers beat --schedule .data/celerybeat-schedule --loglevel=INFO >>"$LOG" 2>&1 &
pids+=($!)
$PY manage.py runserver "0.0.0.0:$PORT" --noreload >>"$LOG" 2>&1 &
web=$!
pids+=($web)

echo "Starting the web server, the workers and beat (their log: $LOG) ..."
started=$SECONDS
until answers "$URL"; do
  if ! kill -0 "$web" 2>/dev/null; then
    echo "The web server stopped before it answered on $URL. The end of $LOG:" >&2
    tail -n 20 "$LOG" >&2
    exit 1
  fi
  if ((SECONDS - started >= START_LIMIT_SECONDS)); then
    echo "The web server did not answer on $URL within $START_LIMIT_SECONDS s. The end of $LOG:" >&2
    tail -n 20 "$LOG" >&2
    exit 1
  fi
  sleep 1
done
echo
echo "Logs of the web server, the workers and beat: $LOG  (tail -f $LOG)"
echo "$users"
echo "Slotwise is running on $URL  (Ctrl-C stops it)"
wait -n "${pids[@]}" || true
echo "A process stopped; the end of $LOG:" >&2
tail -n 20 "$LOG" >&2
exit 1
