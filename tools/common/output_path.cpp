// SPDX-License-Identifier: Apache-2.0
#include "output_path.hpp"

#include <sys/stat.h>

namespace cdc::tools {

bool is_stream_path(const std::string& out) {
    if (out.starts_with("/dev/") || out.starts_with("/proc/")) return true;
    struct stat st {};
    return ::stat(out.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

}  // namespace cdc::tools
