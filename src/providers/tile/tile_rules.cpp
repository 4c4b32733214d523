// Rule sets as data: rules/tile/<name>.json (kselect.rules with a "generator") -> the catalogue of
// tile configs: the generator's groups expanded, kept where some build variant is valid, filtered
// by the rule set's rules.
#include <array>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/data_files.h"
#include "core/text.h"
#include "kselect/catalogue.h"
#include "providers/tile/tile_engine.h"

#ifndef KSELECT_SOURCE_RULES_DIR
#define KSELECT_SOURCE_RULES_DIR "rules/tile"  // the parent is the rules root
#endif

namespace kselect::tile {
namespace {

using nlohmann::json;

// Values of one group field: a scalar or an array of scalars / tuples.
Status ExpectArray(const json& j, const std::string& path) {
  if (!j.is_array() || j.empty()) return ParseError(path + ": expected a non-empty array");
  return Status::Ok();
}

template <size_t N>
StatusOr<std::vector<std::array<int32_t, N>>> IntTuples(const json& j, const std::string& path) {
  KSELECT_RETURN_IF_ERROR(ExpectArray(j, path));
  std::vector<std::array<int32_t, N>> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = path + "[" + std::to_string(i) + "]";
    if (!j[i].is_array() || j[i].size() != N) {
      return ParseError(where + ": expected an array of " + std::to_string(N) + " integers");
    }
    std::array<int32_t, N> t{};
    for (size_t e = 0; e < N; ++e) {
      if (!j[i][e].is_number_integer()) return ParseError(where + ": expected integers");
      t[e] = j[i][e].get<int32_t>();
    }
    out.push_back(t);
  }
  return out;
}

StatusOr<std::vector<int32_t>> Ints(const json& j, const std::string& path) {
  KSELECT_RETURN_IF_ERROR(ExpectArray(j, path));
  std::vector<int32_t> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_integer()) {
      return ParseError(path + "[" + std::to_string(i) + "]: expected an integer");
    }
    out.push_back(j[i].get<int32_t>());
  }
  return out;
}

StatusOr<std::vector<std::string>> Strings(const json& j, const std::string& path) {
  if (j.is_string()) return std::vector<std::string>{j.get<std::string>()};
  KSELECT_RETURN_IF_ERROR(ExpectArray(j, path));
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) {
      return ParseError(path + "[" + std::to_string(i) + "]: expected a string");
    }
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

StatusOr<std::vector<std::array<bool, 3>>> BoolTriples(const json& j, const std::string& path) {
  KSELECT_RETURN_IF_ERROR(ExpectArray(j, path));
  std::vector<std::array<bool, 3>> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = path + "[" + std::to_string(i) + "]";
    if (!j[i].is_array() || j[i].size() != 3) return ParseError(where + ": expected 3 booleans");
    std::array<bool, 3> t{};
    for (size_t e = 0; e < 3; ++e) {
      if (!j[i][e].is_boolean()) return ParseError(where + ": expected booleans");
      t[e] = j[i][e].get<bool>();
    }
    out.push_back(t);
  }
  return out;
}

Status CheckKeys(const json& object, const std::string& path, const std::set<std::string>& known) {
  if (!object.is_object()) return ParseError(path + ": expected an object");
  for (const auto& [key, value] : object.items()) {
    if (!known.count(key)) return ParseError(path + "." + key + ": unknown key");
  }
  return Status::Ok();
}

// Expands one group into configs (cross product of its fields, in a fixed nesting order).
StatusOr<std::vector<TileConfig>> ExpandGroup(const json& g, const std::string& path) {
  KSELECT_RETURN_IF_ERROR(
      CheckKeys(g, path,
                {"comment", "pipeline", "tile", "warps", "instr", "stages", "split_k", "swizzle",
                 "mask", "scheduler", "epilogue", "cluster"}));
  const TileConfig d;
  auto field = [&](const char* key) -> const json* {
    return g.contains(key) ? &g.at(key) : nullptr;
  };
  std::vector<TilePipeline> pipelines;
  if (!field("pipeline")) return ParseError(path + ".pipeline: required");
  {
    KSELECT_ASSIGN_OR_RETURN(auto names, Strings(g.at("pipeline"), path + ".pipeline"));
    for (const auto& n : names) {
      KSELECT_ASSIGN_OR_RETURN(TilePipeline p, ParseTilePipeline(n));
      pipelines.push_back(p);
    }
  }
  if (!field("tile")) return ParseError(path + ".tile: required");
  KSELECT_ASSIGN_OR_RETURN(auto tiles, IntTuples<3>(g.at("tile"), path + ".tile"));
  std::vector<std::array<int32_t, 3>> warps = {{d.warps_m, d.warps_n, d.warps_k}};
  if (field("warps")) {
    KSELECT_ASSIGN_OR_RETURN(warps, IntTuples<3>(g.at("warps"), path + ".warps"));
  }
  std::vector<std::array<int32_t, 3>> instrs = {{d.instr_m, d.instr_n, d.instr_k}};
  if (field("instr")) {
    KSELECT_ASSIGN_OR_RETURN(instrs, IntTuples<3>(g.at("instr"), path + ".instr"));
  }
  std::vector<int32_t> stages = {d.stages};
  if (field("stages")) {
    KSELECT_ASSIGN_OR_RETURN(stages, Ints(g.at("stages"), path + ".stages"));
  }
  std::vector<int32_t> splits = {d.split_k};
  if (field("split_k")) {
    KSELECT_ASSIGN_OR_RETURN(splits, Ints(g.at("split_k"), path + ".split_k"));
  }
  std::vector<int32_t> swizzles = {d.swizzle};
  if (field("swizzle")) {
    KSELECT_ASSIGN_OR_RETURN(swizzles, Ints(g.at("swizzle"), path + ".swizzle"));
  }
  std::vector<std::array<bool, 3>> masks = {{d.mask_m, d.mask_n, d.mask_k}};
  if (field("mask")) {
    KSELECT_ASSIGN_OR_RETURN(masks, BoolTriples(g.at("mask"), path + ".mask"));
  }
  std::vector<std::array<int32_t, 2>> clusters = {{d.cluster_m, d.cluster_n}};
  if (field("cluster")) {
    KSELECT_ASSIGN_OR_RETURN(clusters, IntTuples<2>(g.at("cluster"), path + ".cluster"));
  }
  std::vector<TileScheduler> schedulers = {d.scheduler};
  if (field("scheduler")) {
    schedulers.clear();
    KSELECT_ASSIGN_OR_RETURN(auto names, Strings(g.at("scheduler"), path + ".scheduler"));
    for (const auto& n : names) {
      KSELECT_ASSIGN_OR_RETURN(TileScheduler s, ParseTileScheduler(n));
      schedulers.push_back(s);
    }
  }
  std::vector<TileEpilogue> epilogues = {d.epilogue};
  if (field("epilogue")) {
    epilogues.clear();
    KSELECT_ASSIGN_OR_RETURN(auto names, Strings(g.at("epilogue"), path + ".epilogue"));
    for (const auto& n : names) {
      KSELECT_ASSIGN_OR_RETURN(TileEpilogue e, ParseTileEpilogue(n));
      epilogues.push_back(e);
    }
  }
  std::vector<TileConfig> out;
  for (TilePipeline p : pipelines)
    for (const auto& t : tiles)
      for (const auto& w : warps)
        for (const auto& in : instrs)
          for (int32_t st : stages)
            for (int32_t sk : splits)
              for (int32_t sw : swizzles)
                for (const auto& mk : masks)
                  for (const auto& cl : clusters)
                    for (TileScheduler sc : schedulers)
                      for (TileEpilogue ep : epilogues) {
                        TileConfig c;
                        c.pipeline = p;
                        c.tile_m = t[0], c.tile_n = t[1], c.tile_k = t[2];
                        c.warps_m = w[0], c.warps_n = w[1], c.warps_k = w[2];
                        c.instr_m = in[0], c.instr_n = in[1], c.instr_k = in[2];
                        c.stages = st;
                        c.split_k = sk;
                        c.swizzle = sw;
                        c.mask_m = mk[0], c.mask_n = mk[1], c.mask_k = mk[2];
                        c.cluster_m = cl[0], c.cluster_n = cl[1];
                        c.scheduler = sc;
                        c.epilogue = ep;
                        out.push_back(c);
                      }
  return out;
}

StatusOr<TileBuildVariant> ParseVariant(const json& v, const std::string& path) {
  KSELECT_RETURN_IF_ERROR(CheckKeys(v, path, {"input", "output", "layout", "align"}));
  TileBuildVariant variant;
  if (!v.contains("input") || !v.contains("output") || !v.contains("layout")) {
    return ParseError(path + ": input, output and layout are required");
  }
  KSELECT_ASSIGN_OR_RETURN(variant.input, ParseDataType(v.at("input").get<std::string>()));
  KSELECT_ASSIGN_OR_RETURN(variant.output, ParseDataType(v.at("output").get<std::string>()));
  KSELECT_ASSIGN_OR_RETURN(variant.layout, ParseGemmLayout(v.at("layout").get<std::string>()));
  if (v.contains("align")) {
    KSELECT_ASSIGN_OR_RETURN(auto aligns, Ints(v.at("align"), path + ".align"));
    if (aligns.size() != 3) return ParseError(path + ".align: expected [a, b, c]");
    variant.align_a = aligns[0], variant.align_b = aligns[1], variant.align_c = aligns[2];
  }
  return variant;
}

TileKernelSpec MakeSpec(const TileConfig& c, const TileBuildVariant& v) {
  TileKernelSpec s;
  s.config = c;
  s.input = v.input;
  s.output = v.output;
  s.layout = v.layout;
  s.align_a = v.align_a, s.align_b = v.align_b, s.align_c = v.align_c;
  return s;
}

// Every group of the generator object `root` expanded, in file order.
StatusOr<std::vector<std::vector<TileConfig>>> ExpandGroups(const json& root,
                                                            const std::string& path) {
  if (!root.contains("groups")) return ParseError(path + ".groups: required");
  KSELECT_RETURN_IF_ERROR(ExpectArray(root.at("groups"), path + ".groups"));
  std::vector<std::vector<TileConfig>> groups;
  for (size_t i = 0; i < root.at("groups").size(); ++i) {
    KSELECT_ASSIGN_OR_RETURN(
        std::vector<TileConfig> configs,
        ExpandGroup(root.at("groups")[i], path + ".groups[" + std::to_string(i) + "]"));
    groups.push_back(std::move(configs));
  }
  return groups;
}

// The generator's text parsed, with the JSON path errors name; refuses another provider's set.
StatusOr<json> GeneratorRoot(const RuleSet& rules, const std::string& path) {
  if (rules.provider != Provider::kTile) {
    return InvalidArgumentError(path + ": a rule set for " +
                                std::string(ProviderName(rules.provider)) + ", not for tile");
  }
  if (rules.generator.empty()) {
    return ParseError(path +
                      ": required (a tile rule set generates its configs from the build "
                      "variants and groups there)");
  }
  try {
    json root = json::parse(rules.generator);
    KSELECT_RETURN_IF_ERROR(CheckKeys(root, path, {"variants", "groups"}));
    return root;
  } catch (const json::exception& e) {
    return ParseError(path + ": " + e.what());
  }
}

std::string GeneratorPath(const RuleSet& rules) {
  return (rules.path.empty() ? rules.name : rules.path) + ".generator";
}

std::string FirstBrokenRule(const TileKernelSpec& spec) {
  for (const ValidityRule& rule : ValidityRules()) {
    if (!rule.check(spec).empty()) return rule.name;
  }
  return {};
}

}  // namespace

std::string DefaultRulesRoot() {
  if (const char* dir = std::getenv("KSELECT_RULES_DIR"); dir != nullptr && *dir) return dir;
  return ShippedDataPath("rules",
                         std::filesystem::path(KSELECT_SOURCE_RULES_DIR).parent_path().string());
}

StatusOr<std::vector<std::vector<TileConfig>>> ExpandGeneratorGroups(const RuleSet& rules) {
  const std::string path = GeneratorPath(rules);
  KSELECT_ASSIGN_OR_RETURN(const json root, GeneratorRoot(rules, path));
  try {
    return ExpandGroups(root, path);
  } catch (const json::exception& e) {
    return ParseError(path + ": " + e.what());
  }
}

StatusOr<TileRuleSet> GenerateRuleSet(const RuleSet& rules) {
  const std::string path = GeneratorPath(rules);
  KSELECT_ASSIGN_OR_RETURN(const json root, GeneratorRoot(rules, path));
  try {
    TileRuleSet set;
    set.path = rules.path;
    set.name = rules.name;
    set.rules = rules;
    if (!root.contains("variants")) return ParseError(path + ".variants: required");
    KSELECT_RETURN_IF_ERROR(ExpectArray(root.at("variants"), path + ".variants"));
    for (size_t i = 0; i < root.at("variants").size(); ++i) {
      KSELECT_ASSIGN_OR_RETURN(
          TileBuildVariant v,
          ParseVariant(root.at("variants")[i], path + ".variants[" + std::to_string(i) + "]"));
      set.variants.push_back(v);
    }
    KSELECT_ASSIGN_OR_RETURN(const std::vector<std::vector<TileConfig>> groups,
                             ExpandGroups(root, path));
    std::set<std::string> seen;
    std::map<std::string, int64_t> rejected;
    std::vector<std::string> rule_order;
    auto reject = [&](const std::string& rule) {
      if (!rejected.count(rule)) rule_order.push_back(rule);
      ++rejected[rule];
    };
    for (const std::vector<TileConfig>& configs : groups) {
      for (const TileConfig& c : configs) {
        const std::string key = ConfigKey(c);
        if (!seen.insert(key).second) continue;
        ++set.generated;
        // A config joins the catalogue when some variant can build it (the warp-specialized
        // family, say, builds K-major layouts only); the rule that rejects it under the first
        // variant is counted when none can.
        std::string broken;
        bool buildable = false;
        for (const TileBuildVariant& v : set.variants) {
          const std::string rule = FirstBrokenRule(MakeSpec(c, v));
          if (rule.empty()) {
            buildable = true;
            break;
          }
          if (broken.empty()) broken = rule;
        }
        if (!buildable) {
          reject(broken);
          continue;
        }
        set.space.push_back(c);
        // Then the rule set's filter, as any provider's catalogue is filtered; rules with a
        // "when" condition wait for a problem (Enumerate's filter).
        const std::string filtered = RejectingUnconditionedRule(rules, KernelConfig(c));
        if (filtered.empty()) {
          set.configs.push_back(c);
        } else {
          reject("rule " + filtered);
        }
      }
    }
    for (const std::string& rule : rule_order)
      set.rejected_by_rule.emplace_back(rule, rejected[rule]);
    return set;
  } catch (const json::exception& e) {
    return ParseError(path + ": " + e.what());
  }
}

StatusOr<TileRuleSet> LoadRuleSet(const std::string& name_or_path, const std::string& rules_dir) {
  KSELECT_ASSIGN_OR_RETURN(const RuleSet rules,
                           FindRuleSetByNameOrPath(rules_dir, Provider::kTile, name_or_path));
  return GenerateRuleSet(rules);
}

std::vector<TileKernelSpec> BuildSpecs(const TileRuleSet& rules) {
  std::vector<TileKernelSpec> specs;
  for (const TileConfig& c : rules.configs) {
    for (const TileBuildVariant& v : rules.variants) {
      TileKernelSpec spec = MakeSpec(c, v);
      if (FirstBrokenRule(spec).empty()) specs.push_back(std::move(spec));
    }
  }
  return specs;
}

}  // namespace kselect::tile
