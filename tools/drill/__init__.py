"""The drills: break workers, PostgreSQL, Redis and the model mid-run and count what was lost.

- catalog: the synthetic sneaker catalog the drills (and the run benchmark) decode
- servers: this checkout's PostgreSQL and Redis, recognised by its one port definition, restarted
- tally: values expected against values stored (lost, duplicated)
- cases: the fault drill's cases against real worker processes; fault: the drill's run of them
- write_pause: the hook a drill worker installs to hold its write transaction open
- cluster/: the cluster drill's hosts (network and mount namespaces) and cases
"""
