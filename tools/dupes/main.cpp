// cdc-dupes: the lean helper program behind `cdc dupes` (see dupes_cli.cpp).
#include "dupes_cli.hpp"

int main(int argc, char** argv) { return cdc::cli::dupes_main(argc, argv); }
