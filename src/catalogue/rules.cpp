#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "core/text.h"
#include "kselect/catalogue.h"
#include "kselect/config_schema.h"

namespace kselect {
namespace {

using nlohmann::json;

// The rule sets' FNV-1a basis: the standard one with its last digit lost. Kept, because the
// fingerprints in the committed snapshots (and sampled catalogues) were computed with it.
constexpr uint64_t kRulesFnvBasis = 1469598103934665603ull;

constexpr std::string_view kProblemQuantities[] = {"m", "n", "k", "batch", "mn", "align"};

// "when": {"mn": {"min": 4194304}, ...} -> conditions, sorted by quantity (the canonical order).
StatusOr<std::vector<ProblemCondition>> ParseWhen(const json& when, const std::string& path) {
  if (!when.is_object() || when.empty())
    return ParseError(path + ": expected an object of problem quantities with min/max bounds");
  std::vector<ProblemCondition> conditions;
  for (const auto& [quantity, bounds] : when.items()) {
    const std::string at = path + "." + quantity;
    if (std::find(std::begin(kProblemQuantities), std::end(kProblemQuantities), quantity) ==
        std::end(kProblemQuantities)) {
      return ParseError(path + ": '" + quantity +
                        "' is not a problem quantity (one of m, n, k, batch, mn, align)");
    }
    if (!bounds.is_object()) return ParseError(at + ": expected {\"min\": ..., \"max\": ...}");
    json_codec::ObjectReader r(bounds, at);
    ProblemCondition condition;
    condition.quantity = quantity;
    if (r.Has("min")) condition.min = r.Int("min");
    if (r.Has("max")) condition.max = r.Int("max");
    KSELECT_RETURN_IF_ERROR(r.Finish());
    if (!condition.min && !condition.max) return ParseError(at + ": needs min, max or both");
    if (condition.min && condition.max && *condition.min > *condition.max)
      return ParseError(at + ": min is above max, so the rule could never hold");
    conditions.push_back(std::move(condition));
  }
  return conditions;
}

json CanonicalWhen(const std::vector<ProblemCondition>& when) {
  json canonical = json::array();
  for (const ProblemCondition& c : when) {
    canonical.push_back(
        {c.quantity, c.min ? json(*c.min) : json(nullptr), c.max ? json(*c.max) : json(nullptr)});
  }
  return canonical;
}

bool Passes(const ConfigRule& rule, int64_t value) {
  switch (rule.op) {
    case ConfigRule::Op::kKeep:
      return std::find(rule.values.begin(), rule.values.end(), value) != rule.values.end();
    case ConfigRule::Op::kDrop:
      return std::find(rule.values.begin(), rule.values.end(), value) == rule.values.end();
    case ConfigRule::Op::kMin:
      return value >= rule.values.front();
    case ConfigRule::Op::kMax:
      return value <= rule.values.front();
  }
  return false;
}

}  // namespace

std::vector<std::string> ProblemQuantities() {
  return {std::begin(kProblemQuantities), std::end(kProblemQuantities)};
}

std::optional<int64_t> ProblemQuantity(const Problem& problem, std::string_view quantity) {
  const GemmProblem* p = std::get_if<GemmProblem>(&problem);
  if (p == nullptr) return std::nullopt;
  if (quantity == "m") return p->m;
  if (quantity == "n") return p->n;
  if (quantity == "k") return p->k;
  if (quantity == "batch") return p->batch;
  if (quantity == "mn") return p->m * p->n;
  if (quantity == "align") {
    int64_t align = 1;
    while (align < 256 && p->m % (2 * align) == 0 && p->n % (2 * align) == 0 &&
           p->k % (2 * align) == 0) {
      align *= 2;
    }
    return align;
  }
  return std::nullopt;
}

bool RuleAppliesTo(const ConfigRule& rule, const Problem& problem) {
  for (const ProblemCondition& c : rule.when) {
    const std::optional<int64_t> value = ProblemQuantity(problem, c.quantity);
    if (!value || (c.min && *value < *c.min) || (c.max && *value > *c.max)) return false;
  }
  return true;
}

std::vector<std::string> RuleFields(Provider provider) {
  std::vector<std::string> names;
  for (const ConfigField& field : SchemaOf(provider).fields) {
    if (field.IsInteger() && !field.write_only) names.emplace_back(field.name);
  }
  return names;
}

StatusOr<RuleSet> ParseRuleSet(std::string_view text, std::string_view source) {
  KSELECT_RETURN_IF_ERROR(kselect::text::CheckJsonDepth(text, source));
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
    return ParseError(std::string(source) +
                      ": not valid JSON: " + kselect::text::Excerpt(e.what()));
  }
  if (!root.is_object()) return ParseError(std::string(source) + ": expected a JSON object");
  json_codec::ObjectReader r(root, std::string(source));
  const std::string format = r.String("format");
  const int64_t version = r.Int("format_version");
  RuleSet set;
  set.name = r.String("name");
  set.comment = r.String("comment");
  const std::string provider = r.String("provider");
  const json* rules = r.Child("rules", true);
  const json* generator = r.Child("generator", false);
  KSELECT_RETURN_IF_ERROR(r.Finish());
  if (format != "kselect.rules")
    return SchemaMismatchError(std::string(source) + ": format is not kselect.rules");
  if (version != 1) {
    return SchemaMismatchError(std::string(source) + ": format_version " + std::to_string(version) +
                               " is not supported (this kselect reads 1)");
  }
  KSELECT_ASSIGN_OR_RETURN(set.provider, ParseProvider(provider));
  if (generator != nullptr) {
    if (!generator->is_object())
      return ParseError(std::string(source) + ".generator: expected an object");
    set.generator = generator->dump();
  }
  if (!rules->is_array()) return ParseError(std::string(source) + ".rules: expected an array");
  const std::vector<std::string> fields = RuleFields(set.provider);
  json canonical = json::array();
  for (size_t i = 0; i < rules->size(); ++i) {
    const std::string path = std::string(source) + ".rules[" + std::to_string(i) + "]";
    const json& item = (*rules)[i];
    if (!item.is_object()) return ParseError(path + ": expected an object");
    json_codec::ObjectReader rr(item, path);
    ConfigRule rule;
    rule.name = rr.String("name");
    rule.comment = rr.String("comment");
    rule.field = rr.String("field");
    int ops = 0;
    for (const auto& [key, op] :
         {std::pair{"keep", ConfigRule::Op::kKeep}, std::pair{"drop", ConfigRule::Op::kDrop},
          std::pair{"min", ConfigRule::Op::kMin}, std::pair{"max", ConfigRule::Op::kMax}}) {
      if (!rr.Has(key)) continue;
      ++ops;
      rule.op = op;
      if (op == ConfigRule::Op::kKeep || op == ConfigRule::Op::kDrop) {
        const json* values = rr.Child(key, true);
        if (values == nullptr || !values->is_array())
          return ParseError(path + "." + key + ": expected an array of integers");
        for (const json& v : *values) {
          if (!v.is_number_integer())
            return ParseError(path + "." + key + ": expected an array of integers");
          rule.values.push_back(v.get<int64_t>());
        }
      } else {
        rule.values.push_back(rr.Int(key));
      }
    }
    if (rr.Has("when")) {
      KSELECT_ASSIGN_OR_RETURN(rule.when, ParseWhen(*rr.Child("when", true), path + ".when"));
    }
    KSELECT_RETURN_IF_ERROR(rr.Finish());
    if (ops != 1) return ParseError(path + ": needs exactly one of keep, drop, min, max");
    if (std::find(fields.begin(), fields.end(), rule.field) == fields.end()) {
      return ParseError(path + ".field: '" + rule.field + "' is not a field of " + provider +
                        " configs");
    }
    // Unconditioned rules keep their original canonical form, so the fingerprints of rule sets
    // written before "when" existed (and the snapshots recording them) stay valid.
    json entry = {rule.name, rule.field, static_cast<int>(rule.op), rule.values};
    if (!rule.when.empty()) entry.push_back(CanonicalWhen(rule.when));
    canonical.push_back(std::move(entry));
    set.rules.push_back(std::move(rule));
  }
  // Without a generator the canonical form is what it was before generators existed, so the
  // committed cuBLASLt snapshots' fingerprints stay valid.
  json fingerprinted = {set.name, provider, canonical};
  if (generator != nullptr) fingerprinted.push_back(*generator);
  set.fingerprint = text::Fnv1a64(fingerprinted.dump(), kRulesFnvBasis);
  return set;
}

StatusOr<RuleSet> LoadRuleSet(const std::string& path) {
  auto contents = text::ReadFile(path);
  if (contents.status().code() == StatusCode::kNotFound) {
    return NotFoundError(path + ": no such rule set file");
  }
  KSELECT_RETURN_IF_ERROR(contents.status());
  KSELECT_ASSIGN_OR_RETURN(RuleSet set, ParseRuleSet(*contents, path));
  set.path = path;
  return set;
}

StatusOr<RuleSet> FindRuleSet(const std::string& rules_dir, Provider provider,
                              std::string_view name) {
  const std::string folder = rules_dir + "/" + std::string(ProviderName(provider));
  const std::string path = folder + "/" + std::string(name) + ".json";
  if (!std::filesystem::is_regular_file(path)) {
    return NotFoundError(path + ": no such rule set file (no rule set '" + std::string(name) +
                         "' for " + std::string(ProviderName(provider)) + " in " + folder + ")");
  }
  return LoadRuleSet(path);
}

StatusOr<RuleSet> FindRuleSetByNameOrPath(const std::string& rules_dir, Provider provider,
                                          std::string_view name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string_view::npos ||
                       (name_or_path.size() > 5 && name_or_path.ends_with(".json"));
  if (!is_path) return FindRuleSet(rules_dir, provider, name_or_path);
  KSELECT_ASSIGN_OR_RETURN(RuleSet set, LoadRuleSet(std::string(name_or_path)));
  if (set.provider != provider) {
    return InvalidArgumentError(set.path + ": a rule set for " +
                                std::string(ProviderName(set.provider)) + ", not for " +
                                std::string(ProviderName(provider)));
  }
  return set;
}

std::string RejectingRule(const RuleSet& rules, const Problem& problem, const KernelConfig& config,
                          std::span<const std::string_view> ignored) {
  if (ProviderOf(config) != rules.provider) return "provider";
  for (const ConfigRule& rule : rules.rules) {
    if (std::find(ignored.begin(), ignored.end(), rule.field) != ignored.end()) continue;
    if (!RuleAppliesTo(rule, problem)) continue;
    const std::optional<int64_t> value = ConfigFieldValue(config, rule.field);
    if (!value || !Passes(rule, *value)) return rule.name;
  }
  return "";
}

std::string RejectingUnconditionedRule(const RuleSet& rules, const KernelConfig& config) {
  if (ProviderOf(config) != rules.provider) return "provider";
  for (const ConfigRule& rule : rules.rules) {
    if (!rule.when.empty()) continue;
    const std::optional<int64_t> value = ConfigFieldValue(config, rule.field);
    if (!value || !Passes(rule, *value)) return rule.name;
  }
  return "";
}

ConfigFilter RuleSetFilter(const RuleSet& rules, const Problem& problem) {
  ConfigFilter filter;
  filter.keep = [&rules, &problem](const KernelConfig& c) {
    return RejectingRule(rules, problem, c).empty();
  };
  filter.may_keep = [&rules, &problem](const KernelConfig& c,
                                       std::span<const std::string_view> varying) {
    return RejectingRule(rules, problem, c, varying).empty();
  };
  return filter;
}

ConfigFilter SampledFilter(ConfigFilter base, double fraction, uint64_t seed) {
  if (fraction >= 1) return base;
  ConfigFilter filter = base;
  filter.keep = [base, fraction, seed](const KernelConfig& c) {
    if (!base.empty() && !base.keep(c)) return false;
    return text::UnitIntervalDraw(ConfigKey(c), kRulesFnvBasis ^ seed) < fraction;
  };
  return filter;
}

std::vector<KernelConfig> ApplyRules(const RuleSet& rules, const Problem& problem,
                                     const std::vector<KernelConfig>& configs) {
  std::vector<KernelConfig> kept;
  for (const KernelConfig& c : configs) {
    if (RejectingRule(rules, problem, c).empty()) kept.push_back(c);
  }
  return kept;
}

std::string FingerprintText(uint64_t fingerprint) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(fingerprint));
  return text;
}

}  // namespace kselect
