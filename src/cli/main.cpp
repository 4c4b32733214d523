// kselect: the command-line front door. Subcommands are rows of the table in command.cpp.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "kselect/version.h"

namespace {

// CLI11 answers a misspelt subcommand with "A subcommand is required": name the word it did not
// know and list the subcommands of the deepest command given. "" when that is not the error.
std::string UnknownSubcommandMessage(CLI::App& app) {
  CLI::App* deepest = &app;
  std::string path = "kselect";
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (CLI::App* sub : deepest->get_subcommands()) {
      if (sub->parsed()) {
        deepest = sub;
        path += " " + sub->get_name();
        deeper = true;
        break;
      }
    }
  }
  const std::vector<CLI::App*> choices = deepest->get_subcommands({});
  const std::vector<std::string> remaining = deepest->remaining();
  if (choices.empty() || remaining.empty() || remaining.front().rfind("-", 0) == 0) return "";
  std::string message = path + ": unknown subcommand '" + remaining.front() + "' (subcommands:";
  for (size_t i = 0; i < choices.size(); ++i) {
    message += (i == 0 ? " " : ", ") + choices[i]->get_name();
  }
  return message + "; see " + path + " --help)";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kselect::cli;
  CLI::App app{
      "kselect: ML-based GPU kernel selection and tuning for NVIDIA Hopper.\n"
      "Exit codes: 0 ok, 1 failure, 2 usage error."};
  app.require_subcommand(1);
  app.set_version_flag("--version", kselect::ToolDescription());
  if (!PlannedCommands().empty()) {
    std::string footer = "\nPlanned (not available yet):\n";
    for (const PlannedCommand& planned : PlannedCommands()) {
      footer += "  " + std::string(planned.name) +
                std::string(12 - std::string(planned.name).size(), ' ') + planned.summary + "\n";
    }
    app.footer(footer);
  }

  std::vector<std::pair<CLI::App*, RunFunction>> runs;
  for (const Command& command : Commands()) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    runs.emplace_back(sub, command.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (const std::string unknown = UnknownSubcommandMessage(app); !unknown.empty()) {
      std::cerr << unknown << "\n";
      return kExitUsage;
    }
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
