"""Where the nodes of a workload run: the backends, and the one supervision core they share.

- ``base``: the ``Backend`` protocol (check a shape, start a group of node processes) and the
  ``NodeGroup`` it returns (poll, bring logs home, stop: SIGTERM then SIGKILL after the grace
  period, check nothing is left, release).
- ``agent``: the supervision core, shaped like torch elastic's agent (start, monitor, stop,
  shut down, a restart budget), used by workloads' supervisors whatever the backend.
- ``local``: every node a process group on this machine.
- ``ray``: every node on its own Ray node (a STRICT_SPREAD placement group, one small actor per
  node that runs the command, captures its output and stops it).
- ``choice``: which backend a workload uses (its YAML, the server's configuration, RAY_ADDRESS).
"""
