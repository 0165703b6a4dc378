"""Horovod's horovod.common.exceptions: the errors elastic training and its callers catch.

HorovodInternalError is hvd's HvdError (every runtime failure is one); HostsUpdatedInterrupt
is the one hvd's elastic run raises when hvdrun has formed a new world.
"""

from .._elastic import HostsUpdatedInterrupt
from .._hvd import HvdError as HorovodInternalError

__all__ = ["HorovodInternalError", "HostsUpdatedInterrupt"]
