// FeatureSpec: JSON form, strict reader, compatibility checks, and hardware constants.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "core/text.h"
#include "kselect/features.h"

namespace kselect {
namespace {

using nlohmann::json;

// Known parts, for the constants a measured profile does not carry (AMD rows carry only the
// arch; no profile reports tensor throughput or the resident-block limit). Sources: vendor
// datasheets (H100 SXM, B200, A100 SXM, MI355X, MI300X); flops per clock per SM are the dense
// 16-bit tensor peak divided by SMs and boost clock.
const std::vector<HardwareConstants>& KnownParts() {
  static const std::vector<HardwareConstants> parts = {
      {"sm_90", 132, 1980, 50 << 20, 233472, 232448, 2048, 32, 3352.0, 4096.0},
      {"sm_100", 148, 1965, 126 << 20, 233472, 232448, 2048, 32, 8000.0, 8192.0},
      {"sm_80", 108, 1410, 40 << 20, 167936, 166912, 2048, 32, 2039.0, 2048.0},
      {"gfx950", 256, 2400, 4 << 20, 163840, 163840, 2048, 32, 8000.0, 4096.0},
      {"gfx942", 304, 2100, 4 << 20, 65536, 65536, 2048, 32, 5300.0, 2048.0},
  };
  return parts;
}

std::string NormalisedArch(const HardwareProfile& p) {
  std::string arch = p.arch;
  if (arch.empty() && p.cc_major > 0) {
    arch = "sm_" + std::to_string(p.cc_major) + std::to_string(p.cc_minor);
  }
  // sm_90a and sm_90 are the same part for features.
  if (arch.starts_with("sm_") && !arch.empty() && (arch.back() == 'a' || arch.back() == 'f')) {
    arch.pop_back();
  }
  return arch;
}

std::string_view KindName(FeatureKind k) {
  return k == FeatureKind::kCategorical ? "categorical" : "numeric";
}

json HardwareToJson(const HardwareConstants& h) {
  return json{{"arch", h.arch},
              {"sm_count", h.sm_count},
              {"sm_clock_mhz", h.sm_clock_mhz},
              {"l2_bytes", h.l2_bytes},
              {"smem_per_sm_bytes", h.smem_per_sm_bytes},
              {"smem_per_block_bytes", h.smem_per_block_bytes},
              {"max_threads_per_sm", h.max_threads_per_sm},
              {"max_blocks_per_sm", h.max_blocks_per_sm},
              {"mem_bandwidth_gb_s", h.mem_bandwidth_gb_s},
              {"flops_per_clock_per_sm_16bit", h.flops_per_clock_per_sm_16bit}};
}

// `path` names the file and the key ("<file>: hardware"), so every error says where it is.
StatusOr<HardwareConstants> HardwareFromJson(const json& j, const std::string& path) {
  json_codec::ObjectReader r(j, path);
  HardwareConstants h;
  h.arch = r.String("arch");
  h.sm_count = static_cast<int32_t>(r.Int("sm_count"));
  h.sm_clock_mhz = static_cast<int32_t>(r.Int("sm_clock_mhz"));
  h.l2_bytes = r.Int("l2_bytes");
  h.smem_per_sm_bytes = r.Int("smem_per_sm_bytes");
  h.smem_per_block_bytes = r.Int("smem_per_block_bytes");
  h.max_threads_per_sm = static_cast<int32_t>(r.Int("max_threads_per_sm"));
  h.max_blocks_per_sm = static_cast<int32_t>(r.Int("max_blocks_per_sm"));
  h.mem_bandwidth_gb_s = r.Number("mem_bandwidth_gb_s");
  h.flops_per_clock_per_sm_16bit = r.Number("flops_per_clock_per_sm_16bit");
  KSELECT_RETURN_IF_ERROR(r.Finish());
  // The features and estimates divide by these: each a positive, finite figure.
  for (const auto& [key, value] :
       {std::pair<const char*, double>{"sm_count", h.sm_count},
        {"sm_clock_mhz", h.sm_clock_mhz},
        {"mem_bandwidth_gb_s", h.mem_bandwidth_gb_s},
        {"flops_per_clock_per_sm_16bit", h.flops_per_clock_per_sm_16bit}}) {
    if (!(value > 0) || !std::isfinite(value)) {
      return ParseError(r.PathOf(key) + ": " +
                        (std::isnan(value) ? "missing (null)" : "must be a positive number") +
                        "; this spec's hardware cannot be ranked for (retrain, or restore the "
                        "file)");
    }
  }
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"l2_bytes", h.l2_bytes},
                                   {"smem_per_sm_bytes", h.smem_per_sm_bytes},
                                   {"smem_per_block_bytes", h.smem_per_block_bytes},
                                   {"max_threads_per_sm", h.max_threads_per_sm},
                                   {"max_blocks_per_sm", h.max_blocks_per_sm}}) {
    if (value < 0) return ParseError(r.PathOf(key) + ": negative");
  }
  return h;
}

}  // namespace

StatusOr<HardwareConstants> HardwareConstantsFor(const HardwareProfile& profile) {
  const std::string arch = NormalisedArch(profile);
  HardwareConstants h;
  for (const HardwareConstants& part : KnownParts()) {
    if (part.arch == arch) h = part;
  }
  h.arch = arch;
  // Measured values win over the table (an H200 has sm_90's SMs but more bandwidth).
  if (profile.sm_count > 0) h.sm_count = profile.sm_count;
  if (profile.sm_clock_mhz > 0) h.sm_clock_mhz = profile.sm_clock_mhz;
  if (profile.l2_bytes > 0) h.l2_bytes = profile.l2_bytes;
  if (profile.smem_per_sm_bytes > 0) h.smem_per_sm_bytes = profile.smem_per_sm_bytes;
  if (profile.smem_per_block_optin_bytes > 0) {
    h.smem_per_block_bytes = profile.smem_per_block_optin_bytes;
  }
  if (profile.max_threads_per_sm > 0) h.max_threads_per_sm = profile.max_threads_per_sm;
  if (profile.peak_mem_bandwidth_gb_s > 0) h.mem_bandwidth_gb_s = profile.peak_mem_bandwidth_gb_s;
  if (h.sm_count <= 0 || h.sm_clock_mhz <= 0 || h.mem_bandwidth_gb_s <= 0 ||
      h.flops_per_clock_per_sm_16bit <= 0) {
    return InvalidArgumentError(
        "hardware '" + (arch.empty() ? std::string("(no arch)") : arch) +
        "' is not a known part and its profile lacks the SM count, clock or memory bandwidth; "
        "capture it with `kselect hw` on the GPU and ingest with that profile");
  }
  if (h.max_blocks_per_sm <= 0) h.max_blocks_per_sm = 32;
  return h;
}

std::string DescribeHardwareDifference(const HardwareConstants& expected,
                                       const HardwareConstants& actual) {
  const json a = HardwareToJson(expected), b = HardwareToJson(actual);
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (b.at(it.key()) != it.value()) {
      return it.key() + " is " + json_codec::JsonExcerpt(b.at(it.key())) + " here but " +
             json_codec::JsonExcerpt(it.value()) + " in the model";
    }
  }
  return "";
}

std::vector<std::string> FeatureSpec::Names() const {
  std::vector<std::string> names;
  for (const FeatureInfo& f : features) names.push_back(f.name);
  return names;
}

std::vector<int> FeatureSpec::CategoricalIndices() const {
  std::vector<int> out;
  for (size_t i = 0; i < features.size(); ++i) {
    if (features[i].kind == FeatureKind::kCategorical) out.push_back(static_cast<int>(i));
  }
  return out;
}

bool CategoriesExtend(const std::vector<std::string>& model, const std::vector<std::string>& ours) {
  return model.size() <= ours.size() && std::equal(model.begin(), model.end(), ours.begin());
}

Status CheckSpecCompatible(const FeatureSpec& model, const FeatureSpec& runtime) {
  auto mismatch = [](const std::string& what) {
    return SchemaMismatchError("feature spec mismatch: " + what +
                               "; use a model trained for this provider, hardware and kselect "
                               "version, or retrain");
  };
  if (model.encoding_version != runtime.encoding_version) {
    return mismatch("encoding version " + std::to_string(runtime.encoding_version) + " here, " +
                    std::to_string(model.encoding_version) + " in the model");
  }
  if (model.extractor != runtime.extractor) {
    return mismatch("extractor '" + runtime.extractor + "' here, '" + model.extractor +
                    "' in the model");
  }
  if (model.provider != runtime.provider) {
    return mismatch("provider " + std::string(ProviderName(runtime.provider)) + " here, " +
                    std::string(ProviderName(model.provider)) + " in the model");
  }
  if (model.conv_direction != runtime.conv_direction) {
    auto name = [](const std::optional<ConvDirection>& d) {
      return d ? std::string(ConvDirectionName(*d)) : std::string("none");
    };
    return mismatch("convolution direction " + name(runtime.conv_direction) + " here, " +
                    name(model.conv_direction) + " in the model (one model per direction)");
  }
  // Knob columns come from the training data; name the sets, not just the first column that
  // moved, so the reader sees which knob types differ.
  if (const std::vector<int32_t> ours = SpecKnobTypes(runtime), theirs = SpecKnobTypes(model);
      ours != theirs) {
    auto list = [](const std::vector<int32_t>& types) {
      std::string out;
      for (int32_t t : types) out += (out.empty() ? "" : ",") + std::to_string(t);
      return "{" + out + "}";
    };
    return mismatch("knob types " + list(ours) + " here, " + list(theirs) + " in the model");
  }
  const size_t n = std::min(model.features.size(), runtime.features.size());
  for (size_t i = 0; i < n; ++i) {
    if (!(model.features[i] == runtime.features[i])) {
      return mismatch("feature " + std::to_string(i) + " is '" + runtime.features[i].name + "' (" +
                      std::string(KindName(runtime.features[i].kind)) + ") here but '" +
                      model.features[i].name + "' (" +
                      std::string(KindName(model.features[i].kind)) + ") in the model");
    }
  }
  if (model.features.size() != runtime.features.size()) {
    return mismatch(std::to_string(runtime.features.size()) + " features here, " +
                    std::to_string(model.features.size()) + " in the model");
  }
  bool encodings_ok = model.encodings.size() == runtime.encodings.size();
  for (const auto& [name, values] : model.encodings) {
    const auto ours = runtime.encodings.find(name);
    encodings_ok &= ours != runtime.encodings.end() && CategoriesExtend(values, ours->second);
  }
  if (!encodings_ok) return mismatch("categorical encodings differ");
  if (const std::string d = DescribeHardwareDifference(model.hardware, runtime.hardware);
      !d.empty()) {
    return mismatch("hardware: " + d);
  }
  return Status::Ok();
}

std::string FeatureSpecToJson(const FeatureSpec& spec) {
  json features = json::array();
  for (const FeatureInfo& f : spec.features) {
    features.push_back({{"name", f.name}, {"kind", KindName(f.kind)}});
  }
  json j = {{"format", "kselect.feature_spec"},
            {"format_major", spec.format_major},
            {"encoding_version", spec.encoding_version},
            {"extractor", spec.extractor},
            {"provider", ProviderName(spec.provider)},
            {"features", features},
            {"encodings", spec.encodings},
            {"hardware", HardwareToJson(spec.hardware)}};
  // Written only for conv specs, so GEMM specs read the same as before.
  if (spec.conv_direction) j["conv_direction"] = ConvDirectionName(*spec.conv_direction);
  return j.dump(2);
}

StatusOr<FeatureSpec> FeatureSpecFromJson(std::string_view text, std::string_view source) {
  KSELECT_RETURN_IF_ERROR(kselect::text::CheckJsonDepth(text, source));
  const json j = json::parse(text, nullptr, false);
  const std::string src(source);
  if (j.is_discarded()) return ParseError(src + ": not valid JSON");
  json_codec::ObjectReader r(j, "");
  FeatureSpec spec;
  const std::string format = r.String("format");
  spec.format_major = static_cast<int>(r.Int("format_major"));
  spec.encoding_version = static_cast<int>(r.Int("encoding_version"));
  spec.extractor = r.String("extractor");
  const std::string provider = r.String("provider");
  const json* features = r.Child("features", true);
  const json* encodings = r.Child("encodings", true);
  const json* hardware = r.Child("hardware", true);
  const std::string direction = r.StringOr("conv_direction", "");
  KSELECT_RETURN_IF_ERROR(r.Finish().WithContext(src));
  if (format != "kselect.feature_spec") {
    return SchemaMismatchError(src + ": format '" + format + "' is not kselect.feature_spec");
  }
  if (spec.format_major != kFeatureSpecFormatMajor) {
    return SchemaMismatchError(src + ": feature spec format major " +
                               std::to_string(spec.format_major) + " is not supported (this " +
                               "kselect reads " + std::to_string(kFeatureSpecFormatMajor) + ")");
  }
  KSELECT_ASSIGN_OR_RETURN(spec.provider, ParseProvider(provider));
  if (!direction.empty()) {
    auto parsed = ParseConvDirection(direction);
    if (!parsed.ok()) return ParseError(src + ": conv_direction: " + parsed.status().message());
    spec.conv_direction = *parsed;
  }
  if (!features->is_array() || features->empty()) {
    return ParseError(src + ": features: expected a non-empty array");
  }
  for (size_t i = 0; i < features->size(); ++i) {
    json_codec::ObjectReader fr((*features)[i], "features[" + std::to_string(i) + "]");
    FeatureInfo f;
    f.name = fr.String("name");
    const std::string kind = fr.String("kind");
    KSELECT_RETURN_IF_ERROR(fr.Finish().WithContext(src));
    if (kind == "numeric") {
      f.kind = FeatureKind::kNumeric;
    } else if (kind == "categorical") {
      f.kind = FeatureKind::kCategorical;
    } else {
      return ParseError(src + ": features[" + std::to_string(i) + "].kind: unknown kind '" + kind +
                        "'");
    }
    spec.features.push_back(std::move(f));
  }
  if (!encodings->is_object()) return ParseError(src + ": encodings: expected an object");
  for (auto it = encodings->begin(); it != encodings->end(); ++it) {
    if (!it.value().is_array()) {
      return ParseError(src + ": encodings." + it.key() + ": expected an array of strings");
    }
    std::vector<std::string> values;
    for (const json& v : it.value()) {
      if (!v.is_string()) {
        return ParseError(src + ": encodings." + it.key() + ": expected an array of strings");
      }
      values.push_back(v.get<std::string>());
    }
    spec.encodings[it.key()] = std::move(values);
  }
  KSELECT_ASSIGN_OR_RETURN(spec.hardware, HardwareFromJson(*hardware, src + ": hardware"));
  return spec;
}

Status SaveFeatureSpec(const FeatureSpec& spec, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << FeatureSpecToJson(spec) << "\n";
  if (!out.good()) return IoError("cannot write " + path);
  return Status::Ok();
}

StatusOr<FeatureSpec> LoadFeatureSpec(const std::string& path) {
  auto contents = text::ReadFile(path);
  if (contents.status().code() == StatusCode::kNotFound) {
    return NotFoundError(path + ": no feature spec (is this a model directory?)");
  }
  KSELECT_RETURN_IF_ERROR(contents.status());
  return FeatureSpecFromJson(*contents, path);
}

}  // namespace kselect
