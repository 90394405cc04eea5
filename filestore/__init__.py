"""Files every process reads from PostgreSQL: uploaded catalogs and review exports.

The web server and the workers may run on different machines with no disk in common; what one
writes (an upload, an export) another reads (the import task, a download). Django's default storage
(settings.STORAGES) is `filestore.storage.DatabaseStorage`: a file is a StoredFile row and its bytes
1 MiB StoredChunk rows, written and read one chunk at a time, never whole in memory.
"""
