// autoresearchd: the daemon's entry point. Everything lives in ard_daemon.
#include "daemon/cli/cli.h"

int main(int argc, char** argv) { return ard::run_cli(argc, argv); }
