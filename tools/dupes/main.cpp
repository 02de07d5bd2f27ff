// SPDX-License-Identifier: Apache-2.0
// cdc-dupes: the lean helper program behind `cdc dupes` (see cmd_dupes.cpp).
#include "cmd_dupes.hpp"

int main(int argc, char** argv) { return cdc::cli::dupes_main(argc, argv); }
