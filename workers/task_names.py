"""The names of the Celery tasks other apps send without importing their module.

The web side sends a run's wake-up by name (`app.send_task`), so extraction never imports
workers.tasks, which imports extraction's worker loop: no import cycle between them.
"""

GPU_PROCESS_RUN = "workers.tasks.gpu_process_run"
TRAIN_JOB = "workers.tasks.train_model"
