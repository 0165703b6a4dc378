// cli/options/plan_request.cc: Options -> PlanRequest.
#include "cli/options/plan_request.h"

namespace hvd::cli {

PlanRequest planRequestFrom(const Options& o) {
  PlanRequest r;
  r.numProc = o.numProc;
  r.ranksPerHost = o.ranksPerHost;
  r.ranksPerHostWord = o.ranksPerHostWord;
  r.nnodes = o.nnodes;
  r.hostList = o.hosts;
  r.hostfilePath = o.hostfile;
  r.noSlurm = o.noSlurm;
  r.gpusPerRank = o.gpusPerRank;
  r.noGpu = o.noGpu;
  r.oversubscribeGpus = o.oversubscribeGpus;
  r.tfConfig = o.tfConfig;
  r.tfPs = o.tfPs;
  r.tfChief = o.tfChief;
  r.tfEvaluator = o.tfEvaluator;
  r.tfPortBase = o.tfPortBase;
  r.networkInterface = o.networkInterface;
  r.bindTo = o.bindTo;
  r.runtimeVariables = o.runtimeVariables;
  return r;
}

}  // namespace hvd::cli
