"""Readings over stored runs: stack advice (``advice``), the report to share
(``shared_report``). The judging statistics are ``services/core``; groups of runs
(repeats, sweeps, find-peak, reruns) are ``services/campaigns``.
"""
