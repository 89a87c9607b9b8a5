"""Evaluation: accuracy scoring, stability, repeats, sweeps, find-peak and reruns.

Pure functions over reports and raw timings; the embedded pipeline and the API call them.
"""
