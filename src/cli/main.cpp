// kselect: the command-line front door. Subcommands are rows of the table in command.cpp.
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/command.h"
#include "kselect/version.h"

int main(int argc, char** argv) {
  using namespace kselect::cli;
  CLI::App app{
      "kselect: ML-based GPU kernel selection and tuning for NVIDIA Hopper.\n"
      "Exit codes: 0 ok, 1 failure, 2 usage error."};
  app.require_subcommand(1);
  app.set_version_flag("--version", kselect::ToolDescription());
  std::string footer = "\nPlanned (not available yet):\n";
  for (const PlannedCommand& planned : PlannedCommands()) {
    footer += "  " + std::string(planned.name) +
              std::string(12 - std::string(planned.name).size(), ' ') + planned.summary + "\n";
  }
  app.footer(footer);

  std::vector<std::pair<CLI::App*, RunFunction>> runs;
  for (const Command& command : Commands()) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    runs.emplace_back(sub, command.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  try {
    for (auto& [sub, run] : runs) {
      if (sub->parsed()) return run();
    }
  } catch (const kselect::CheckFailure& e) {
    std::cerr << "kselect: internal error (please report): " << e.what() << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "kselect: error: " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitUsage;
}
