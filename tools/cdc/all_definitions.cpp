// SPDX-License-Identifier: Apache-2.0
#include "all_definitions.hpp"

#include "cli_definitions.hpp"

#include <cdc/version.hpp>

#include <cerrno>
#include <fcntl.h>
#include <spawn.h>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CDC_DUPES_HELPER_FROM_BINDIR
#define CDC_DUPES_HELPER_FROM_BINDIR "../libexec/cdc/cdc-dupes"
#endif
#ifndef CDC_TRANSFER_HELPER_FROM_BINDIR
#define CDC_TRANSFER_HELPER_FROM_BINDIR "../libexec/cdc/cdc-transfer"
#endif

extern char** environ;

namespace cdc::cli {

namespace {

constexpr Helper kDupes{"cdc-dupes", "CDC_DUPES", CDC_DUPES_HELPER_FROM_BINDIR};
constexpr Helper kTransfer{"cdc-transfer", "CDC_TRANSFER", CDC_TRANSFER_HELPER_FROM_BINDIR};

const Helper* helper_named(std::string_view command, std::string_view sub) {
    if (command == "dupes") return &kDupes;
    if (command == "serve" || command == "push" || command == "pull" || command == "ls" || command == "hash")
        return &kTransfer;
    if (command == "bench" && sub == "transfer") return &kTransfer;
    return nullptr;
}

// The standard output of `path --cli-definitions`, or "" if it failed.
std::string definitions_of(const std::string& path) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return {};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    char* const args[] = {const_cast<char*>(path.c_str()), const_cast<char*>(kDefinitionsFlag), nullptr};
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, args, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    std::string out;
    char buf[1 << 16];
    for (ssize_t n; rc == 0 && (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    int status = 0;
    if (rc != 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
    return out;
}

// The helper's definition of the command at `path` ("bench", "transfer"), or null.
const nlohmann::ordered_json* find_command(const nlohmann::ordered_json& root, const std::vector<std::string>& path) {
    const nlohmann::ordered_json* at = &root;
    for (const std::string& name : path) {
        const nlohmann::ordered_json* next = nullptr;
        const auto subs = at->find("subcommands");
        if (subs == at->end() || !subs->is_array()) return nullptr;
        for (const auto& sub : *subs)
            if (sub.value("name", "") == name) next = &sub;
        if (next == nullptr) return nullptr;
        at = next;
    }
    return at;
}

void replace_helpers(nlohmann::ordered_json& node, std::vector<std::string>& path) {
    for (auto& sub : node["subcommands"]) {
        path.push_back(sub["name"].get<std::string>());
        if (sub.value("helper", false)) {
            const Helper* h = helper_named(path.front(), path.size() > 1 ? path[1] : "");
            const tools::HelperPath where = h ? find_helper(*h) : tools::HelperPath{};
            const std::string text = where.path.empty() ? std::string() : definitions_of(where.path);
            if (!text.empty()) {
                const auto theirs = nlohmann::ordered_json::parse(text, nullptr, false);
                if (const auto* def = theirs.is_discarded() ? nullptr : find_command(theirs, path)) sub = *def;
            }
        } else if (sub.contains("subcommands")) {
            replace_helpers(sub, path);
        }
        path.pop_back();
    }
}

}  // namespace

const Helper* helper_of(int argc, char** argv) {
    if (argc < 2) return nullptr;
    return helper_named(argv[1], argc > 2 ? argv[2] : "");
}

tools::HelperPath find_helper(const Helper& helper) {
    return tools::find_helper(helper.name, helper.env_var, helper.from_bindir);
}

nlohmann::ordered_json all_definitions(const CLI::App& app) {
    nlohmann::ordered_json root = definitions(app);
    root["version"] = cdc::kVersionString;
    std::vector<std::string> path;
    replace_helpers(root, path);
    return root;
}

}  // namespace cdc::cli
