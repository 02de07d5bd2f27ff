// SPDX-License-Identifier: Apache-2.0
// Names that are not UTF-8 or hold control bytes, through every command
// (issue 12, item 2): JSON parses and gives every name back byte for byte
// ("K" + "K_bytes" base64), CSV reads back with a strict parser, and no text
// on stdout or stderr carries a raw control byte (no terminal escape
// injection, no broken lines).
#include "cli_support.hpp"
#include "dupes_support.hpp"
#include "escape.hpp"

#include <gtest/gtest.h>

#include <set>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

const std::string kBadUtf8 = "a\xff\rb";                       // invalid UTF-8, a carriage return
const std::string kEscapes = "c\x1b]0;pwn\x07,\"q\"\nd e ";     // ESC ] title BEL, comma, quotes, newline, trailing space
const std::string kFifo = "fifo\xfe\x1b[2J";                   // invalid UTF-8, "clear screen"
const std::string kDangling = "dangling\xff";

struct Tree {
    TempDir tmp;
    fs::path root = tmp.path() / "t";
    std::vector<std::uint8_t> bytes = random_bytes(40000, 99);
    Tree() {
        write_file(root / kBadUtf8, bytes);
        write_file(root / kEscapes, bytes);
        write_file(root / "plain", random_bytes(30000, 98));
        if (::mkfifo((root / kFifo).c_str(), 0644) != 0) throw std::runtime_error("mkfifo");
        fs::create_symlink(root / "nowhere", root / kDangling);
    }
    std::string path(const std::string& name) const { return (root / name).string(); }
};

// No raw control byte (but newline ends a line) nor any of the invalid
// bytes of the names.
void expect_clean(const std::string& text, const std::string& what) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        ASSERT_FALSE((c < 0x20 && c != '\n') || c == 0x7f || c == 0xff || c == 0xfe)
            << what << ": raw byte 0x" << fmt::format("{:02x}", c) << " at " << i << " in:\n" << text;
    }
}

// The name of `j[key]`, exactly: "K_bytes" (base64) when present, else "K".
std::string name_of(const nlohmann::json& j, const std::string& key) {
    if (j.contains(key + "_bytes")) return tools::base64_decode(j[key + "_bytes"].get<std::string>());
    return j[key].get<std::string>();
}

std::vector<std::string> names_of(const nlohmann::json& j, const std::string& key) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < j[key].size(); ++i) {
        const bool raw = j.contains(key + "_bytes") && !j[key + "_bytes"][i].is_null();
        out.push_back(raw ? tools::base64_decode(j[key + "_bytes"][i].get<std::string>()) : j[key][i].get<std::string>());
        EXPECT_EQ(j[key][i].get<std::string>(), tools::to_valid_utf8(out.back())) << "the readable form";
    }
    return out;
}

TEST(CliNames, DupesJsonCsvAndText) {
    Tree t;
    const auto j = run_tool({"dupes", "--json", t.root.string()});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    const auto doc = nlohmann::json::parse(j.out);
    ASSERT_EQ(doc["groups"].size(), 1u) << j.out;
    EXPECT_EQ(names_of(doc["groups"][0], "files"), (std::vector<std::string>{t.path(kBadUtf8), t.path(kEscapes)}));
    EXPECT_TRUE(doc["groups"][0]["files_bytes"][1].is_null());

    const auto plan = run_tool({"dupes", "--json", "--action", "hardlink", "--dry-run", t.root.string()});
    ASSERT_EQ(plan.exit_code, 0) << plan.err;
    const auto actions = nlohmann::json::parse(plan.out)["actions"];
    ASSERT_EQ(actions.size(), 1u);
    EXPECT_EQ(name_of(actions[0], "path"), t.path(kEscapes));
    EXPECT_EQ(name_of(actions[0], "kept"), t.path(kBadUtf8));

    const auto c = run_tool({"dupes", "--csv", t.root.string()});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    const auto rows = parse_csv(c.out);
    ASSERT_EQ(rows.size(), 3u) << c.out;
    EXPECT_EQ(rows[0], (std::vector<std::string>{"kind", "group", "size", "path"}));
    EXPECT_EQ(rows[1], (std::vector<std::string>{"duplicate", "1", "40000", t.path(kBadUtf8)}));
    EXPECT_EQ(rows[2], (std::vector<std::string>{"duplicate", "1", "40000", t.path(kEscapes)}));

    const auto text = run_tool({"dupes", t.root.string()});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    expect_clean(text.out, "cdc dupes");
    EXPECT_NE(text.out.find(t.path("a\\xFF\\x0Db")), std::string::npos) << text.out;
    EXPECT_NE(text.out.find(t.path("c\\x1B]0;pwn\\x07,\"q\"\\x0Ad e ")), std::string::npos) << text.out;
}

TEST(CliNames, AnalyzeAndCompareErrorsAndWarnings) {
    Tree t;
    for (const std::vector<std::string>& cmd :
         {std::vector<std::string>{"analyze", "--json", "--follow-symlinks", t.root.string()},
          {"compare", "-a", "fastcdc", "-b", "jc", "--json", "--follow-symlinks", t.root.string()}}) {
        const auto r = run_tool(cmd);
        ASSERT_EQ(r.exit_code, 3) << cmd[0] << ": " << r.err;  // the dangling link
        const auto doc = nlohmann::json::parse(r.out);
        ASSERT_EQ(doc["errors"].size(), 1u) << r.out;
        EXPECT_EQ(name_of(doc["errors"][0], "path"), t.path(kDangling));
        ASSERT_EQ(doc["warnings"].size(), 1u) << r.out;
        EXPECT_EQ(name_of(doc["warnings"][0], "path"), t.path(kFifo));
        expect_clean(r.err, cmd[0] + " stderr");
        EXPECT_NE(r.err.find("fifo\\xFE\\x1B[2J"), std::string::npos) << r.err;
    }
    const auto text = run_tool({"analyze", "--follow-symlinks", t.root.string()});
    EXPECT_EQ(text.exit_code, 3);
    expect_clean(text.out + text.err, "analyze");
}

TEST(CliNames, ChunkResyncBenchPlotAndErrors) {
    Tree t;
    const auto j = run_tool({"chunk", "--json", t.path(kBadUtf8)});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_EQ(name_of(nlohmann::json::parse(j.out), "path"), t.path(kBadUtf8));

    const auto r = run_tool({"resync", t.path(kEscapes)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_clean(r.out + r.err, "resync");
    EXPECT_EQ(nlohmann::json::parse(run_tool({"resync", "--json", t.path(kEscapes)}).out)["bytes"], 40000);

    const auto b = run_tool({"bench", "run", t.root.string(), "--json"});
    expect_clean(b.err, "bench stderr");
    EXPECT_EQ(nlohmann::json::parse(b.out)["summary"]["files"], 3) << b.out;

    const fs::path out = t.tmp.path() / ("graphs" + kBadUtf8);
    const auto p = run_tool({"plot", "--chart", "cdf", "-a", "fastcdc", "-o", out.string(), t.path("plain")});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    expect_clean(p.out + p.err, "plot");
    EXPECT_TRUE(fs::exists(out / "compare-cdf.png"));

    // A name in an error message, a name given as an option value.
    const auto missing = run_tool({"chunk", t.path("gone\x1b[31m")});
    EXPECT_EQ(missing.exit_code, 2);
    expect_clean(missing.err, "chunk error");
    EXPECT_NE(missing.err.find("gone\\x1B[31m"), std::string::npos) << missing.err;
    const auto bad = run_tool({"analyze", "--jobs", "1\x1b[31m", t.path("plain")});
    EXPECT_EQ(bad.exit_code, 2);
    expect_clean(bad.err, "analyze usage error");
}

}  // namespace
}  // namespace cdc::test
