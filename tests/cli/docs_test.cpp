// SPDX-License-Identifier: Apache-2.0
// Every command has a man page and bash, zsh and fish completions, made by
// the build (tools/docgen) from the same definitions as --help: the pages
// render without a warning and name every option; the completions offer
// every command, every flag, the names an option takes and paths.
#include "cli_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const fs::path kDocs = CDC_DOCS_DIR;

// The output (stdout and stderr) of a shell command, and its exit status.
std::pair<int, std::string> shell(const std::string& command) {
    std::string out;
    FILE* p = ::popen((command + " 2>&1").c_str(), "r");
    if (p == nullptr) return {-1, ""};
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    return {::pclose(p), out};
}

struct Node {
    std::vector<std::string> path;
    Json def;
    std::string words() const {
        std::string w = "cdc";
        for (const auto& p : path) w += " " + p;
        return w;
    }
    std::string page() const {
        std::string w = "cdc";
        for (const auto& p : path) w += "-" + p;
        return w;
    }
    std::vector<std::string> long_flags() const {
        std::vector<std::string> out;
        for (const auto& o : def["options"])
            for (const auto& n : o["names"])
                if (n.get<std::string>().starts_with("--")) out.push_back(n);
        return out;
    }
    std::vector<std::string> subcommands() const {
        std::vector<std::string> out;
        for (const auto& s : def["subcommands"]) out.push_back(s["name"]);
        return out;
    }
};

void collect(const Json& def, std::vector<std::string> path, std::vector<Node>& out) {
    out.push_back({path, def});
    for (const auto& s : def["subcommands"]) {
        auto p = path;
        p.push_back(s["name"]);
        collect(s, p, out);
    }
}

const std::vector<Node>& nodes() {
    static const std::vector<Node> all = [] {
        const auto r = run_tool({"--cli-definitions"});
        EXPECT_EQ(r.exit_code, 0) << r.err;
        std::vector<Node> out;
        collect(Json::parse(r.out), {}, out);
        return out;
    }();
    return all;
}

std::set<std::string> lines(const std::string& text) {
    std::set<std::string> out;
    std::size_t at = 0;
    while (at < text.size()) {
        const auto end = text.find('\n', at);
        if (end != at) out.insert(text.substr(at, end - at));
        at = end == std::string::npos ? text.size() : end + 1;
    }
    return out;
}

TEST(Docs, EveryCommandHasAManPageThatRendersCleanly) {
    ASSERT_GT(nodes().size(), 25u);
    for (const Node& n : nodes()) {
        const fs::path page = kDocs / "man1" / (n.page() + ".1");
        ASSERT_TRUE(fs::exists(page)) << page;
        const auto [rc, warnings] = shell(fmt::format("groff -man -ww -z '{}'", page.string()));
        EXPECT_EQ(rc, 0) << page;
        EXPECT_EQ(warnings, "") << page;
        const auto [rc2, text] = shell(fmt::format("groff -man -Tascii -P-cbou '{}'", page.string()));
        ASSERT_EQ(rc2, 0) << text;
        EXPECT_NE(text.find("SYNOPSIS\n       " + n.words()), std::string::npos) << page << "\n" << text;
        for (const auto& flag : n.long_flags()) EXPECT_NE(text.find(flag), std::string::npos) << page << " " << flag;
        for (const auto& sub : n.subcommands())
            EXPECT_NE(text.find(n.page() + "-" + sub + "(1)"), std::string::npos) << page << " " << sub;
        if (n.subcommands().empty()) {
            EXPECT_NE(text.find("EXAMPLES"), std::string::npos) << page;
            EXPECT_NE(text.find("EXIT STATUS"), std::string::npos) << page;
        }
    }
}

// The candidates bash's completion function offers for `words` (the last
// one being completed).
std::set<std::string> bash_candidates(const std::vector<std::string>& words) {
    std::string args;
    for (const auto& w : words) args += " '" + w + "'";
    const auto [rc, out] = shell(fmt::format(
        "bash --norc -c 'source \"$0\"; COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); _cdc; "
        "printf \"%s\\n\" \"${{COMPREPLY[@]}}\"' '{}'{}",
        (kDocs / "completions" / "cdc").string(), args));
    EXPECT_EQ(rc, 0) << out;
    return lines(out);
}

std::set<std::string> fish_candidates(const std::string& line) {
    const auto [rc, out] = shell(fmt::format("fish --no-config -c 'source {}; complete -C \"{}\"'",
                                             (kDocs / "completions" / "cdc.fish").string(), line));
    EXPECT_EQ(rc, 0) << out;
    std::set<std::string> words;
    for (const auto& l : lines(out)) words.insert(l.substr(0, l.find('\t')));
    return words;
}

TEST(Docs, BashCompletesEveryCommandFlagAndValue) {
    for (const Node& n : nodes()) {
        auto words = n.path;
        words.insert(words.begin(), "cdc");
        words.push_back("--");
        const auto flags = bash_candidates(words);
        for (const auto& flag : n.long_flags()) EXPECT_TRUE(flags.count(flag)) << n.words() << " " << flag;
        if (n.subcommands().empty()) continue;
        words.back() = "";
        const auto subs = bash_candidates(words);
        for (const auto& sub : n.subcommands()) EXPECT_TRUE(subs.count(sub)) << n.words() << " " << sub;
    }
    EXPECT_TRUE(bash_candidates({"cdc", "chunk", "-a", "fastcdc-v"}).count("fastcdc-v1.0.0"));
    EXPECT_EQ(bash_candidates({"cdc", "analyze", "--digest", "x"}), std::set<std::string>{"xxh3"});
    EXPECT_TRUE(bash_candidates({"cdc", "chunk", "/et"}).count("/etc")) << "a path where a file is expected";
    EXPECT_TRUE(bash_candidates({"cdc", "store", "put", "--name", "/et"}).empty()) << "no path for a name";
}

TEST(Docs, FishCompletesEveryCommandAndFlag) {
    for (const Node& n : nodes()) {
        const std::string line = n.words();
        const auto flags = fish_candidates(line + " --");
        for (const auto& flag : n.long_flags()) EXPECT_TRUE(flags.count(flag)) << line << " " << flag;
        if (n.subcommands().empty()) continue;
        const auto subs = fish_candidates(line + " ");
        for (const auto& sub : n.subcommands()) EXPECT_TRUE(subs.count(sub)) << line << " " << sub;
    }
    EXPECT_TRUE(fish_candidates("cdc speed -a ultra").count("ultracdc-v1.0.0"));
}

TEST(Docs, ZshCompletionParsesAndNamesEveryCommandAndFlag) {
    const fs::path file = kDocs / "completions" / "_cdc";
    const auto [rc, out] = shell(fmt::format("zsh -n '{}'", file.string()));
    EXPECT_EQ(rc, 0) << out;
    const std::string text = read_text(file);
    EXPECT_TRUE(text.starts_with("#compdef cdc\n"));
    for (const Node& n : nodes()) {
        std::string key;
        for (const auto& p : n.path) key += " " + p;
        EXPECT_NE(text.find("(\"" + key + "\")"), std::string::npos) << n.words();
        for (const auto& flag : n.long_flags()) {
            // "(-a --algorithm)--algorithm[...]", or "*--chart[...]" for a repeatable one
            EXPECT_TRUE(text.find(")" + flag + "[") != std::string::npos || text.find("*" + flag + "[") != std::string::npos)
                << flag;
        }
    }
}

}  // namespace
}  // namespace cdc::test
