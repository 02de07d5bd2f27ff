// SPDX-License-Identifier: Apache-2.0
// Output names that are not files to create or replace.
#pragma once

#include <string>

namespace cdc::tools {

/// OUT that is not a file to replace: a device or FIFO (/dev/null, a pipe),
/// or a path under /dev or /proc (/dev/stdout is a link to /proc/self/fd/1:
/// renaming a temporary file over it would replace the link, not write to
/// standard output). Such an OUT is written as a stream, like -o -.
bool is_stream_path(const std::string& out);

}  // namespace cdc::tools
