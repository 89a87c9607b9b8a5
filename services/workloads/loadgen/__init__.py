"""The LoadGen workload: a model run under an MLPerf scenario on a dataset's shards."""
