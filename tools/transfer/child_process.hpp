// SPDX-License-Identifier: Apache-2.0
// Child processes for `cdc bench transfer`: start a program with its output
// in files, sample its resident memory from /proc while it runs, stop it.
#pragma once

#include <string>
#include <vector>

#include <sys/types.h>

namespace cdc::cli {

/// Starts argv[0] with `argv`; stdout and stderr go to these files, stdin is
/// /dev/null. IoError if it cannot be started.
pid_t spawn_process(const std::vector<std::string>& argv, const std::string& out_file, const std::string& err_file);

/// Resident memory of `pid` now and at its peak (VmRSS, VmHWM of
/// /proc/PID/status) in MB (10^6 bytes); both 0 once the process is gone.
struct Memory {
    double rss_mb = 0;
    double peak_mb = 0;
};
Memory process_memory(pid_t pid);

/// How a child ended: its exit code (128 + signal when killed; -1 while it
/// runs, with nohang) and its peak resident memory (wait4's ru_maxrss, MB).
struct Exit {
    int code = -1;
    double peak_mb = 0;
};
/// Waits for `pid` (blocking unless `nohang`).
Exit wait_process(pid_t pid, bool nohang = false);

}  // namespace cdc::cli
