// The provenance record's one field list, its JSON forms and the one compatibility check.
#include "kselect/provenance.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/provenance_json.h"
#include "core/text.h"
#include "kselect/version.h"

namespace kselect {
namespace {

using json = nlohmann::json;

// The one list of (field, key, member): writer, reader and check all walk it, so they cannot
// drift. Each `P` is Provenance or const Provenance; the check visits two records at once, the
// visitor then getting the member of each.
template <typename Visitor, typename... P>
void ForEachField(Visitor&& visit, P&... p) {
  visit(ProvenanceField::kDeviceName, "device_name", p.device_name...);
  visit(ProvenanceField::kDeviceKind, "device_kind", p.device_kind...);
  visit(ProvenanceField::kArch, "arch", p.arch...);
  visit(ProvenanceField::kSmCount, "sm_count", p.sm_count...);
  visit(ProvenanceField::kDriverVersion, "driver_version", p.driver_version...);
  visit(ProvenanceField::kRuntimeVersion, "runtime_version", p.runtime_version...);
  visit(ProvenanceField::kCublasLtVersion, "cublaslt_version", p.cublaslt_version...);
  visit(ProvenanceField::kCudnnVersion, "cudnn_version", p.cudnn_version...);
  visit(ProvenanceField::kNvrtcVersion, "nvrtc_version", p.nvrtc_version...);
  visit(ProvenanceField::kToolVersion, "tool_version", p.tool_version...);
  visit(ProvenanceField::kModelFingerprint, "model_fingerprint", p.model_fingerprint...);
}

bool Known(const std::string& value) {
  return !value.empty();
}
bool Known(int32_t value) {
  return value != 0;
}

// A value as the message shows it: strings quoted and JSON-escaped (an empty or spaced name, a
// tab or a control character stays readable).
std::string Shown(const std::string& value) {
  return text::Excerpt(json(value).dump(-1, ' ', false, json::error_handler_t::replace));
}
std::string Shown(int32_t value) {
  return std::to_string(value);
}
std::string Shown(double value) {
  if (std::floor(value) == value && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  return json(value).dump();
}

// Two values that differ, shown so that the difference shows: where their texts read alike (past
// the excerpt's length, or in bytes that are not UTF-8) the first differing byte is named.
template <typename T>
std::pair<std::string, std::string> ShownApart(const T& theirs, const T& ours) {
  std::pair<std::string, std::string> shown{Shown(theirs), Shown(ours)};
  if constexpr (std::is_same_v<T, std::string>) {
    if (shown.first == shown.second) {
      size_t at = 0;
      while (at < theirs.size() && at < ours.size() && theirs[at] == ours[at]) ++at;
      auto byte = [](const std::string& text, size_t i) {
        if (i >= text.size()) return std::string("the end");
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02x", static_cast<unsigned char>(text[i]));
        return std::string(hex);
      };
      shown.first += " (" + byte(theirs, at) + " at byte " + std::to_string(at) + ")";
      shown.second += " (" + byte(ours, at) + " there)";
    }
  }
  return shown;
}

std::string Mismatch(const ProvenanceCheck& check, std::string_view key,
                     const std::string& recorded, const std::string& here) {
  return std::string(check.artifact) + ": made with " + std::string(key) + " " + recorded + ", " +
         std::string(check.here) + " has " + here + ": " + std::string(check.remedy);
}

}  // namespace

Provenance ProvenanceOf(const HardwareProfile& profile) {
  Provenance p;
  p.device_name = profile.device_name;
  p.device_kind = profile.device_kind;
  p.arch = profile.arch;
  p.sm_count = profile.sm_count;
  p.driver_version = profile.driver_version;
  p.runtime_version = profile.runtime_version;
  p.cublaslt_version = profile.cublaslt_version;
  p.cudnn_version = profile.cudnn_version;
  p.nvrtc_version = profile.nvrtc_version;
  p.tool_version = ToolVersion();
  return p;
}

ProvenanceFields KnownFields(const Provenance& provenance) {
  ProvenanceFields known;
  ForEachField(
      [&](ProvenanceField field, const char*, const auto& value) {
        if (Known(value)) known |= field;
      },
      provenance);
  return known;
}

std::string ProvenanceToJson(const Provenance& provenance, ProvenanceFields fields) {
  json object = json::object();
  json_codec::WriteProvenance(provenance, object, fields);
  return object.dump(1);
}

StatusOr<Provenance> ProvenanceFromJson(std::string_view text, std::string_view source) {
  KSELECT_RETURN_IF_ERROR(text::CheckJsonDepth(text, source));
  const json object = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded() || !object.is_object()) {
    return ParseError(std::string(source) + ": not a JSON object (corrupt provenance)");
  }
  json_codec::ObjectReader reader(object, std::string(source));
  Provenance provenance = json_codec::ReadProvenance(reader);
  KSELECT_RETURN_IF_ERROR(reader.Finish());
  return provenance;
}

Status CheckProvenance(const Provenance& recorded, const Provenance& here,
                       const ProvenanceCheck& check) {
  Status status;
  ForEachField(
      [&](ProvenanceField field, const char* key, const auto& theirs, const auto& ours) {
        if (status.ok() && check.fields.Has(field) && Known(theirs) && Known(ours) &&
            theirs != ours) {
          const auto [recorded_text, here_text] = ShownApart(theirs, ours);
          status = SchemaMismatchError(Mismatch(check, key, recorded_text, here_text));
        }
      },
      recorded, here);
  KSELECT_RETURN_IF_ERROR(status);
  for (const ProvenanceFigure& figure : check.figures) {
    if (figure.recorded != 0 && figure.here != 0 && figure.recorded != figure.here) {
      return SchemaMismatchError(
          Mismatch(check, figure.key, Shown(figure.recorded), Shown(figure.here)));
    }
  }
  return Status::Ok();
}

namespace json_codec {

void WriteProvenance(const Provenance& provenance, json& object, ProvenanceFields fields) {
  ForEachField(
      [&](ProvenanceField field, const char* key, const auto& value) {
        if (fields.Has(field)) object[key] = value;
      },
      provenance);
}

Provenance ReadProvenance(ObjectReader& reader, ProvenanceFields* present) {
  Provenance provenance;
  ProvenanceFields found;
  ForEachField(
      [&](ProvenanceField field, const char* key, auto& out) {
        if (reader.Has(key)) found |= field;
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(out)>, std::string>) {
          out = reader.StringOr(key, "");
        } else {
          const int64_t value = reader.IntOr(key, 0);
          if (value < std::numeric_limits<int32_t>::min() ||
              value > std::numeric_limits<int32_t>::max()) {
            reader.Fail(
                ParseError(reader.PathOf(key) + ": " + std::to_string(value) + " is out of range"));
            return;
          }
          out = static_cast<int32_t>(value);
        }
      },
      provenance);
  if (present != nullptr) *present = found;
  return provenance;
}

}  // namespace json_codec
}  // namespace kselect
