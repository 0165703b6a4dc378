"""hvd.torch.elastic: Horovod's elastic API (`@hvd.elastic.run`, `hvd.elastic.TorchState`,
`hvd.elastic.ElasticSampler`). Under `hvdrun --min-np N`, a rank's failure does not end the
job: the others put back their last commit(), re-form as a smaller world (while at least N
are left), sync from the new rank 0 and go on. hvdrun never adds ranks (horovodrun's
--max-np and --host-discovery-script are refused). Without --min-np a failure raises from
the collective that noticed it, and the job ends.
"""

from .sampler import ElasticSampler
from ..._elastic import HostsUpdatedInterrupt, ObjectState, State, run
from .state import TorchState

__all__ = ["ElasticSampler", "HostsUpdatedInterrupt", "ObjectState", "State", "TorchState", "run"]
