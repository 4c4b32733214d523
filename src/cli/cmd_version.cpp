#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "kselect/dataset.h"
#include "kselect/version.h"

namespace kselect::cli {

Command VersionCommand() {
  return {"version", "print the tool version, git revision and data format versions",
          [](CLI::App& app) -> RunFunction {
            auto json = std::make_shared<bool>(false);
            app.add_flag("--json", *json, "print JSON");
            return [json]() {
              const std::string schema =
                  std::to_string(kDatasetSchemaMajor) + "." + std::to_string(kDatasetSchemaMinor);
              if (*json) {
                std::cout << nlohmann::json{{"version", ToolVersion()},
                                            {"git", GitRevision()},
                                            {"dataset_schema", schema}}
                                 .dump(2)
                          << "\n";
              } else {
                std::cout << ToolDescription() << "\ndataset schema " << schema << "\n";
              }
              return kExitOk;
            };
          }};
}

}  // namespace kselect::cli
