// SPDX-License-Identifier: Apache-2.0
// The exclude patterns (cdc/exclude.hpp): gitignore's rules as a table
// (names at any depth, anchoring, directory-only, negation, `**`, sets and
// escapes), roots by name, pattern files, bad patterns, and patterns that
// would make a backtracking matcher take exponential time.
#include "test_support.hpp"

#include <cdc/error.hpp>
#include <cdc/exclude.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cdc::test {
namespace {

struct Case {
    std::vector<std::string> patterns;
    std::string path;
    bool is_dir;
    bool excluded;
};

ExcludePatterns patterns_of(const std::vector<std::string>& list) {
    ExcludePatterns p;
    for (const auto& s : list) p.add(s);
    return p;
}

constexpr bool F = false, D = true;  // a file, a directory

TEST(Exclude, GitignoreTable) {
    const std::vector<Case> cases = {
        // A pattern without a slash: the name, at any depth, file or directory.
        {{"*.o"}, "a.o", F, true},
        {{"*.o"}, "src/lib/a.o", F, true},
        {{"*.o"}, "a.o", D, true},
        {{"*.o"}, "a.oo", F, false},
        {{"*.o"}, ".o", F, true},  // no special leading period
        {{"*.o"}, "a.o/b", F, false},  // (b itself; a.o was excluded before the walk got here)
        {{"foo"}, "x/y/foo", D, true},
        {{"foo"}, "x/foo/y", F, false},
        {{"?.c"}, "a.c", F, true},
        {{"?.c"}, "ab.c", F, false},
        {{"?.c"}, "d/b.c", F, true},
        {{"[abc].txt"}, "b.txt", F, true},
        {{"[abc].txt"}, "d.txt", F, false},
        {{"[!abc].txt"}, "d.txt", F, true},
        {{"[!abc].txt"}, "a.txt", F, false},
        {{"[^abc].txt"}, "a.txt", F, false},
        {{"[a-c]x"}, "bx", F, true},
        {{"[a-c]x"}, "dx", F, false},
        {{"[]]x"}, "]x", F, true},
        {{"[a-]"}, "-", F, true},
        {{"[[:digit:]]*"}, "9lives", F, true},
        {{"[[:digit:]]*"}, "lives", F, false},
        {{"[[:upper:][:digit:]]"}, "Q", F, true},
        {{"\\*"}, "*", F, true},
        {{"\\*"}, "a", F, false},
        {{"a\\?"}, "a?", F, true},
        {{"a\\?"}, "ab", F, false},
        {{"\\!important"}, "!important", F, true},
        {{"\\#x"}, "#x", F, true},
        {{"foo**bar"}, "fooxbar", F, true},  // ** inside a name is *
        {{"foo**bar"}, "foobar", F, true},
        {{"**"}, "anything", F, true},
        {{"caf\xc3\xa9"}, "caf\xc3\xa9", F, true},  // bytes, whatever the locale
        {{"caf?"}, "caf\xc3\xa9", F, false},       // ? is one byte, not one character
        {{"caf??"}, "caf\xc3\xa9", F, true},
        // A trailing slash: directories only.
        {{"foo/"}, "foo", D, true},
        {{"foo/"}, "foo", F, false},
        {{"foo/"}, "a/b/foo", D, true},
        // A slash at the start or in the middle: anchored to the root.
        {{"/foo"}, "foo", F, true},
        {{"/foo"}, "a/foo", F, false},
        {{"doc/frotz"}, "doc/frotz", D, true},
        {{"doc/frotz"}, "a/doc/frotz", D, false},
        {{"doc/frotz/"}, "doc/frotz", D, true},
        {{"doc/frotz/"}, "doc/frotz", F, false},
        {{"/*.c"}, "cat-file.c", F, true},
        {{"/*.c"}, "mozilla-sha1/sha1.c", F, false},
        {{"a/*/c"}, "a/b/c", F, true},
        {{"a/*/c"}, "a/b/d/c", F, false},  // * never crosses a /
        {{"a//b"}, "a/b", F, true},
        // ** as a whole component.
        {{"**/foo"}, "foo", F, true},
        {{"**/foo"}, "a/b/foo", F, true},
        {{"**/foo"}, "a/foo/b", F, false},
        {{"**/foo/bar"}, "x/foo/bar", F, true},
        {{"**/foo/bar"}, "foo/bar", F, true},
        {{"**/foo/bar"}, "foo/x/bar", F, false},
        {{"abc/**"}, "abc", D, false},  // everything inside, not abc itself
        {{"abc/**"}, "abc/x", F, true},
        {{"abc/**"}, "abc/x/y", F, true},
        {{"abc/**"}, "xabc/x", F, false},
        {{"a/**/b"}, "a/b", F, true},
        {{"a/**/b"}, "a/x/b", F, true},
        {{"a/**/b"}, "a/x/y/b", F, true},
        {{"a/**/b"}, "a/x/y/c", F, false},
        {{"a/**/b"}, "b", F, false},
        {{"a/**/**/b"}, "a/b", F, true},
        {{"a/**/b/**/c"}, "a/b/x/b/y/c", F, true},
        {{"a/**/b/**/c"}, "a/b/x/c/y/b", F, false},
        {{"/**"}, "x/y", F, true},
        // Negation: the last pattern that matches decides.
        {{"*.log", "!keep.log"}, "x.log", F, true},
        {{"*.log", "!keep.log"}, "keep.log", F, false},
        {{"*.log", "!keep.log"}, "a/keep.log", F, false},
        {{"!keep.log", "*.log"}, "keep.log", F, true},
        {{"/*", "!/foo"}, "foo", D, false},
        {{"/*", "!/foo"}, "bar", D, true},
        {{"/*", "!/foo"}, "foo/bar", F, false},  // (not a direct child of the root)
        {{"build/", "!build"}, "build", D, false},
        {{"!build", "build/"}, "build", D, true},
        {{"!build", "build/"}, "build", F, false},  // the directory-only pattern does not apply to a file
        {{"x", "!y"}, "z", F, false},
    };
    for (const auto& c : cases) {
        const ExcludePatterns p = patterns_of(c.patterns);
        std::string list;
        for (const auto& s : c.patterns) list += "'" + s + "' ";
        EXPECT_EQ(p.excluded(c.path, c.is_dir), c.excluded)
            << list << "on " << (c.is_dir ? "directory " : "file ") << c.path;
    }
}

TEST(Exclude, RootsAreMatchedByNameAgainstPatternsThatAreNotAnchored) {
    const ExcludePatterns p = patterns_of({"*.o", "/top", "tmp/", "a/b"});
    EXPECT_TRUE(p.root_excluded("x.o", false));
    EXPECT_FALSE(p.root_excluded("top", true));  // anchored: below a root only
    EXPECT_FALSE(p.root_excluded("b", true));
    EXPECT_TRUE(p.root_excluded("tmp", true));
    EXPECT_FALSE(p.root_excluded("tmp", false));
    EXPECT_FALSE(patterns_of({"*.o", "!keep.o"}).root_excluded("keep.o", false));
}

TEST(Exclude, BadPatternsAreOptionErrorsNamingThem) {
    for (const char* bad : {"", "!", "/", "//", "a[b", "[", "[!", "[a-", "a\\", "[[:nope:]]", "./a", "a/../b", "..",
                            "[\\"}) {
        ExcludePatterns p;
        try {
            p.add(bad);
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const OptionError& e) {
            EXPECT_EQ(e.field(), "exclude");
            EXPECT_NE(std::string(e.what()).find("'" + std::string(bad) + "'"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW((void)glob_match("[ab", "a"), OptionError);
    EXPECT_TRUE(glob_match("[ab]*", "bob"));
}

TEST(Exclude, PatternFileCommentsBlankLinesTrailingSpacesAndCarriageReturns) {
    TempDir tmp;
    const std::string text = "# objects\n"
                             "*.o\n"
                             "\n"
                             "   \n"
                             "tmp/   \n"          // trailing spaces dropped
                             "space\\ \n"          // ... unless escaped
                             "win.txt\r\n"         // CRLF
                             "\\#hash\n"
                             "!keep.o\n"
                             "last";              // no final newline
    const auto path = (tmp.path() / "ex").string();
    tmp.write("ex", std::vector<std::uint8_t>(text.begin(), text.end()));
    ExcludePatterns p;
    p.add_file(path);
    EXPECT_EQ(p.size(), 7u);
    EXPECT_TRUE(p.excluded("a.o", false));
    EXPECT_FALSE(p.excluded("keep.o", false));
    EXPECT_TRUE(p.excluded("tmp", true));
    EXPECT_FALSE(p.excluded("tmp", false));
    EXPECT_TRUE(p.excluded("space ", false));
    EXPECT_FALSE(p.excluded("space", false));
    EXPECT_TRUE(p.excluded("win.txt", false));
    EXPECT_TRUE(p.excluded("#hash", false));
    EXPECT_FALSE(p.excluded("# objects", false));
    EXPECT_TRUE(p.excluded("last", false));

    const std::string bad = "ok\n# fine\n\nbad[\n";
    tmp.write("bad", std::vector<std::uint8_t>(bad.begin(), bad.end()));
    try {
        ExcludePatterns q;
        q.add_file((tmp.path() / "bad").string());
        ADD_FAILURE() << "no error";
    } catch (const OptionError& e) {
        EXPECT_EQ(e.field(), "exclude_file");
        EXPECT_NE(std::string(e.what()).find("bad:4:"), std::string::npos) << e.what();
    }
    EXPECT_THROW(ExcludePatterns().add_file((tmp.path() / "missing").string()), IoError);
    EXPECT_THROW(ExcludePatterns().add_file(tmp.path().string()), IoError);  // a directory
}

// A backtracking matcher takes exponential time on these (each * or **
// retried at every position for every choice of the ones before it); the
// iterative one takes O(pattern x text). A regression here hangs the test
// until CTest's timeout: no timing assertion is needed.
TEST(Exclude, PathologicalPatternsFinishFast) {
    std::string stars;
    for (int i = 0; i < 30; ++i) stars += "*a";
    const std::string name(20000, 'a');
    EXPECT_FALSE(glob_match(stars + "*b", name));
    EXPECT_TRUE(glob_match(stars + "*", name));
    std::string deep;
    for (int i = 0; i < 3000; ++i) deep += (i ? "/a" : "a");
    std::string dirs;
    for (int i = 0; i < 30; ++i) dirs += "**/a/";
    ExcludePatterns p = patterns_of({dirs + "**/b", "[!a]*/**/?/**/" + std::string(40, '*') + "b"});
    EXPECT_FALSE(p.excluded(deep, false));
    EXPECT_TRUE(p.excluded(deep + "/b", false));
}

}  // namespace
}  // namespace cdc::test
