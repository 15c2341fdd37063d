"""The agent runtime: executions, checkpoints, the two queues, stops, retries, clarifications, compaction."""
