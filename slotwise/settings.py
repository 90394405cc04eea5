"""Django settings, read from the environment (see README: Configuration)."""

import sys
from datetime import timedelta
from pathlib import Path

from extraction.engine.base_model import BASES, DEFAULT_BASE
from extraction.engine.splits import DEFAULT_DATA
from scripts.local_services.ports import local_database_url, local_redis_url
from slotwise.env import (
    ImproperlyConfiguredEnv,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_str,
    parse_database_url,
)
from slotwise.machine import memory_mb
from slotwise.processes import needs_secret_key, refuse_a_weak_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", default=False)
_INSECURE_DEV_KEY = "dev-only-insecure-key-change-me-in-production-0123456789abcdef"
# Required to serve (runserver, gunicorn, celery); other manage.py commands (ab_stats, export_gold,
# migrate ...) run without it, with an empty key that Django refuses to sign anything with.
_SECRET_KEY_DEFAULT = _INSECURE_DEV_KEY if DEBUG else (None if needs_secret_key(sys.argv) else "")
SECRET_KEY = env_str("SECRET_KEY", _SECRET_KEY_DEFAULT)
# Django's deploy check only warns about a weak key; a server or worker in production refuses it.
if not DEBUG and needs_secret_key(sys.argv):
    refuse_a_weak_secret_key(SECRET_KEY)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "django_htmx",
    "accounts",
    "catalog",
    "extraction",
    "review",
    "evaluation",
    "workers",
    "health",
    "filestore",
    "registry",  # model versions and each catalog's default: below the run and the training job
    "training",
    "tools",  # test and benchmark tooling: only its management commands (manage.py fault_drill ...)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "slotwise.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Ahead of CSRF, which reads the body: a body too large for its view, or from someone the view
    # would refuse, is answered from Content-Length and the session alone, never read.
    "slotwise.body_guard.RefuseUnwantedBodiesMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "slotwise.error_pages.ProductErrorPagesMiddleware",  # DEBUG too: the product's 404/500, no URL list
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "slotwise.request_checks.RefuseNulParametersMiddleware",  # 400 for a NUL in any parameter
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: it turns a lockout into its page
]

ROOT_URLCONF = "slotwise.urls"
WSGI_APPLICATION = "slotwise.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.roles",
            ],
        },
    },
]

DATABASES = {
    "default": {
        **parse_database_url(env_str("DATABASE_URL", "") or local_database_url()),
        # A connection kept for a minute: opening one (a PostgreSQL backend forked, authenticated) cost
        # more CPU than the review queue's queries under load. The health check drops one the server
        # closed (a restart) before a request uses it.
        "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", 60, minimum=0),
        "CONN_HEALTH_CHECKS": True,
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses a locked-out sign-in before the password is checked
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(BASE_DIR / ".data" / "media")))
STORAGES = {
    # Uploads and exports live in PostgreSQL, so the web server and the workers need no disk in
    # common (filestore/); MEDIA_ROOT only stages an upload on the web host while it is checked.
    "default": {"BACKEND": "filestore.storage.DatabaseStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Uploads: catalogs stream to disk; anything over the limit is refused before it is parsed.
CATALOG_UPLOAD_MAX_BYTES = env_int("CATALOG_UPLOAD_MAX_MB", 200) * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Celery: Redis carries messages only; PostgreSQL holds the state of every piece of work.
REDIS_URL = env_str("REDIS_URL", "") or local_redis_url()  # unset: this checkout's own (scripts/services.py)
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = "light"
CELERY_TASK_ROUTES = {
    "workers.tasks.gpu_*": {"queue": "gpu"},
    "workers.tasks.train_model": {"queue": "train"},
}
CELERY_TASK_ALWAYS_EAGER = False
# Each worker also listens on a queue of its own: a starting GPU worker sends its look for waiting
# work there, so it is that worker that looks (not one that cannot load the run's model).
CELERY_WORKER_DIRECT = True
# The periodic reaper (celery beat; its schedule is in workers/celery.py): how often it releases
# expired leases and wakes runs whose work waits, how often it looks for stranded uploads, and how
# old an import left at upload or mapping may get before it is removed with its file.
REAPER_INTERVAL_SECONDS = env_int("REAPER_INTERVAL_SECONDS", 30, minimum=1)
STRANDED_UPLOAD_SWEEP_SECONDS = env_int("STRANDED_UPLOAD_SWEEP_SECONDS", 3600, minimum=1)
STRANDED_UPLOAD_MAX_AGE_HOURS = env_int("STRANDED_UPLOAD_MAX_AGE_HOURS", 24, minimum=1)

# Extraction: the pretrained base the product is served on (`make dev BASE=...` sets it; the
# default is Gemma 3 270M, smollm2-135m the Apache-2.0 choice) and the model directory the GPU
# workers load (by default the one `make model` assembles from that base and its committed
# artifact); the engine is handed it, it never reads the environment itself.
SLOTWISE_BASE = env_choice("SLOTWISE_BASE", BASES, DEFAULT_BASE)
SLOTWISE_MODEL_DIR = env_str("SLOTWISE_MODEL_DIR", "") or str(BASES[SLOTWISE_BASE].model_dir)
# The small from-scratch model, offered in the run form as the fast choice.
FAST_MODEL_DIR = str(BASE_DIR / "models" / "slotwise-ave")
# More model directories offered when starting a run (the workers must see the same paths).
EXTRACTION_MODEL_DIRS = env_list("EXTRACTION_MODEL_DIRS")
SLOTWISE_DEVICE = env_str("SLOTWISE_DEVICE", "cpu")
# Extraction runs. Each process reads these once at start-up: a worker started with other values (the
# fault drill's short leases) has them from its own environment.
# How long a lease on a batch lasts; the worker renews it every third of this while it decodes, so a
# killed worker's products are takeable again after at most this many seconds.
EXTRACTION_LEASE_SECONDS = env_int("EXTRACTION_LEASE_SECONDS", 30, minimum=3)
# Products per leased batch: the engine stacks them into HPD prompts (or AR batch rows) as it chooses.
EXTRACTION_BATCH_SIZE = env_int("EXTRACTION_BATCH_SIZE", 16, minimum=1)
# The most prompt positions one product may take in a worker, below the model's own limit: attention
# over a product's prompt grows with its square, so a description of 30,000 tokens (under Gemma 3's
# 32,768 positions) would exhaust a worker's memory and kill it; such a product fails alone with
# "shorten its description" instead.
EXTRACTION_MAX_PROMPT_POSITIONS = env_int("EXTRACTION_MAX_PROMPT_POSITIONS", 8192, minimum=256)
# The memory one worker's decoding of a batch may take, beyond its loaded model: a worker leases
# products while the estimate of their decoding (from their prompt positions and stacking,
# runner/budget.py) fits, so a batch of long documents is smaller and one too long to share a batch
# is decoded alone. Default: half of the machine's memory, or of its container's limit if lower.
EXTRACTION_MEMORY_BUDGET_MB = env_int("EXTRACTION_MEMORY_BUDGET_MB", memory_mb() // 2, minimum=16)
# A product whose batch was lost this many times (its worker died each time) is marked failed.
EXTRACTION_MAX_ATTEMPTS = env_int("EXTRACTION_MAX_ATTEMPTS", 3, minimum=1)
# One task works this long, then sends itself again: a warm shutdown waits one slice, not a run.
EXTRACTION_TASK_SECONDS = env_int("EXTRACTION_TASK_SECONDS", 60, minimum=1)
# Wake-up messages sent when a run starts: each lets one more idle worker join the run.
EXTRACTION_WAKEUPS = env_int("EXTRACTION_WAKEUPS", 4, minimum=1)
# A run whose model failed to load this many times (all workers together) fails; until then it
# waits for a worker that can load it, the run page showing every failure.
EXTRACTION_MAX_LOAD_FAILURES = env_int("EXTRACTION_MAX_LOAD_FAILURES", 3, minimum=1)
# A worker process that could not load a model tries it again only after this long (the reaper's
# wake-ups bring it back), so a broken model costs one load per worker per minute, not a busy loop.
EXTRACTION_LOAD_RETRY_SECONDS = env_int("EXTRACTION_LOAD_RETRY_SECONDS", 60, minimum=0)
# Megabytes of model weights one worker process keeps loaded: beyond them the models it used longest
# ago are dropped (a version the learning job replaced is not held for days), and loaded again if a
# run needs them. 0: room for two models the size of the one it loaded last (a catalog's default and
# a newly promoted version). The model a run needs is loaded even when it alone is over the budget.
EXTRACTION_MODEL_CACHE_MB = env_int("EXTRACTION_MODEL_CACHE_MB", 0, minimum=0)
# Megabytes of schema prefix caches (the instruction's attention keys and values) each loaded model
# keeps, least recently used dropped beyond them. 0: a quarter of the model's own size (the engine's
# default, extraction/engine/api.py PREFIX_CACHE_SHARE_OF_MODEL).
EXTRACTION_PREFIX_CACHE_MB = env_int("EXTRACTION_PREFIX_CACHE_MB", 0, minimum=0)
# How long a worker that lost PostgreSQL waits for it to come back before its task gives up (Celery
# retries the task later).
EXTRACTION_DATABASE_WAIT_SECONDS = env_int("EXTRACTION_DATABASE_WAIT_SECONDS", 120, minimum=1)
# Training jobs ("Improve the model", training/): minutes of training per job (a time cap; the most
# a form may ask), the seeded share of reviewed products held back to prove the gain, public
# products mixed in per reviewed product (so the model does not forget), steps and batch of the
# recipe, checkpoints every so many minutes (stored in PostgreSQL), the heartbeat, after how long
# without one a job is resumed elsewhere, how many dead workers fail it, and automatic promotion
# (off: an admin decides; on: only a gain beyond the held-back interval's half-width).
TRAINING_MINUTES = env_float("TRAINING_MINUTES", 15.0)
TRAINING_MAX_MINUTES = env_float("TRAINING_MAX_MINUTES", 240.0)
TRAINING_HOLDOUT_SHARE = env_float("TRAINING_HOLDOUT_SHARE", 0.2)
TRAINING_PUBLIC_RATIO = env_float("TRAINING_PUBLIC_RATIO", 1.0)
TRAINING_PUBLIC_DATA = env_list(
    "TRAINING_PUBLIC_DATA", ",".join(str(DEFAULT_DATA / name) for name in ("oa-mine", "ae-110k", "wdc-pave"))
)
TRAINING_MAX_STEPS = env_int("TRAINING_MAX_STEPS", 100000, minimum=1)
TRAINING_BATCH_TOKENS = env_int("TRAINING_BATCH_TOKENS", 4096, minimum=64)
TRAINING_CHECKPOINT_MINUTES = env_float("TRAINING_CHECKPOINT_MINUTES", 2.0)
TRAINING_HEARTBEAT_SECONDS = env_int("TRAINING_HEARTBEAT_SECONDS", 10, minimum=1)
TRAINING_STALE_SECONDS = env_int("TRAINING_STALE_SECONDS", 90, minimum=2)
TRAINING_MAX_ATTEMPTS = env_int("TRAINING_MAX_ATTEMPTS", 3, minimum=1)
TRAINING_AUTO_PROMOTE = env_bool("TRAINING_AUTO_PROMOTE", default=False)
# The adapter a job trains from when the catalog's version is the shipped default (the committed
# artifact `make model` assembled SLOTWISE_MODEL_DIR from), and where workers keep stored versions.
TRAINING_SHIPPED_ADAPTER = env_str("TRAINING_SHIPPED_ADAPTER", "") or str(BASES[SLOTWISE_BASE].artifact_dir)
MODEL_CACHE_DIR = env_str("MODEL_CACHE_DIR", str(BASE_DIR / ".data" / "model-cache"))

# Review: rows per queue page; bulk actions change values in chunks of REVIEW_BULK_CHUNK per
# transaction (short locks) and run in the request up to REVIEW_BULK_INLINE_LIMIT values, beyond it
# in the background; exports up to REVIEW_EXPORT_INLINE_LIMIT values are written in the request.
REVIEW_PAGE_SIZE = env_int("REVIEW_PAGE_SIZE", 20, minimum=1)
REVIEW_BULK_CHUNK = env_int("REVIEW_BULK_CHUNK", 500, minimum=1)
REVIEW_BULK_INLINE_LIMIT = env_int("REVIEW_BULK_INLINE_LIMIT", 1000, minimum=0)
REVIEW_EXPORT_INLINE_LIMIT = env_int("REVIEW_EXPORT_INLINE_LIMIT", 5000, minimum=0)

# Hourly price per device kind: the dashboard prices each run on the device its worker recorded.
GPU_PRICE_PER_HOUR = env_float("GPU_PRICE_PER_HOUR", 2.50)
CPU_PRICE_PER_HOUR = env_float("CPU_PRICE_PER_HOUR", 0.40)

# Security: strict in production, relaxed only where DEBUG says so.
SESSION_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
# Scripts from this site's static files only (no inline script or handler); see slotwise/csp.py.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
BEHIND_PROXY = env_bool("BEHIND_PROXY")
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_PROXY else None
# How many proxies stand in front of the web server, each appending to X-Forwarded-For the address
# it received the request from: the client's address is the entry this many places from the right
# (slotwise/client_address.py). Without a proxy the socket's address is the client's.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 1, minimum=1) if BEHIND_PROXY else 0
if not BEHIND_PROXY and env_str("TRUSTED_PROXY_COUNT", ""):
    # Silently ignored, it would leave every client at the proxy's one address, sharing its locks.
    raise ImproperlyConfiguredEnv(
        "TRUSTED_PROXY_COUNT is set but BEHIND_PROXY is off: set BEHIND_PROXY=1 too"
    )

# Sign-in throttling (django-axes, attempts kept in PostgreSQL). Failures count per username and
# address together, so someone guessing alice's password locks out that pair only, never alice
# herself signing in from elsewhere. A success clears the count; an admin clears a lock with
# `manage.py axes_reset_username NAME`.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# A failure during the lock does not start the wait again: otherwise anyone at the same address (one
# NAT, one office) could keep a colleague locked out for ever with one wrong password a minute. The
# price: a guesser gets LOGIN_FAILURE_LIMIT tries per cool-off instead of fewer.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "accounts.lockout.locked_out"
# The client's address: the socket's, or behind proxies the one the outermost appended to
# X-Forwarded-For (without it every user would share the proxy's address and its lock).
AXES_CLIENT_IP_CALLABLE = "slotwise.client_address.client_address"
# The name a failure is recorded under, cut to the length its column stores.
AXES_USERNAME_CALLABLE = "accounts.lockout.throttled_username"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # django-axes announces itself at every start, management commands included; its warnings
    # about failed and locked-out sign-ins come from other loggers and still show.
    "loggers": {"axes.apps": {"level": "WARNING"}},
}
