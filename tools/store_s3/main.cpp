// SPDX-License-Identifier: Apache-2.0
// cdc-store-s3: the program behind `cdc store ...` on a store whose packs are
// in an S3 bucket (docs/STORE.md, "Packs in S3") or whose catalog is in
// PostgreSQL ("A PostgreSQL catalog"). The static `cdc` links neither
// libcurl nor libpq: when a store command meets either (`init --packs
// s3://...` or `--catalog postgresql://...`, or a store recorded so), it
// becomes this program, with the same arguments. The
// commands are cdc's own store commands (tools/cdc/cmd_store*.cpp), so their
// grammar, help and exit codes are those of `cdc store`.
#include "cli_common.hpp"
#include "cli_run.hpp"
#include "cmd_store.hpp"
#include "commands.hpp"

#include <cdc/store_pg.hpp>
#include <cdc/store_s3.hpp>

int main(int argc, char** argv) {
    using namespace cdc::cli;
    cdc::store::enable_s3_packs();
    cdc::store::enable_pg_catalog();  // and of a store whose catalog is in PostgreSQL
    set_store_s3_enabled();
    CLI::App app{"the cdc store commands on a store whose packs are in an S3 bucket or whose catalog is in PostgreSQL (run by cdc)\n", "cdc"};
    app.require_subcommand(1);
    int exit_code = kExitOk;
    set_help_flags(app);
    add_store_command(app, exit_code);
    add_version_flags(app);
    return run_app(app, argc, argv, exit_code, flag_of);
}
