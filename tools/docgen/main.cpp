// SPDX-License-Identifier: Apache-2.0
// cdc-docgen: the man pages and the shell completions of cdc, written from
// its definitions (`cdc --cli-definitions`, the source of --help too).
//   cdc-docgen DEFINITIONS.json OUTDIR
// writes OUTDIR/man1/<page>.1 for every command and OUTDIR/completions/{cdc
// (bash), _cdc (zsh), cdc.fish}. Run by the build (tools/docgen/generate.cmake).
#include "command_tree.hpp"
#include "completions.hpp"
#include "man_pages.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error(fmt::format("cannot write '{}'", path.string()));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        fmt::print(stderr, "usage: cdc-docgen DEFINITIONS.json OUTDIR\n");
        return 2;
    }
    try {
        std::ifstream in(argv[1]);
        if (!in) throw std::runtime_error(fmt::format("cannot read '{}'", argv[1]));
        const auto defs = nlohmann::json::parse(in);
        const auto root = cdc::docgen::command_tree(defs);
        const std::string version = defs.value("version", "");
        const fs::path out = argv[2];
        for (const auto* c : cdc::docgen::all_commands(root))
            write(out / "man1" / (c->page() + ".1"), cdc::docgen::man_page(*c, version));
        write(out / "completions" / "cdc", cdc::docgen::bash_completion(root));
        write(out / "completions" / "_cdc", cdc::docgen::zsh_completion(root));
        write(out / "completions" / "cdc.fish", cdc::docgen::fish_completion(root));
    } catch (const std::exception& e) {
        fmt::print(stderr, "cdc-docgen: error: {}\n", e.what());
        return 1;
    }
    return 0;
}
