// SPDX-License-Identifier: Apache-2.0
// Every case of shared/testvectors/vectors.jsonl: our cut points must equal
// go-cdc-chunkers', from memory, from a reader with irregular read sizes,
// and with a caller-owned buffer of exactly MaxSize.
#include "test_support.hpp"

#include <cdc/corpus/datagen.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

namespace cdc::test {
namespace {


const std::vector<nlohmann::json>& all_cases() {
    static const std::vector<nlohmann::json> cases = read_jsonl(vectors_dir() / "vectors.jsonl");
    return cases;
}

TEST(Inputs, RegeneratedInputsMatchTheirSha256) {
    const auto specs = read_jsonl(vectors_dir() / "inputs.jsonl");
    ASSERT_GT(specs.size(), 60u);
    for (const auto& s : specs) {
        const std::string spec = s["input"];
        const auto bytes = generate_input(spec);
        ASSERT_EQ(bytes.size(), s["input_len"].get<std::size_t>()) << spec;
        EXPECT_EQ(compute_digest(DigestKind::sha256, std::as_bytes(std::span(bytes))).hex(),
                  s["sha256"].get<std::string>())
            << spec;
    }
}

TEST(Inputs, SplitMixAndTextChecksFromTheReadme) {
    EXPECT_EQ(SplitMix64(0).next(), 0xE220A8397B1DCDAFULL);
    const auto sm = generate_input("splitmix64:1:16");
    EXPECT_EQ(compute_digest(DigestKind::none, {}).size, 0);
    std::string hex;
    for (auto b : sm) hex += fmt::format("{:02x}", b);
    EXPECT_EQ(hex, "c15c0289ec2d0a9167ec8e65a18debbe");
    const auto text = generate_input("text:3:200");
    EXPECT_EQ(std::string(text.begin(), text.begin() + 57),
              "who as of not at for file at cut backup be boundary\nstore");
}

TEST(Vectors, CoverEveryAlgorithmName) {
    std::set<std::string> names;
    for (const auto& c : all_cases()) names.insert(c["algorithm"].get<std::string>());
    EXPECT_EQ(all_cases().size(), 1222u);
    std::set<std::string> go_names;
    for (const auto& a : algorithms())
        if (a.origin == "go-cdc-chunkers") go_names.insert(std::string(a.name));
    EXPECT_EQ(names, go_names);  // the other names have their own vectors (unit/compat_vectors_test.cpp)
}

class AlgorithmVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(AlgorithmVectors, MatchGoCdcChunkers) {
    const std::string& name = GetParam();
    std::size_t checked = 0;
    for (const auto& c : all_cases()) {
        if (c["algorithm"] != name) continue;
        const Options o = vector_case_options(c);
        const std::string spec = c["input"];
        const auto expected = c["lengths"].get<std::vector<std::size_t>>();
        SCOPED_TRACE(fmt::format("{} {}/{}/{} key={} input={}", name, o.min_size, o.normal_size, o.max_size,
                                 o.key ? "yes" : "no", spec));
        const auto finder = make_cut_finder(name, o, KernelLevel::automatic);
        const auto& data = cached_input(spec);
        ASSERT_EQ(data.size(), c["input_len"].get<std::size_t>());

        EXPECT_EQ(lengths_memory(finder, data), expected);

        ScriptedReader irregular(data, {1, 7, 4096, 65537, 13});
        EXPECT_EQ(lengths_stream(finder, irregular), expected) << "irregular reads";

        std::vector<std::byte> exact(finder->profile().max_size);
        ScriptedReader big(data, {1 << 20, 3}, true);
        EXPECT_EQ(lengths_stream(finder, big, exact), expected) << "caller buffer of exactly MaxSize";
        ++checked;
    }
    EXPECT_GT(checked, 0u);
}

std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const auto& a : algorithms())
        if (a.origin == "go-cdc-chunkers") out.emplace_back(a.name);
    return out;
}

INSTANTIATE_TEST_SUITE_P(All, AlgorithmVectors, ::testing::ValuesIn(names()), [](const auto& param_info) {
    std::string s = param_info.param;
    for (auto& ch : s)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return s;
});

}  // namespace
}  // namespace cdc::test
