"""Groups of runs driven by the embedded launcher (``services/embedded``): repeats, a sweep
and MLPerf's accuracy + performance pair as services/core/campaigns defines them (the
stack's services/api/campaigns applies the same definitions), a find-peak search and a
rerun against the noise band.
"""
