// tests/slurm/slurm_jobs.h: what the cluster tests do with Slurm's own commands: run one
// with a deadline, submit and wait for a batch job, read its fields and its output files.
// Every command runs with the SLURM_CONF tests/slurm/testbed.sh exported.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "cli/os/subprocess.h"

namespace hvd::test {

// Skips the test when it is not running under tests/slurm/testbed.sh.
void requireTestbed();

// Runs argv to its end (or the deadline); fails the test when it cannot start.
cli::CapturedRun runCommand(const std::vector<std::string>& argv, std::chrono::seconds timeout = std::chrono::seconds(30));

// FIELD's value in `scontrol show job ID` ("JobState", "ExitCode", ...); empty when absent.
std::string jobField(const std::string& id, const std::string& field);

// Polls every 100 ms until `until` holds; fails the test after `limit`.
void waitFor(const std::string& what, const std::function<bool()>& until,
             std::chrono::seconds limit = std::chrono::seconds(60));

// Waits until job ID has left squeue (it ended).
void waitForEnd(const std::string& id, std::chrono::seconds limit = std::chrono::seconds(60));

// The whole file; empty when it cannot be read.
std::string readFile(const std::string& path);

}  // namespace hvd::test
