// The commands of the `pairmd` program, one file each. add_COMMAND registers the command and its
// options as a subcommand of the program's CLI11 app (cli/main.cpp) and returns what runs it
// once the command line is parsed: given the words after the command's name (the log records
// them), it returns the process exit code.
#pragma once

#include <functional>

#include "cli/options.h"

namespace pairmd::cli {

using Command = std::function<int(const Args& words)>;

Command add_run(CLI::App& app);
Command add_check(CLI::App& app);
Command add_minimize(CLI::App& app);
Command add_compare(CLI::App& app);
Command add_potential_map(CLI::App& app);
Command add_place_ions(CLI::App& app);
Command add_sop_build(CLI::App& app);
Command add_demux(CLI::App& app);

}  // namespace pairmd::cli
