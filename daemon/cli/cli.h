// The command line: autoresearchd start|stop|status|show|export|prepare|serve|
// plot|doctor|data fetch|demo, and the hidden sim-trainer (sim_trainer.h).
// Parse errors print one line and return 2; failures print one line and
// return 1. main() is nothing but a call to run_cli.
#pragma once

namespace ard {

int run_cli(int argc, char** argv);

}  // namespace ard
