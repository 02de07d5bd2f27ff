// SPDX-License-Identifier: Apache-2.0
// `cdc kernels`: every family with its measured candidates and the choice,
// as JSON and as a table; a forced level (CDC_KERNEL).
#include "cli_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>

namespace cdc::test {
namespace {

TEST(KernelsCli, JsonListsEveryFamilyWithItsCandidatesAndChoice) {
    const auto r = run_tool({"kernels", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["best_level"], std::string(to_string(best_kernel_level())));
    EXPECT_TRUE(j.contains("forced"));
    ASSERT_EQ(j["families"].size(), 10u);  // as the calibration test lists them
    std::set<std::string> names;
    for (const auto& f : j["families"]) {
        ASSERT_FALSE(f["algorithms"].empty());
        for (const auto& n : f["algorithms"]) names.insert(n.get<std::string>());
        ASSERT_GE(f["candidates"].size(), 1u);
        EXPECT_EQ(f["candidates"][0]["kernel"], "scalar");
        EXPECT_NEAR(f["candidates"][0]["relative_to_scalar"].get<double>(), 1.0, 1e-12);
        bool chosen_listed = false;
        double fastest = 0;
        for (const auto& c : f["candidates"]) {
            EXPECT_NO_THROW(parse_kernel_level(c["kernel"].get<std::string>()));
            EXPECT_GT(c["mb_s"].get<double>(), 0.0);
            fastest = std::max(fastest, c["mb_s"].get<double>());
        }
        for (const auto& c : f["candidates"])
            if (c["kernel"] == f["chosen"]) chosen_listed = c["mb_s"].get<double>() == fastest;
        EXPECT_TRUE(chosen_listed) << f.dump();
        if (j["forced"].is_null()) {
            EXPECT_EQ(f["used"], f["chosen"]);
        }
        EXPECT_GT(f["bytes"].get<std::size_t>(), 0u);
        EXPECT_GE(f["rounds"].get<int>(), 2);
        EXPECT_GT(f["seconds"].get<double>(), 0.0);
    }
    // Every content-defined name is in exactly one family.
    std::set<std::string> want;
    for (const auto& a : algorithms())
        if (a.content_defined) want.insert(std::string(a.name));
    EXPECT_EQ(names, want);
}

TEST(KernelsCli, TextTableAndAForcedLevel) {
    const auto r = run_tool({"kernels"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* s : {"FAMILY", "fastcdc", "jc-v1.1.0", "fastcdc4stadia", "ultracdc", "scalar", "<-"})
        EXPECT_NE(r.out.find(s), std::string::npos) << s;
    // (the child inherits the variable; this process read its own at most once, before)
    const char* before = std::getenv("CDC_KERNEL");
    const std::string saved = before ? before : "";
    ::setenv("CDC_KERNEL", "scalar", 1);
    const auto forced = run_tool({"kernels", "--json"});
    ::setenv("CDC_KERNEL", "sse9", 1);
    const auto invalid = run_tool({"kernels"});
    if (before) ::setenv("CDC_KERNEL", saved.c_str(), 1);
    else ::unsetenv("CDC_KERNEL");
    ASSERT_EQ(forced.exit_code, 0) << forced.err;
    const auto j = nlohmann::json::parse(forced.out);
    EXPECT_EQ(j["forced"], "scalar");
    for (const auto& f : j["families"]) EXPECT_EQ(f["used"], "scalar");
    EXPECT_EQ(invalid.exit_code, 2);
    EXPECT_NE(invalid.err.find("sse9"), std::string::npos) << invalid.err;
}

TEST(KernelsCli, ASecondProcessReadsTheCalibrationsTheFirstStored) {
    const TempDir tmp;
    const std::string home = tmp.path().string();
    const char* before = std::getenv("XDG_CACHE_HOME");
    const std::string saved = before ? before : "";
    ::setenv("XDG_CACHE_HOME", home.c_str(), 1);
    const auto first = run_tool({"kernels", "--json"});
    const auto second = run_tool({"kernels", "--json"});
    ::setenv("CDC_KERNEL_CACHE", "off", 1);
    const auto off = run_tool({"kernels", "--json"});
    ::unsetenv("CDC_KERNEL_CACHE");
    // A cache directory that cannot be made (below a regular file): nothing
    // will be kept, so the calibration is the short one.
    std::ofstream(tmp.path() / "plain") << "x";
    ::setenv("XDG_CACHE_HOME", (tmp.path() / "plain").c_str(), 1);
    const auto unwritable = run_tool({"kernels", "--json"});
    if (before) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
    else ::unsetenv("XDG_CACHE_HOME");
    ASSERT_EQ(first.exit_code, 0) << first.err;
    ASSERT_EQ(second.exit_code, 0) << second.err;
    ASSERT_EQ(off.exit_code, 0) << off.err;
    ASSERT_EQ(unwritable.exit_code, 0) << unwritable.err;
    const auto a = nlohmann::json::parse(first.out), b = nlohmann::json::parse(second.out),
               c = nlohmann::json::parse(off.out), u = nlohmann::json::parse(unwritable.out);
    ASSERT_TRUE(a["cache"].is_string());
    EXPECT_EQ(a["cache"].get<std::string>().rfind(home + "/cdc-chunkers/kernels-", 0), 0u) << a["cache"];
    EXPECT_EQ(b["cache"], a["cache"]);
    EXPECT_TRUE(c["cache"].is_null());
    ASSERT_EQ(a["families"].size(), b["families"].size());
    for (std::size_t k = 0; k < a["families"].size(); ++k) {
        const auto& fa = a["families"][k];
        const auto& fb = b["families"][k];
        EXPECT_FALSE(fa["cached"].get<bool>()) << fa["family"];
        EXPECT_TRUE(fb["cached"].get<bool>()) << fb["family"];
        EXPECT_EQ(fb["chosen"], fa["chosen"]) << fb["family"];  // what the first measured
        EXPECT_EQ(fb["candidates"], fa["candidates"]) << fb["family"];
        EXPECT_FALSE(c["families"][k]["cached"].get<bool>()) << c["families"][k]["family"];
        // A calibration kept for later processes runs longer (CalibrationLimits::kept).
        EXPECT_GE(fa["rounds"].get<int>(), 21) << fa["family"];
        EXPECT_EQ(fb["rounds"], fa["rounds"]) << fb["family"];
        EXPECT_LE(c["families"][k]["rounds"].get<int>(), 11) << c["families"][k]["family"];
        EXPECT_LE(u["families"][k]["rounds"].get<int>(), 11) << u["families"][k]["family"];
    }
}

}  // namespace
}  // namespace cdc::test
