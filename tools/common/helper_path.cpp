// SPDX-License-Identifier: Apache-2.0
#include "helper_path.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <unistd.h>

namespace cdc::tools {

HelperPath find_helper(std::string_view name, const char* env_var, std::string_view from_bindir) {
    HelperPath h;
    if (const char* env = std::getenv(env_var); env != nullptr && *env != '\0') {
        h.looked_in = fmt::format("${} = '{}'", env_var, env);
        if (::access(env, X_OK) == 0) h.path = env;
        return h;
    }
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
        h.looked_in = "nowhere: /proc/self/exe is unreadable";
        return h;
    }
    for (const auto& candidate :
         {self.parent_path() / name, (self.parent_path() / from_bindir).lexically_normal()}) {
        h.looked_in += (h.looked_in.empty() ? "" : ", ") + candidate.string();
        if (h.path.empty() && ::access(candidate.c_str(), X_OK) == 0) h.path = candidate.string();
    }
    return h;
}

}  // namespace cdc::tools
