"""hvd.torch.elastic: Horovod's elastic API on a fixed set of ranks, so scripts written for
it (`@hvd.elastic.run`, `hvd.elastic.TorchState`, `hvd.elastic.ElasticSampler`) run under
hvdrun unchanged. hvdrun starts a fixed set of ranks and ends the job when one fails
(horovodrun's --min-np/--max-np are refused), so nothing here resets or re-forms the world:
run() syncs the state from rank 0 and calls the function once; a peer's failure raises as
any collective's does, and the job ends.
"""

from .sampler import ElasticSampler
from .state import ObjectState, State, TorchState, run

__all__ = ["ElasticSampler", "ObjectState", "State", "TorchState", "run"]
