"""Groups of runs that answer one question: repeats, a sweep, a find-peak search, a rerun
against the noise band, MLPerf's accuracy + performance pair. They drive the embedded
bench (``services/embedded``) and judge with ``services/core``; the API's group
submissions (``services/api``) replay the same searches over the stack's stored runs.
"""
