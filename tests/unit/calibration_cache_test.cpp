// SPDX-License-Identifier: Apache-2.0
// The kernel calibration cache on disk (src/kernels/calibration_cache.hpp):
// a stored calibration reads back as it was written, 0600 in a 0700
// directory; a missing, damaged, foreign, not-private or tampered file only
// means "calibrate again"; a file can never select a level the CPU cannot
// run or a kernel the family does not have; the environment picks the
// directory or turns the cache off; and a process uses what an earlier one
// stored (its finders run the stored choice) instead of measuring.
#include "test_support.hpp"

#include "kernels/calibration_cache.hpp"  // (src/: the library's internals)

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;
using detail::CalibrationFile;
using detail::CalibrationIdentity;

const CalibrationIdentity kIdentity{"x86 TestVendor family 1 model 2 stepping 3", "version 9 build-id ab kernels cd"};

KernelCalibration sample(std::string_view family = "fastcdc", KernelLevel chosen = KernelLevel::wide) {
    KernelCalibration c;
    c.family = family;
    c.candidates = {{KernelLevel::scalar, 2307.25}, {KernelLevel::wide, 5010.5}, {KernelLevel::avx512, 3320.125}};
    c.chosen = chosen;
    c.bytes = 262144;
    c.rounds = 7;
    c.seconds = 0.0028055140000000003;
    return c;
}

// The levels a family "has" in these tests: scalar, wide and avx512.
bool runs_test_levels(KernelLevel l) {
    return l == KernelLevel::scalar || l == KernelLevel::wide || l == KernelLevel::avx512;
}

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}
void write_text(const fs::path& p, const std::string& text, fs::perms perms = fs::perms::owner_read | fs::perms::owner_write) {
    fs::remove(p);
    std::ofstream(p, std::ios::binary) << text;
    fs::permissions(p, perms);
}
/// `text` (without its checksum line) with a correct checksum line: a file
/// that is intact but says what a tamperer wants.
std::string with_checksum(const std::string& body) {
    return body + "checksum " + detail::calibration_checksum(body) + "\n";
}
std::string without_checksum(const std::string& text) {
    return text.substr(0, text.rfind("checksum "));
}
unsigned mode_of(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
}

TEST(CalibrationCache, StoredCalibrationsReadBackPrivateFileInPrivateDirectories) {
    TempDir tmp;
    const fs::path dir = tmp.path() / "home" / ".cache" / "cdc-chunkers";  // none of it exists yet
    CalibrationFile file(dir, kIdentity);
    EXPECT_EQ(file.path().parent_path(), dir);
    EXPECT_FALSE(file.load("fastcdc", runs_test_levels).has_value());  // missing: calibrate
    ASSERT_TRUE(file.store(sample("fastcdc", KernelLevel::wide)));
    ASSERT_TRUE(file.store(sample("jc", KernelLevel::avx512)));
    EXPECT_EQ(mode_of(dir), 0700u);
    EXPECT_EQ(mode_of(dir.parent_path()), 0700u);  // created parents are private too
    EXPECT_EQ(mode_of(file.path()), 0600u);

    const auto c = file.load("fastcdc", runs_test_levels);
    ASSERT_TRUE(c.has_value());
    const KernelCalibration want = sample();
    EXPECT_EQ(c->family, "fastcdc");
    EXPECT_EQ(c->chosen, KernelLevel::wide);
    EXPECT_TRUE(c->cached);
    EXPECT_EQ(c->bytes, want.bytes);
    EXPECT_EQ(c->rounds, want.rounds);
    EXPECT_EQ(c->seconds, want.seconds);  // exactly: shortest round-trip text
    ASSERT_EQ(c->candidates.size(), want.candidates.size());
    for (std::size_t k = 0; k < want.candidates.size(); ++k) {
        EXPECT_EQ(c->candidates[k].level, want.candidates[k].level);
        EXPECT_EQ(c->candidates[k].mb_s, want.candidates[k].mb_s);
    }
    // The other family's entry survived the second store, and a third store
    // replaces an entry rather than adding one.
    ASSERT_TRUE(file.store(sample("fastcdc", KernelLevel::scalar)));
    EXPECT_EQ(file.load("jc", runs_test_levels)->chosen, KernelLevel::avx512);
    EXPECT_EQ(file.load("fastcdc", runs_test_levels)->chosen, KernelLevel::scalar);
    EXPECT_FALSE(file.load("ultracdc", runs_test_levels).has_value());
    const std::string text = read_text(file.path());
    EXPECT_EQ(text.find("family fastcdc"), text.rfind("family fastcdc"));
    // Nothing left behind but the file.
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(CalibrationCache, DamagedFilesAreCalibratedAgainAndRewritten) {
    TempDir tmp;
    CalibrationFile file(tmp.path() / "c", kIdentity);
    ASSERT_TRUE(file.store(sample()));
    const std::string good = read_text(file.path());
    ASSERT_TRUE(file.load("fastcdc", runs_test_levels).has_value());

    std::vector<std::pair<std::string, std::string>> damaged = {
        {"empty", ""},
        {"garbage", "\x01\x02 not a calibration \xff\n"},
        {"no final newline", good.substr(0, good.size() - 1)},
        {"no checksum line", without_checksum(good)},
        {"appended line", good + "family jc chosen wide bytes 1 rounds 1 seconds 0 wide=1\n"},
    };
    for (std::size_t cut : {std::size_t{1}, std::size_t{40}, good.size() / 2, good.size() - 10})
        damaged.push_back({"truncated at " + std::to_string(cut), good.substr(0, cut)});
    for (std::size_t at = 0; at < good.size(); at += 7) {  // one flipped bit anywhere
        std::string t = good;
        t[at] = static_cast<char>(t[at] ^ 0x04);
        damaged.push_back({"bit flipped at " + std::to_string(at), t});
    }
    for (const auto& [what, text] : damaged) {
        write_text(file.path(), text);
        EXPECT_FALSE(file.load("fastcdc", runs_test_levels).has_value()) << what;
    }
    // The next store replaces the damaged file with a good one.
    ASSERT_TRUE(file.store(sample("jc")));
    EXPECT_TRUE(file.load("jc", runs_test_levels).has_value());
    EXPECT_FALSE(file.load("fastcdc", runs_test_levels).has_value());  // the damaged file's entries are gone
}

TEST(CalibrationCache, AnotherCpuOrBuildIsForeign) {
    TempDir tmp;
    CalibrationFile mine(tmp.path(), kIdentity);
    CalibrationFile other_cpu(tmp.path(), {"x86 TestVendor family 1 model 2 stepping 4", kIdentity.build});
    CalibrationFile other_build(tmp.path(), {kIdentity.cpu, "version 9 build-id ac kernels cd"});
    EXPECT_NE(mine.path(), other_cpu.path());  // one file per identity
    EXPECT_NE(mine.path(), other_build.path());
    ASSERT_TRUE(mine.store(sample()));
    EXPECT_FALSE(other_cpu.load("fastcdc", runs_test_levels).has_value());
    // The same file under another identity's name (copied, renamed): foreign.
    for (const CalibrationFile* other : {&other_cpu, &other_build}) {
        write_text(other->path(), read_text(mine.path()));
        EXPECT_FALSE(other->load("fastcdc", runs_test_levels).has_value()) << other->path();
    }
}

TEST(CalibrationCache, IntactFilesNamingKernelsThatCannotRunAreRejected) {
    TempDir tmp;
    CalibrationFile file(tmp.path(), kIdentity);
    ASSERT_TRUE(file.store(sample()));
    const std::string body = without_checksum(read_text(file.path()));
    const std::string line = "family fastcdc chosen wide bytes 262144 rounds 7 seconds 0.0028055140000000003 "
                             "scalar=2307.25 wide=5010.5 avx512=3320.125\n";
    ASSERT_NE(body.find(line), std::string::npos) << body;
    const auto with_line = [&](const std::string& replacement) {
        std::string b = body;
        b.replace(b.find(line), line.size(), replacement);
        return with_checksum(b);
    };
    // The unchanged body with a fresh checksum reads back (the edits below are what is rejected).
    write_text(file.path(), with_line(line));
    ASSERT_TRUE(file.load("fastcdc", runs_test_levels).has_value());

    const std::map<std::string, std::string> tampered = {
        {"a level the CPU or family does not run", "family fastcdc chosen avx512vbmi bytes 262144 rounds 7 seconds 0.1 "
                                                   "scalar=1 avx512vbmi=9\n"},
        {"a candidate it does not run", "family fastcdc chosen wide bytes 262144 rounds 7 seconds 0.1 scalar=1 wide=9 "
                                        "avx2=3\n"},
        {"no such level", "family fastcdc chosen avx1024 bytes 262144 rounds 7 seconds 0.1 scalar=1 avx1024=9\n"},
        {"auto is no kernel", "family fastcdc chosen auto bytes 262144 rounds 7 seconds 0.1 scalar=1 auto=9\n"},
        {"chosen not measured", "family fastcdc chosen wide bytes 262144 rounds 7 seconds 0.1 scalar=1 avx512=9\n"},
        {"a candidate twice", "family fastcdc chosen wide bytes 262144 rounds 7 seconds 0.1 wide=1 wide=9\n"},
        {"not a number", "family fastcdc chosen wide bytes 262144 rounds 7 seconds 0.1 scalar=1 wide=fast\n"},
        {"not finite", "family fastcdc chosen wide bytes 262144 rounds 7 seconds 0.1 scalar=1 wide=inf\n"},
        {"negative speed", "family fastcdc chosen wide bytes 262144 rounds 7 seconds 0.1 scalar=-1 wide=9\n"},
        {"no rounds", "family fastcdc chosen wide bytes 262144 rounds 0 seconds 0.1 scalar=1 wide=9\n"},
        {"no candidates", "family fastcdc chosen wide bytes 262144 rounds 7 seconds 0.1\n"},
        {"the family twice", line + line},
    };
    for (const auto& [what, replacement] : tampered) {
        write_text(file.path(), with_line(replacement));
        EXPECT_FALSE(file.load("fastcdc", runs_test_levels).has_value()) << what;
    }
}

TEST(CalibrationCache, FilesAndDirectoriesThatAreNotPrivateAreNotTrusted) {
    TempDir tmp;
    const fs::path dir = tmp.path() / "c";
    CalibrationFile file(dir, kIdentity);
    ASSERT_TRUE(file.store(sample()));
    ASSERT_TRUE(file.load("fastcdc", runs_test_levels).has_value());

    // A file others may read or write.
    fs::permissions(file.path(), fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_write);
    EXPECT_FALSE(file.load("fastcdc", runs_test_levels).has_value());
    fs::permissions(file.path(), fs::perms::owner_read | fs::perms::owner_write);
    ASSERT_TRUE(file.load("fastcdc", runs_test_levels).has_value());

    // A symbolic link in place of the file (to an intact copy).
    const fs::path copy = tmp.path() / "copy.txt";
    fs::copy_file(file.path(), copy);
    fs::permissions(copy, fs::perms::owner_read | fs::perms::owner_write);
    fs::remove(file.path());
    fs::create_symlink(copy, file.path());
    EXPECT_FALSE(file.load("fastcdc", runs_test_levels).has_value());
    fs::remove(file.path());
    fs::copy_file(copy, file.path());
    fs::permissions(file.path(), fs::perms::owner_read | fs::perms::owner_write);
    ASSERT_TRUE(file.load("fastcdc", runs_test_levels).has_value());

    // A directory others may enter: neither read nor written.
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
    EXPECT_FALSE(file.load("fastcdc", runs_test_levels).has_value());
    EXPECT_FALSE(file.store(sample("jc")));
    fs::permissions(dir, fs::perms::owner_all);
    EXPECT_FALSE(file.load("jc", runs_test_levels).has_value());

    // Another user's file (only root can make one here).
    if (::geteuid() == 0) {
        ASSERT_EQ(::chown(file.path().c_str(), 65534, 65534), 0);
        EXPECT_FALSE(file.load("fastcdc", runs_test_levels).has_value());
        ASSERT_TRUE(file.store(sample()));  // replaced by one of ours
        EXPECT_TRUE(file.load("fastcdc", runs_test_levels).has_value());
    }
}

TEST(CalibrationCache, WritesReplaceTheFileWholeAndIgnoreLeftovers) {
    TempDir tmp;
    CalibrationFile file(tmp.path(), kIdentity);
    // A temporary file an interrupted writer left behind, half written.
    const fs::path leftover = file.path().string() + ".a1B2c3";
    write_text(leftover, "cdc-chunkers kernel calibration v1\ncpu x");
    EXPECT_FALSE(file.load("fastcdc", runs_test_levels).has_value());
    ASSERT_TRUE(file.store(sample()));
    struct stat before {};
    ASSERT_EQ(::stat(file.path().c_str(), &before), 0);
    ASSERT_TRUE(file.store(sample("jc")));
    struct stat after {};
    ASSERT_EQ(::stat(file.path().c_str(), &after), 0);
    // A new file renamed over the old one, never the old one rewritten in place.
    EXPECT_NE(before.st_ino, after.st_ino);
    EXPECT_TRUE(file.load("fastcdc", runs_test_levels).has_value());
    std::size_t files = 0;
    for (const auto& e : fs::directory_iterator(tmp.path())) {
        ++files;
        EXPECT_TRUE(e.path() == file.path() || e.path() == leftover) << e.path();
    }
    EXPECT_EQ(files, 2u);
}

TEST(CalibrationCache, ANewFileRemovesTheOldestPastTheNewestSixteen) {
    TempDir tmp;
    const fs::path dir = tmp.path() / "cdc-chunkers";
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all);
    // 20 files of earlier builds, the oldest first (a minute apart), and
    // files that are not calibrations.
    const auto now = fs::file_time_type::clock::now();
    for (int k = 0; k < 20; ++k) {
        const fs::path p = dir / fmt::format("kernels-old{:02}.txt", k);
        write_text(p, "x\n");
        fs::last_write_time(p, now - std::chrono::minutes(60 - k));
    }
    write_text(dir / "notes.txt", "kept\n");
    fs::create_directory(dir / "kernels-dir.txt");
    fs::last_write_time(dir / "notes.txt", now - std::chrono::hours(48));
    CalibrationFile file(dir, kIdentity);
    ASSERT_TRUE(file.store(sample()));
    std::set<std::string> left;
    for (const auto& e : fs::directory_iterator(dir)) left.insert(e.path().filename().string());
    std::set<std::string> want{"notes.txt", "kernels-dir.txt", file.path().filename().string()};
    for (int k = 5; k < 20; ++k) want.insert(fmt::format("kernels-old{:02}.txt", k));  // the newest 15 + the new one
    EXPECT_EQ(left, want);
    // A second family in the same file: nothing more goes.
    write_text(dir / "kernels-newer.txt", "x\n");
    ASSERT_TRUE(file.store(sample("jc")));
    EXPECT_TRUE(fs::exists(dir / "kernels-old05.txt"));
    EXPECT_TRUE(file.load("jc", runs_test_levels).has_value() && file.load("fastcdc", runs_test_levels).has_value());
}

TEST(CalibrationCache, TheEnvironmentChoosesTheDirectoryOrTurnsTheCacheOff) {
    const auto dir = [](std::map<std::string, std::string> env) {
        return detail::calibration_cache_dir([&](const char* name) -> const char* {
            const auto it = env.find(name);
            return it == env.end() ? nullptr : it->second.c_str();
        });
    };
    EXPECT_EQ(dir({{"XDG_CACHE_HOME", "/x/cache"}, {"HOME", "/h"}}), fs::path("/x/cache/cdc-chunkers"));
    EXPECT_EQ(dir({{"HOME", "/h"}}), fs::path("/h/.cache/cdc-chunkers"));
    EXPECT_EQ(dir({{"XDG_CACHE_HOME", "relative"}, {"HOME", "/h"}}), fs::path("/h/.cache/cdc-chunkers"));
    EXPECT_EQ(dir({{"XDG_CACHE_HOME", ""}, {"HOME", "/h"}}), fs::path("/h/.cache/cdc-chunkers"));
    EXPECT_EQ(dir({}), std::nullopt);
    EXPECT_EQ(dir({{"HOME", "relative"}}), std::nullopt);
    for (const char* off : {"0", "off", "no", "false"})
        EXPECT_EQ(dir({{"CDC_KERNEL_CACHE", off}, {"HOME", "/h"}}), std::nullopt) << off;
    EXPECT_EQ(dir({{"CDC_KERNEL_CACHE", "1"}, {"HOME", "/h"}}), fs::path("/h/.cache/cdc-chunkers"));
}

TEST(CalibrationCache, IdentitiesNameTheCpuAndTheBuild) {
    const std::string cpu = detail::cpu_identity();
    EXPECT_FALSE(cpu.empty());
    EXPECT_EQ(cpu, detail::cpu_identity());
#if defined(__x86_64__)
    EXPECT_NE(cpu.find(" family "), std::string::npos) << cpu;
    EXPECT_NE(cpu.find(" stepping "), std::string::npos) << cpu;
    EXPECT_NE(cpu.find(" leaf7 "), std::string::npos) << cpu;
#endif
    const std::string a = detail::build_identity("fastcdc scalar wide;");
    EXPECT_EQ(a, detail::build_identity("fastcdc scalar wide;"));
    EXPECT_NE(a, detail::build_identity("fastcdc scalar wide avx512;"));
    EXPECT_NE(a.find(kVersionString), std::string::npos) << a;
    EXPECT_NE(a.find("build-id "), std::string::npos) << a;
}

/// The library's own use. Its calibrations and the cache file it opens are
/// per process, so each scenario runs in a fresh process of its own (a
/// death test in the "threadsafe" style re-executes this binary), with
/// XDG_CACHE_HOME set before any kernel is used. Each returns what went
/// wrong ("" if nothing).
#define CHECK_OR_RETURN(cond, what) \
    do {                            \
        if (!(cond)) return what;   \
    } while (false)

/// A stored choice that is not the fastest but is a kernel the family has
/// is what finders then run; one naming a level where the family has no
/// kernel is measured again and replaced.
std::string a_process_runs_what_an_earlier_one_stored(const fs::path& home) {
    ::setenv("XDG_CACHE_HOME", home.c_str(), 1);
    ::unsetenv("CDC_KERNEL_CACHE");
    CHECK_OR_RETURN(default_kernel_level() == KernelLevel::automatic, "run without CDC_KERNEL");
    const auto path = kernel_calibration_cache_file();
    CHECK_OR_RETURN(path.has_value(), "no cache file");
    CHECK_OR_RETURN(fs::path(*path).parent_path() == home / "cdc-chunkers", "cache file elsewhere: " + *path);

    // jc measured here (nothing stored yet), and stored.
    const auto jc = kernel_calibration("jc");
    CHECK_OR_RETURN(jc && !jc->cached, "jc not measured");
    const std::string text = read_text(*path);
    CHECK_OR_RETURN(text.find("\nfamily jc chosen ") != std::string::npos, "jc not stored: " + text);

    // An earlier process's entries for fastcdc (the scalar reference
    // chosen: slower than its kernels, but a kernel it has) and for
    // fastcdc4stadia (avx2: a level where it has no kernel).
    write_text(*path, with_checksum(without_checksum(text) +
                                    "family fastcdc chosen scalar bytes 1024 rounds 3 seconds 0.5 scalar=100 wide=50\n"
                                    "family fastcdc4stadia chosen avx2 bytes 1024 rounds 3 seconds 0.5 scalar=1 avx2=9\n"));

    const auto fastcdc = kernel_calibration("fastcdc");
    CHECK_OR_RETURN(fastcdc && fastcdc->cached && fastcdc->chosen == KernelLevel::scalar && fastcdc->seconds == 0.5,
                    "fastcdc's stored choice not used");
    CHECK_OR_RETURN(make_cut_finder("fastcdc", {})->kernel_level() == KernelLevel::scalar,
                    "fastcdc's finder does not run the stored choice");

    const auto stadia = kernel_calibration("fastcdc4stadia");
    CHECK_OR_RETURN(stadia && !stadia->cached, "fastcdc4stadia's bad entry was used");
    CHECK_OR_RETURN(stadia->chosen != KernelLevel::avx2, "fastcdc4stadia chose avx2");
    CHECK_OR_RETURN(make_cut_finder("fastcdc4stadia", {})->kernel_level() == stadia->chosen,
                    "fastcdc4stadia's finder does not run its measured choice");
    const std::string after = read_text(*path);
    CHECK_OR_RETURN(after.find("fastcdc4stadia chosen avx2") == std::string::npos, "bad entry kept: " + after);
    CHECK_OR_RETURN(after.find("family fastcdc4stadia chosen " + std::string(to_string(stadia->chosen))) !=
                        std::string::npos,
                    "new entry not stored: " + after);
    return "";
}

/// CDC_KERNEL_CACHE=off: no file, nothing read or written.
std::string the_switch_turns_it_off(const fs::path& home) {
    ::setenv("XDG_CACHE_HOME", home.c_str(), 1);
    ::setenv("CDC_KERNEL_CACHE", "off", 1);
    CHECK_OR_RETURN(!kernel_calibration_cache_file().has_value(), "a cache file with CDC_KERNEL_CACHE=off");
    const auto c = kernel_calibration("fastcdc");
    CHECK_OR_RETURN(c && !c->cached, "fastcdc not measured");
    CHECK_OR_RETURN(!fs::exists(home / "cdc-chunkers"), "something was written");
    return "";
}

void run_alone(std::string (*scenario)(const fs::path&), const fs::path& home) {
    const std::string failed = scenario(home);
    std::fprintf(stderr, "%s", failed.empty() ? "scenario passed" : ("scenario failed: " + failed).c_str());
    std::fflush(stderr);
    // (_Exit runs no destructor: the child's own TempDir, made when the
    // test re-runs in it, would stay behind in the temporary directory)
    std::error_code ec;
    fs::remove_all(home, ec);
    std::_Exit(failed.empty() ? 0 : 1);
}

TEST(CalibrationCache, AProcessRunsWhatAnEarlierOneStored) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    TempDir tmp;
    EXPECT_EXIT(run_alone(&a_process_runs_what_an_earlier_one_stored, tmp.path()), ::testing::ExitedWithCode(0),
                "scenario passed");
}

TEST(CalibrationCache, TheSwitchTurnsItOff) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    TempDir tmp;
    EXPECT_EXIT(run_alone(&the_switch_turns_it_off, tmp.path()), ::testing::ExitedWithCode(0), "scenario passed");
}

}  // namespace
}  // namespace cdc::test
