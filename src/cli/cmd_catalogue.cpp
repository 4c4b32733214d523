// kselect catalogue: the configs a provider enumerates (cuBLASLt, on this GPU) or generates (the
// tile engine, with NVRTC, no GPU needed) for one problem, filtered by a named rule set;
// optionally written as a snapshot (rules/<provider>/snapshots/<name>.json).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/gemm_args.h"
#include "core/json_codec.h"
#include "core/text.h"
#include "kselect/catalogue.h"
#include "kselect/config_schema.h"
#include "kselect/hardware.h"
#include "kselect/provider.h"
#include "kselect/version.h"
#include "providers/tile/tile_engine.h"

namespace kselect::cli {
namespace {

struct CatalogueArgs {
  std::string provider = "cublaslt";
  std::string rules = "default";
  std::string rules_dir = tile::DefaultRulesRoot();
  int64_t m = 4096, n = 4096, k = 4096, batch = 1;
  std::string dtype = "bf16";
  std::string ops = "TN";
  int device = 0;
  double max_workspace_mib = 32;
  bool list = false;
  bool count_all = false;
  std::string snapshot;
  std::string enumerated;
};

int RunCatalogue(const CatalogueArgs& args) {
  for (const auto& [option, path] :
       {std::pair{"--snapshot", &args.snapshot}, std::pair{"--enumerated", &args.enumerated}}) {
    if (path->empty()) continue;
    if (auto s = text::CheckOutputFile(*path, option, {}); !s.ok()) {
      return ReportError("catalogue", s);
    }
  }
  auto provider_id = ParseProvider(args.provider);
  if (!provider_id.ok()) return ReportError("catalogue", provider_id.status());
  auto rules = FindRuleSet(args.rules_dir, *provider_id, args.rules);
  if (!rules.ok()) return ReportError("catalogue", rules.status());
  auto problem = MakeGemmProblem(args.m, args.n, args.k, args.batch, args.dtype, args.ops);
  if (!problem.ok()) return ReportError("catalogue", problem.status());
  ProviderOptions po;
  po.device = args.device;
  po.max_workspace_bytes = static_cast<int64_t>(args.max_workspace_mib * 1024 * 1024);
  po.rule_set = rules->path;  // a generating provider reads the file loaded here
  po.rules_dir = args.rules_dir;
  auto provider = CreateProvider(*provider_id, po);
  if (!provider.ok()) return ReportError("catalogue", provider.status());
  const auto start = std::chrono::steady_clock::now();
  // The full space, or only what the rules keep (the provider skips device checks of the rest).
  const RuleSet& rule_set = *rules;
  const Problem the_problem = *problem;
  auto configs = args.count_all ? (*provider)->Enumerate(Problem(*problem))
                                : (*provider)->Enumerate(Problem(*problem),
                                                         RuleSetFilter(rule_set, the_problem));
  if (!configs.ok()) return ReportError("catalogue", configs.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::vector<KernelConfig> kept = ApplyRules(*rules, the_problem, *configs);
  std::map<int, std::pair<int, int>> per_algo;  // algo -> (enumerated, kept)
  auto algo_of = [](const KernelConfig& c) {
    return static_cast<int>(ConfigFieldValue(c, "algo_id").value_or(-1));
  };
  for (const KernelConfig& c : *configs) ++per_algo[algo_of(c)].first;
  for (const KernelConfig& c : kept) ++per_algo[algo_of(c)].second;
  std::fprintf(stderr, "%s: %zu configs enumerated%s in %.2f s, %zu in rule set '%s' (%s)\n",
               problem->ToString().c_str(), configs->size(),
               args.count_all ? "" : " (rule-filtered)", seconds, kept.size(), rules->name.c_str(),
               FingerprintText(rules->fingerprint).c_str());
  for (const auto& [algo, counts] : per_algo) {
    if (algo < 0) continue;  // a provider without library algorithms (the tile engine)
    std::fprintf(stderr, "  algo %3d: %6d enumerated, %6d kept\n", algo, counts.first,
                 counts.second);
  }
  if (args.list) {
    for (const KernelConfig& c : kept)
      std::cout << json_codec::KernelConfigToJson(c).dump() << "\n";
  }
  if (!args.enumerated.empty()) {
    std::ofstream out(args.enumerated, std::ios::binary);
    for (const KernelConfig& c : *configs) out << json_codec::KernelConfigToJson(c).dump() << "\n";
  }
  if (!args.snapshot.empty()) {
    CatalogueSnapshot snapshot;
    snapshot.provider = *provider_id;
    snapshot.rule_set = rules->name;
    snapshot.rules_fingerprint = rules->fingerprint;
    snapshot.problem = the_problem;
    snapshot.tool = ToolDescription();
    snapshot.max_workspace_bytes = po.max_workspace_bytes;
    snapshot.enumerated = static_cast<int64_t>(configs->size());
    snapshot.configs = kept;
    // cuBLASLt's space is the device's and its library's; the tile engine's generation is
    // neither's (NVRTC compiles for a fixed architecture), so its snapshot names no device.
    if (*provider_id == Provider::kCublasLt) {
      auto hw = QueryHardwareProfile(args.device);
      if (!hw.ok()) return ReportError("catalogue", hw.status());
      snapshot.provenance = ProvenanceOf(*hw);
    }
    std::ofstream out(args.snapshot, std::ios::binary);
    out << CatalogueSnapshotToJson(snapshot);
    if (!out) return ReportError("catalogue", IoError(args.snapshot + ": cannot write"));
  }
  return kExitOk;
}

}  // namespace

Command CatalogueCommand() {
  return {
      "catalogue", "list the configs a named rule set keeps from a provider's space (GPU)",
      [](CLI::App& app) -> RunFunction {
        auto a = std::make_shared<CatalogueArgs>();
        app.add_option("--provider", a->provider, "kernel provider")->capture_default_str();
        app.add_option("--rules", a->rules, "rule set: tiny, tests, default, full")
            ->capture_default_str();
        app.add_option("--rules-dir", a->rules_dir,
                       "folder of rule sets (<provider>/<name>.json); default "
                       "$KSELECT_RULES_DIR, else the install's or source tree's rules/")
            ->capture_default_str();
        app.add_option("-m", a->m, "rows of C")->capture_default_str()->check(PositiveInteger());
        app.add_option("-n", a->n, "columns of C")->capture_default_str()->check(PositiveInteger());
        app.add_option("-k", a->k, "reduction depth")
            ->capture_default_str()
            ->check(PositiveInteger());
        app.add_option("--batch", a->batch, "batch count")
            ->capture_default_str()
            ->check(PositiveInteger());
        app.add_option("--dtype", a->dtype, "bf16, fp16, fp8")->capture_default_str();
        app.add_option("--ops", a->ops, "NN, NT, TN, TT")->capture_default_str();
        app.add_option("--device", a->device, "CUDA device")->capture_default_str();
        app.add_option("--max-workspace-mib", a->max_workspace_mib, "workspace limit (MiB)")
            ->capture_default_str();
        app.add_flag("--list", a->list, "print the kept configs as JSON lines");
        app.add_flag("--count-all", a->count_all,
                     "enumerate the full space first (slower) to report what the rules drop");
        app.add_option("--snapshot", a->snapshot, "write the catalogue snapshot JSON to FILE");
        app.add_option("--enumerated", a->enumerated,
                       "write every enumerated config (JSON lines) to FILE");
        return [a] { return RunCatalogue(*a); };
      }};
}

}  // namespace kselect::cli
