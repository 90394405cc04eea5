"""Catalog import, one module per step, in the order a file goes through them.

    upload    the uploaded file checked as a whole and stored as an ImportJob (do_create_import)
    decode    bytes -> text: not binary, one text encoding, no control characters
    read      text -> rows: name, size, delimiter, whole-file record checks, the row stream
    map       which column feeds which product field; the mapping saved on the job
    check     one row in, a clean product or its row errors out (preview and import alike)
    preview   the first rows as they will be imported, with their errors
    write     good rows into the catalog (COPY + upsert per batch), bad rows into the report
    progress  the running import's row count, visible while its transaction is open
    start     a mapped job queued, once, for the Celery task (catalog.tasks)
    run       the task's work: the whole file in one transaction, all or nothing

`errors` holds what each step refuses with; the views turn each into the page's message.
"""
