"""This checkout's local PostgreSQL and Redis (scripts/services.py is their command line).

- checkout: a working tree, its .data folder and the pid files of its two servers
- ports: the ports a checkout uses (chosen once from a hash of its path, recorded in .data)
- owners: whose server listens on a port, and what to say when it is not this checkout's
- postgres_server, redis_server: start, stop and restart each server of this checkout
"""
