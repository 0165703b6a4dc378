"""Horovod's horovod.common, for the imports scripts make from it (hvd.common.exceptions)."""
