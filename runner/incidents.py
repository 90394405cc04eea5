"""What interrupted a run and how it recovered, in words the run page shows (RunIncident rows).

Written where the recovery happens: a worker taking over a dead worker's batch (leases), the reaper
giving one back, a worker that lost PostgreSQL and reconnected (loop), a worker whose copy of the
run's model is another one (identity).
"""

from extraction.models import RunIncident

Kind = RunIncident.Kind


def _products(n: int) -> str:
    return f"{n} product{'s' if n != 1 else ''}"


def _owners(owners) -> str:
    names = sorted({owner for owner in owners if owner})
    return ", ".join(names) or "a worker"


def lease_taken_over(run_id: int, worker: str, owners, products: int) -> RunIncident:
    return RunIncident.objects.create(
        run_id=run_id,
        kind=Kind.LEASE_TAKEN_OVER,
        worker=worker,
        message=(
            f"{worker} took over {_products(products)} whose lease by "
            f"{_owners(owners)} had expired (that worker stopped or hung before writing them): "
            "decoded again, their values written once."
        ),
    )


def lease_released(run_id: int, owners, products: int, requeued: bool) -> RunIncident:
    then = "queued again for another worker" if requeued else "cancelled with the run"
    return RunIncident.objects.create(
        run_id=run_id,
        kind=Kind.LEASE_RELEASED,
        worker="reaper",
        message=(
            f"The reaper gave back {_products(products)} whose lease by "
            f"{_owners(owners)} had expired (that worker stopped or hung): {then}."
        ),
    )


def database_lost(run_id: int, worker: str, error: str, seconds: float, released: int) -> RunIncident:
    batch = f"; the {_products(released)} it held went back to the queue unwritten" if released else ""
    return RunIncident.objects.create(
        run_id=run_id,
        kind=Kind.DATABASE_LOST,
        worker=worker,
        message=(
            f"{worker} lost its PostgreSQL connection ({error.strip().splitlines()[0][:200]}) and "
            f"reconnected after {seconds:.0f} s{batch}."
        ),
    )


def model_mismatch(run_id: int, worker: str, model: str, fingerprint: str, runs_with: str) -> RunIncident:
    return RunIncident.objects.create(
        run_id=run_id,
        kind=Kind.MODEL_MISMATCH,
        worker=worker,
        message=(
            f"{worker} did not decode this run: its copy of model {model} has fingerprint "
            f"{fingerprint[:12]}, and the run decodes with {runs_with[:12]} (weights, settings or "
            "precision differ); its products stay queued for a worker whose copy matches."
        ),
    )
