"""The vendored client suites are run as their own pytest processes, never collected here."""

collect_ignore = ["redis_py_8_1"]
