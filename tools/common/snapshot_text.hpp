// SPDX-License-Identifier: Apache-2.0
// A snapshot's entries as the listings print them, a line or JSON: `cdc
// store ls DIR SNAP` and `cdc ls --from ADDR SNAP` print the same (a test
// compares their JSON).
#pragma once

#include "escape.hpp"
#include "time_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace cdc::cli {

/// ls -l's first column: the type letter, then rwx with set-id and sticky bits.
std::string mode_text(const std::string& type, std::uint32_t mode);

/// A node of a snapshot listing (store::SnapshotNode, or the transfer
/// client's of a server's snapshot: the same fields).
template <class Node>
nlohmann::json snapshot_node_json(const Node& n) {
    nlohmann::json j = {{"type", n.type}, {"mode", n.mode}, {"uid", n.uid},          {"gid", n.gid},
                        {"size", n.size}, {"mtime_ns", n.mtime_ns}};
    tools::put_name(j, "path", n.path);
    if (!n.user.empty()) tools::put_name(j, "user", n.user);
    if (!n.group.empty()) tools::put_name(j, "group", n.group);
    if (!n.target.empty()) tools::put_name(j, "target", n.target);
    if (!n.digest.empty()) j["digest"] = n.digest;
    return j;
}

/// The path (and a link's target); with `long_form`, mode, owner, group,
/// size and mtime before it.
template <class Node>
std::string snapshot_node_line(const Node& n, bool long_form) {
    std::string name = tools::escape_text(n.path);
    if (!n.target.empty()) name += (n.type == "symlink" ? " -> " : " => ") + tools::escape_text(n.target);
    if (!long_form) return name;
    const std::string owner = n.user.empty() ? std::to_string(n.uid) : tools::escape_text(n.user);
    const std::string group = n.group.empty() ? std::to_string(n.gid) : tools::escape_text(n.group);
    return fmt::format("{} {:>8} {:>8} {:>12} {} {}", mode_text(n.type, n.mode), owner, group, n.size,
                       local_time_text(n.mtime_ns), name);
}

}  // namespace cdc::cli
