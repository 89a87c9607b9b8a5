"""The embedded launcher of the campaigns in services/core/campaigns (the stack's is
services/api/campaigns): repeats, a sweep and the accuracy + performance pair (drive.py),
a find-peak search, a rerun against the noise band, and a training scaling as local ranks.
"""
