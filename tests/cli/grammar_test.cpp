// SPDX-License-Identifier: Apache-2.0
// One grammar for every command (docs/CLI.md), checked on the definitions
// the programs print (`cdc --cli-definitions`: the same CLI11 definitions
// that print --help, the helpers' commands included): a flag shared by
// several commands has one meaning (the table below), every command has -h,
// -V, -q, --json where it prints data, examples and its own exit codes, and
// every error is one "cdc: error: ..." line.
#include "cli_support.hpp"

#include <cdc/version.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

namespace cdc::test {
namespace {

using Json = nlohmann::json;

struct Command {
    std::string path;  // "store put"
    Json def;
};

const Json& definitions() {
    static const Json defs = [] {
        const auto r = run_tool({"--cli-definitions"});
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return Json::parse(r.out);
    }();
    return defs;
}

bool is_helper_entry(const Json& node) { return node.contains("helper") && node["helper"] == true; }

bool is_transfer(const std::string& path) {
    for (const char* t : {"serve", "push", "pull", "ls", "hash", "bench transfer"})
        if (path == t) return true;
    return false;
}

void collect(const Json& node, const std::string& path, std::vector<Command>& out) {
    if (!CDC_TEST_TRANSFER && is_transfer(path)) return;  // (a build without cdc-transfer)
    if (is_helper_entry(node) || node["subcommands"].empty()) {
        out.push_back({path, node});
        return;
    }
    for (const auto& sub : node["subcommands"])
        collect(sub, path.empty() ? sub["name"].get<std::string>() : path + " " + sub["name"].get<std::string>(), out);
}

const std::vector<Command>& commands() {
    static const std::vector<Command> all = [] {
        std::vector<Command> out;
        collect(definitions(), "", out);
        return out;
    }();
    return all;
}

std::vector<std::string> words(const std::string& path) {
    std::vector<std::string> out;
    for (std::size_t at = 0; at <= path.size();) {
        const auto space = path.find(' ', at);
        out.push_back(path.substr(at, space == std::string::npos ? std::string::npos : space - at));
        at = space == std::string::npos ? path.size() + 1 : space + 1;
    }
    return out;
}

const Json* option(const Json& cmd, const std::string& name) {
    for (const auto& o : cmd["options"])
        for (const auto& n : o["names"])
            if (n == name) return &o;
    return nullptr;
}

// Every command the programs have, with a man page and completions of its
// own (tests/install checks those): none left to a helper that was not found.
TEST(Grammar, EveryCommandIsDefined) {
    std::set<std::string> paths;
    for (const auto& c : commands()) {
        EXPECT_FALSE(is_helper_entry(c.def)) << c.path << ": its helper program gave no definitions";
        paths.insert(c.path);
    }
    for (const char* expected : {"chunk", "analyze", "compare", "resync", "dupes", "bench run", "bench plot",
                                 "bench transfer", "plot", "speed", "kernels", "sample", "algorithms", "gen",
                                 "store init", "store put", "store get", "store ls", "store rm", "store gc",
                                 "store verify", "store stats", "store key list", "store key add", "store key remove",
                                 "store key passwd", "store backup", "store snapshots", "store forget", "store diff",
                                 "store find", "store migrate", "serve", "push", "pull", "ls", "hash"})
        EXPECT_TRUE(paths.count(expected) || (!CDC_TEST_TRANSFER && is_transfer(expected))) << expected;
}

// A flag used by two commands or more means one thing: it is in this table,
// with its short name and the kind of value it takes (or none for a flag).
struct Meaning {
    std::string short_name;
    std::set<std::string> types;
    std::string what;
};
const std::map<std::string, Meaning>& shared_flags() {
    static const std::map<std::string, Meaning> table = {
        {"--help", {"-h", {""}, "print the help"}},
        {"--version", {"-V", {""}, "print the version"}},
        {"--quiet", {"-q", {""}, "nothing on stderr but errors, no status line"}},
        {"--json", {"", {""}, "the result as JSON on stdout"}},
        {"--csv", {"", {""}, "the result as CSV on stdout"}},
        {"--algorithm", {"-a", {"NAME"}, "the chunking algorithm (cdc algorithms)"}},
        {"--min", {"", {"SIZE"}, "minimum chunk size"}},
        {"--avg", {"", {"SIZE"}, "average chunk size"}},
        {"--normal", {"", {"SIZE"}, "average chunk size"}},
        {"--max", {"", {"SIZE"}, "maximum chunk size"}},
        {"--window", {"", {"SIZE"}, "hash window"}},
        {"--key", {"", {"HEX"}, "32-byte chunking key"}},
        {"--level", {"", {"N"}, "normalization level"}},
        {"--seed", {"", {"N"}, "chunker seed"}},
        {"--poly", {"", {"HEX"}, "Rabin polynomial"}},
        {"--digest", {"", {"NAME"}, "fingerprint of each chunk or file"}},
        {"--kernel", {"", {"LEVEL"}, "kernel level"}},
        {"--jobs", {"-j", {"N"}, "worker threads"}},
        {"--threads", {"", {"N"}, "worker threads"}},
        {"--follow-symlinks", {"", {""}, "follow symbolic links inside directories"}},
        {"--exclude", {"", {"PATTERN"}, "leave out what matches a gitignore-like pattern"}},
        {"--exclude-file", {"", {"FILE"}, "exclude patterns read from a file"}},
        {"--exclude-caches", {"", {""}, "leave out directories tagged with CACHEDIR.TAG"}},
        {"--exclude-if-present", {"", {"NAME"}, "leave out directories holding NAME"}},
        {"--one-file-system", {"", {""}, "do not enter other file systems"}},
        {"--edits", {"", {"N"}, "number of edits"}},
        {"--edit-size", {"", {"SIZE"}, "bytes per edit"}},
        {"--edit-kind", {"", {"KIND"}, "insert, delete, overwrite or mixed"}},
        {"--edit-seed", {"", {"N"}, "seed of the edits"}},
        {"--trials", {"", {"N"}, "trials averaged"}},
        {"--output", {"-o", {"FILE", "DIR", "PATH"}, "where the output goes"}},
        {"--name", {"", {"NAME"}, "the stored name"}},
        {"--key-file", {"", {"FILE"}, "the key of a keyed store"}},
        {"--password-file", {"", {"FILE"}, "the password of an encrypted store"}},
        {"--new-password-file", {"", {"FILE"}, "the password being set"}},
        {"--token-file", {"", {"FILE"}, "the server's token"}},
        {"--tls", {"", {""}, "use TLS"}},
        {"--tls-ca", {"", {"FILE"}, "trusted certificates"}},
        {"--tls-server-name", {"", {"NAME"}, "the server certificate's name"}},
        {"--from", {"", {"HOST:PORT"}, "the server"}},
        {"--timeout", {"", {"SECONDS"}, "give up on a silent server"}},
        {"--packs", {"", {"URL"}, "where a store's packs are (s3://BUCKET/PREFIX)"}},
        {"--s3-endpoint", {"", {"URL"}, "the S3 service"}},
        {"--s3-region", {"", {"REGION", "NAME"}, "the region S3 requests are signed for"}},
        {"--s3-credentials", {"", {"FILE"}, "an AWS credentials file"}},
        {"--no-metadata", {"", {""}, "do not restore mode and mtime"}},
        {"--keep-setid", {"", {""}, "restore set-id bits"}},
        {"--plot", {"", {"DIR"}, "also draw the graphs into DIR"}},
        {"--sample-ms", {"", {"N"}, "sampling interval"}},
        {"--size", {"", {"SIZE"}, "size of the data measured"}},
        {"--labels", {"", {"TEXT"}, "legend labels"}},
        {"--dry-run", {"", {""}, "say what would be done, change nothing"}},
        {"--host", {"", {"HOST"}, "the host a snapshot is of"}},
        {"--tag", {"", {"TAG"}, "a tag of snapshots"}},
        {"--long", {"-l", {""}, "a long listing"}},
        {"--parent", {"", {"SNAP"}, "the snapshot compared with"}},
        {"--no-parent", {"", {""}, "compare with no snapshot"}},
        {"--force-read", {"", {""}, "read every file, even unchanged ones"}},
        {"--no-xattrs", {"", {""}, "do not record extended attributes"}},
        {"--names", {"", {""}, "named files rather than snapshots"}},
    };
    return table;
}

TEST(Grammar, ASharedFlagMeansOneThing) {
    std::map<std::string, std::set<std::string>> used_by;  // long name -> commands
    std::map<std::string, std::set<std::string>> short_of;
    for (const auto& c : commands()) {
        for (const auto& o : c.def["options"]) {
            std::string long_name, short_name;
            for (const auto& n : o["names"]) {
                const std::string name = n;
                (name.starts_with("--") ? long_name : short_name) = name;
            }
            ASSERT_FALSE(long_name.empty()) << c.path << ": " << o.dump() << " has no long name";
            used_by[long_name].insert(c.path);
            short_of[short_name].insert(long_name);
            const auto it = shared_flags().find(long_name);
            if (it == shared_flags().end()) continue;
            EXPECT_EQ(short_name, it->second.short_name) << c.path << " " << long_name;
            EXPECT_TRUE(it->second.types.count(o["type"].get<std::string>()))
                << c.path << " " << long_name << " takes " << o["type"] << ", not what it takes elsewhere ("
                << it->second.what << ")";
        }
    }
    for (const auto& [flag, cmds] : used_by) {
        if (cmds.size() > 1) {
            EXPECT_TRUE(shared_flags().count(flag))
                << flag << " is used by " << fmt::format("{}", fmt::join(cmds, ", "))
                << ": give it one meaning in docs/CLI.md and in this table";
        }
    }
    for (const auto& [short_name, longs] : short_of) {
        if (!short_name.empty()) {
            EXPECT_EQ(longs.size(), 1u) << short_name << " stands for " << fmt::format("{}", fmt::join(longs, ", "));
        }
    }
}

// Commands whose output is not a result to print as JSON.
const std::map<std::string, std::string> kNoJson = {
    {"gen", "writes the generated bytes themselves"},
    {"serve", "a server: prints log lines only"},
};

TEST(Grammar, EveryCommandHasTheCommonFlagsExamplesAndItsExitCodes) {
    for (const auto& c : commands()) {
        SCOPED_TRACE(c.path);
        for (const char* flag : {"--help", "--version", "--quiet"}) EXPECT_NE(option(c.def, flag), nullptr) << flag;
        EXPECT_EQ(option(c.def, "--json") != nullptr, !kNoJson.count(c.path));
        ASSERT_FALSE(c.def["examples"].empty());
        for (const auto& e : c.def["examples"])
            EXPECT_NE(e["command"].get<std::string>().find("cdc " + c.path), std::string::npos) << e.dump();
        std::set<int> codes;
        for (const auto& e : c.def["exit_codes"]) codes.insert(e["code"].get<int>());
        EXPECT_TRUE(codes.count(0) && codes.count(2)) << c.def["exit_codes"].dump();
        EXPECT_EQ(codes.count(1), c.path == "compare" ? 1u : 0u) << "only compare exits 1 (a regression)";

        auto args = words(c.path);
        args.push_back("--help");
        const auto help = run_tool(args);
        EXPECT_EQ(help.exit_code, 0);
        EXPECT_NE(help.out.find("Examples:\n  cdc "), std::string::npos) << help.out;
        EXPECT_NE(help.out.find("Exit status:\n  0  success"), std::string::npos) << help.out;
        EXPECT_EQ(help.out.find("compare found a regression"), std::string::npos) << help.out;
        args.back() = "-V";
        const auto version = run_tool(args);
        EXPECT_EQ(version.exit_code, 0);
        EXPECT_EQ(version.out, fmt::format("cdc {}\n", kVersionString));
    }
    EXPECT_EQ(run_tool({"--version"}).out, fmt::format("cdc {}\n", kVersionString));
}

// Every bad command line, whichever program parses it (cdc, cdc-dupes,
// cdc-transfer), is one line "cdc: error: ..." and exit 2.
TEST(Grammar, ParseErrorsAreOneCdcErrorLine) {
    std::vector<std::vector<std::string>> bad = {{"chunkk"}, {"store", "putt"}, {}};
    for (const auto& c : commands()) {
        auto args = words(c.path);
        args.push_back("--no-such-flag");
        bad.push_back(args);
    }
    for (const auto& args : bad) {
        const auto r = run_tool(args);
        const std::string cmd = fmt::format("{}", fmt::join(args, " "));
        EXPECT_EQ(r.exit_code, 2) << cmd;
        EXPECT_TRUE(r.err.starts_with("cdc: error: ")) << cmd << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << cmd << ": " << r.err;
        EXPECT_EQ(r.out, "") << cmd;
    }
}

// Sizes take suffixes everywhere, through the one parser (its message).
TEST(Grammar, EverySizeOptionTakesSuffixesThroughOneParser) {
    std::size_t checked = 0;
    for (const auto& c : commands()) {
        for (const auto& o : c.def["options"]) {
            if (o["type"] != "SIZE") continue;
            const std::string flag = o["names"][o["names"].size() - 1].get<std::string>();
            auto args = words(c.path);
            args.push_back(flag);
            args.push_back("8Q");
            const auto r = run_tool(args);
            EXPECT_EQ(r.exit_code, 2) << c.path << " " << flag;
            EXPECT_NE(r.err.find("'8Q' is invalid: unknown suffix 'Q' (expected a size such as 4096, 8K"),
                      std::string::npos)
                << c.path << " " << flag << ": " << r.err;
            ++checked;
        }
    }
    EXPECT_GT(checked, 30u);
}

// -a takes one name or, where a command measures several, names repeated
// or comma-separated.
TEST(Grammar, AlgorithmListsRepeatOrTakeCommas) {
    TempDir tmp;
    const auto f = tmp.write("f", random_bytes(200000, 3)).string();
    const auto a = json_of(run_tool({"analyze", "--json", "-a", "fastcdc", "-a", "jc,ultracdc", f}));
    ASSERT_EQ(a["algorithms"].size(), 3u);
    EXPECT_EQ(a["algorithms"][1]["algorithm"], "jc");
    const auto r = json_of(run_tool({"resync", "--json", "-a", "fastcdc", "-a", "jc", "--edits", "1", f}));
    EXPECT_EQ(r["results"].size(), 2u);
    const auto once = run_tool({"chunk", "-a", "fastcdc", "-a", "jc", f});
    EXPECT_EQ(once.exit_code, 2) << "chunk cuts with one algorithm";
}

TEST(Grammar, GenTakesSuffixesAndWritesToDevices) {
    const auto r = run_tool({"gen", "splitmix64:1:2K"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.size(), 2048u);
    const auto null = run_tool({"gen", "zeros:32M", "-o", "/dev/null"});
    EXPECT_EQ(null.exit_code, 0) << null.err;
    EXPECT_EQ(null.out + null.err, "");
}

// -q leaves only errors: the commands whose output is a status line print
// nothing at all (the data a command is asked for, a table or JSON, stays).
TEST(Grammar, QuietPrintsNothingButErrors) {
    TempDir tmp;
    const auto f = tmp.write("in/f.bin", random_bytes(300000, 5)).string();
    const std::string store = (tmp.path() / "store").string(), in = (tmp.path() / "in").string();
    const std::vector<std::vector<std::string>> runs = {
        {"gen", "-q", "zeros:1K", "-o", (tmp.path() / "z").string()},
        {"store", "init", "--no-encryption", "-q", store},
        {"store", "put", "-q", store, f, "--name", "f"},
        {"store", "get", "-q", store, "f", "-o", (tmp.path() / "back").string()},
        {"store", "rm", "-q", store, "f"},
        {"store", "gc", "-q", store},
        {"store", "verify", "-q", store},
        {"plot", "-q", "--chart", "cdf", "-a", "fastcdc", "-o", (tmp.path() / "g").string(), in},
        {"dupes", "-q", in},
    };
    for (const auto& args : runs) {
        const auto r = run_tool(args);
        const std::string cmd = fmt::format("{}", fmt::join(args, " "));
        EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
        EXPECT_EQ(r.err, "") << cmd;
        if (args[0] != "dupes") {
            EXPECT_EQ(r.out, "") << cmd;  // (dupes' report is its data)
        }
    }
    EXPECT_TRUE(std::filesystem::exists(tmp.path() / "g" / "compare-cdf.png"));
}

}  // namespace
}  // namespace cdc::test
