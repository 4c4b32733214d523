// HardwareProfile <-> JSON. The reader is strict: every field must be present with the right
// type and no other keys are accepted, so a typo in a hand-edited profile is an error rather than
// a silently defaulted field.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "core/text.h"
#include "kselect/hardware.h"

namespace kselect {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFormatName = "kselect.hardware_profile";
constexpr int64_t kFormatVersion = 1;

// The one list of (key, member) pairs: writer and reader both walk it, so they cannot drift.
// `Profile` is HardwareProfile or const HardwareProfile.
template <typename Profile, typename Visitor>
void ForEachField(Profile& p, Visitor&& visit) {
  visit("vendor", p.vendor);
  visit("device_name", p.device_name);
  visit("device_kind", p.device_kind);
  visit("arch", p.arch);
  visit("uuid", p.uuid);
  visit("cc_major", p.cc_major);
  visit("cc_minor", p.cc_minor);
  visit("sm_count", p.sm_count);
  visit("sm_clock_mhz", p.sm_clock_mhz);
  visit("mem_clock_mhz", p.mem_clock_mhz);
  visit("mem_bus_width_bits", p.mem_bus_width_bits);
  visit("l2_bytes", p.l2_bytes);
  visit("smem_per_sm_bytes", p.smem_per_sm_bytes);
  visit("smem_per_block_optin_bytes", p.smem_per_block_optin_bytes);
  visit("regs_per_sm", p.regs_per_sm);
  visit("max_threads_per_sm", p.max_threads_per_sm);
  visit("global_mem_bytes", p.global_mem_bytes);
  visit("peak_mem_bandwidth_gb_s", p.peak_mem_bandwidth_gb_s);
  visit("driver_version", p.driver_version);
  visit("runtime_version", p.runtime_version);
  visit("cublaslt_version", p.cublaslt_version);
  visit("cudnn_version", p.cudnn_version);
  visit("nvrtc_version", p.nvrtc_version);
}

std::string FieldError(std::string_view source, std::string_view key, std::string_view what) {
  return std::string(source) + ": field \"" + std::string(key) + "\": " + std::string(what);
}

// Reads `value` into `out`, checking its JSON type and, for integers, the range of T.
template <typename T>
Status ReadField(const Json& value, std::string_view source, std::string_view key, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) {
      return ParseError(
          FieldError(source, key, std::string("expected a string, got ") + value.type_name()));
    }
    out = value.get<std::string>();
  } else if constexpr (std::is_same_v<T, double>) {
    if (!value.is_number()) {
      return ParseError(
          FieldError(source, key, std::string("expected a number, got ") + value.type_name()));
    }
    out = value.get<double>();
  } else {
    static_assert(std::is_integral_v<T>, "unsupported field type");
    if (!value.is_number_integer()) {
      // 9.5 (or 9.0) is refused like a string: these fields count things.
      return ParseError(FieldError(source, key,
                                   std::string("expected an integer, got ") +
                                       (value.is_number_float() ? json_codec::JsonExcerpt(value)
                                                                : std::string(value.type_name()))));
    }
    const bool in_range =
        value.is_number_unsigned()
            ? value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
            : value.get<int64_t>() >= std::numeric_limits<T>::min() &&
                  value.get<int64_t>() <= std::numeric_limits<T>::max();
    if (!in_range) {
      return ParseError(FieldError(
          source, key, "integer " + json_codec::JsonExcerpt(value) + " is out of range"));
    }
    out = value.get<T>();
  }
  return Status::Ok();
}

}  // namespace

std::string HardwareProfileToJson(const HardwareProfile& profile, int indent) {
  Json json;
  json["format"] = kFormatName;
  json["format_version"] = kFormatVersion;
  ForEachField(profile, [&json](const char* key, const auto& value) { json[key] = value; });
  return json.dump(indent);
}

StatusOr<HardwareProfile> HardwareProfileFromJson(std::string_view text, std::string_view source) {
  KSELECT_RETURN_IF_ERROR(kselect::text::CheckJsonDepth(text, source));
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::exception& error) {  // parse_error, or out_of_range for 2e99999
    // Keep nlohmann's "parse error at line L, column C: ..." and drop its "[json.exception...] "
    // tag, which means nothing to a user.
    std::string_view what = error.what();
    if (const size_t tag_end = what.find("] ");
        what.rfind("[json.exception", 0) == 0 && tag_end != std::string_view::npos) {
      what.remove_prefix(tag_end + 2);
    }
    return ParseError(std::string(source) + ": " + kselect::text::Excerpt(what));
  }
  if (!json.is_object()) {
    return ParseError(std::string(source) + ": expected a JSON object, got " + json.type_name());
  }

  const auto format = json.find("format");
  if (format == json.end()) {
    return ParseError(
        FieldError(source, "format", "missing (expected \"" + std::string(kFormatName) + "\")"));
  }
  if (!format->is_string() || format->get<std::string>() != kFormatName) {
    return SchemaMismatchError(std::string(source) + ": \"format\" is " +
                               json_codec::JsonExcerpt(*format) + ", not \"" + kFormatName + "\"");
  }
  const auto version = json.find("format_version");
  if (version == json.end()) return ParseError(FieldError(source, "format_version", "missing"));
  if (!version->is_number_integer()) {
    return ParseError(FieldError(source, "format_version",
                                 std::string("expected an integer, got ") + version->type_name()));
  }
  if (version->get<int64_t>() != kFormatVersion) {
    return SchemaMismatchError(std::string(source) + ": hardware profile format_version " +
                               json_codec::JsonExcerpt(*version) +
                               " is not supported (this kselect reads " +
                               std::to_string(kFormatVersion) + ")");
  }

  HardwareProfile profile;
  std::set<std::string, std::less<>> known = {"format", "format_version"};
  Status status;
  ForEachField(profile, [&](const char* key, auto& out) {
    known.insert(key);
    if (!status.ok()) return;
    const auto it = json.find(key);
    if (it == json.end()) {
      status = ParseError(FieldError(source, key, "missing"));
      return;
    }
    status = ReadField(*it, source, key, out);
  });
  KSELECT_RETURN_IF_ERROR(status);
  for (const auto& [key, value] : json.items()) {
    if (known.find(key) == known.end()) {
      return ParseError(FieldError(source, key, "unknown field (a typo?)"));
    }
  }
  return profile;
}

Status SaveHardwareProfile(const HardwareProfile& profile, const std::string& path) {
  return text::WriteFileAtomically(path, HardwareProfileToJson(profile) + "\n");
}

namespace {

// Devices whose figures are known (from profiles captured on them, data/hardware/): a profile
// naming one must carry its figures, so another device's numbers under its name (H100 figures in
// an H200 profile) are refused rather than estimated with. Measured figures vary a little with
// the driver's clock and memory reports: within kKnownDeviceTolerance of these.
struct KnownDevice {
  std::string_view device_name;
  int32_t sm_count;
  int64_t l2_bytes;
  int64_t global_mem_bytes;
  double peak_mem_bandwidth_gb_s;
};
constexpr KnownDevice kKnownDevices[] = {
    {"NVIDIA H200", 132, 62914560, 150109880320, 4814.304},
    {"NVIDIA H100 80GB HBM3", 132, 52428800, 85017493504, 3352.32},
};
constexpr double kKnownDeviceTolerance = 0.10;

Status CheckKnownDevice(const HardwareProfile& profile, std::string_view source) {
  for (const KnownDevice& known : kKnownDevices) {
    if (profile.device_name != known.device_name) continue;
    const struct {
      const char* key;
      double value, expected;
      bool exact;
    } figures[] = {
        {"sm_count", 1.0 * profile.sm_count, 1.0 * known.sm_count, true},
        {"l2_bytes", 1.0 * profile.l2_bytes, 1.0 * known.l2_bytes, false},
        {"global_mem_bytes", 1.0 * profile.global_mem_bytes, 1.0 * known.global_mem_bytes, false},
        {"peak_mem_bandwidth_gb_s", profile.peak_mem_bandwidth_gb_s, known.peak_mem_bandwidth_gb_s,
         false},
    };
    for (const auto& f : figures) {
      const double off = std::abs(f.value - f.expected) / f.expected;
      if (f.exact ? f.value != f.expected : off > kKnownDeviceTolerance) {
        char expected[64];
        std::snprintf(expected, sizeof(expected), "%.10g", f.expected);
        char value[64];
        std::snprintf(value, sizeof(value), "%.10g", f.value);
        return InvalidArgumentError(FieldError(
            source, f.key,
            std::string(value) + " is not an " + std::string(known.device_name) + "'s (" +
                expected + (f.exact ? "" : " within 10 %") +
                "): figures of another device under its name? Capture the profile on the GPU "
                "with `kselect hw --save`"));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<HardwareProfile> LoadHardwareProfile(const std::string& path) {
  KSELECT_ASSIGN_OR_RETURN(const std::string contents, text::ReadFile(path));
  KSELECT_ASSIGN_OR_RETURN(HardwareProfile profile, HardwareProfileFromJson(contents, path));
  // A profile a user hands a command (predict --hardware, hw --load, log summarize --hw) is what
  // estimates divide by. (Records embed profiles of runs whose clock query may have failed: those
  // are read as they are.)
  const std::string_view source = path;
  Status status;
  // Counts and sizes are never negative; the figures features and estimates divide by must be
  // positive (a zero bandwidth or clock would make every estimate infinite).
  ForEachField(profile, [&](const char* key, const auto& value) {
    if constexpr (!std::is_same_v<std::remove_cvref_t<decltype(value)>, std::string>) {
      if (status.ok() && value < 0) {
        status = InvalidArgumentError(FieldError(source, key, "negative"));
      }
    }
  });
  KSELECT_RETURN_IF_ERROR(status);
  for (const auto& [key, value] : {std::pair<const char*, double>{"sm_count", profile.sm_count},
                                   {"sm_clock_mhz", profile.sm_clock_mhz},
                                   {"peak_mem_bandwidth_gb_s", profile.peak_mem_bandwidth_gb_s}}) {
    if (value <= 0) {
      return InvalidArgumentError(FieldError(source, key, "must be positive"));
    }
  }
  KSELECT_RETURN_IF_ERROR(CheckKnownDevice(profile, source));
  return profile;
}

}  // namespace kselect
