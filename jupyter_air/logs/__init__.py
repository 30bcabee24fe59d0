"""Log lines, below the workloads and backends that produce them: capture a process's output
(``capture``), store it one file per node and attempt with a level per line (``logfile``,
``levels``), and read it back filtered (``filters``, ``scan``, ``query``) or as it is written
(``follow``). Importing this package imports nothing.
"""
