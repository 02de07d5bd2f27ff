// SPDX-License-Identifier: Apache-2.0
#include "snapshot_text.hpp"

namespace cdc::cli {

std::string mode_text(const std::string& type, std::uint32_t mode) {
    char t = '-';
    if (type == "dir") t = 'd';
    else if (type == "symlink") t = 'l';
    else if (type == "fifo") t = 'p';
    else if (type == "chardev") t = 'c';
    else if (type == "blockdev") t = 'b';
    else if (type == "socket") t = 's';
    std::string s(1, t);
    const char* rwx = "rwxrwxrwx";
    for (int i = 0; i < 9; ++i) s.push_back((mode >> (8 - i)) & 1 ? rwx[i] : '-');
    if (mode & 04000) s[3] = s[3] == 'x' ? 's' : 'S';
    if (mode & 02000) s[6] = s[6] == 'x' ? 's' : 'S';
    if (mode & 01000) s[9] = s[9] == 'x' ? 't' : 'T';
    return s;
}

}  // namespace cdc::cli
