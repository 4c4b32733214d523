// Provenance: the device, CUDA and library versions, tool and model an artifact was made with.
// Every file whose figures or decisions depend on them (solution libraries, decision caches, tune
// reports, head-to-head and search results, catalogue snapshots) records this one struct under
// the same keys, and one check (CheckProvenance) decides whether a recorded artifact holds where it
// is read, with one message format that names the field that differs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kselect/hardware.h"
#include "kselect/status.h"

namespace kselect {

// Where and with what an artifact was made. An empty string or 0 means unknown (an older file
// without the key, a host without a GPU); unknown values are never a mismatch. The comments name
// the JSON key (the same as the member) and the encoding.
struct Provenance {
  std::string device_name;  // "device_name": as the driver reports it ("NVIDIA H200")
  std::string device_kind;  // "device_kind": the lender's kind name ("nvidia-h200")
  std::string arch;         // "arch": "sm_90" ("gfx950" for AMD)
  int32_t sm_count = 0;     // "sm_count": streaming multiprocessors
  // CUDA versions, major * 1000 + minor * 10 (13000 = 13.0).
  int32_t driver_version = 0;   // "driver_version": what the driver supports
  int32_t runtime_version = 0;  // "runtime_version": the CUDA runtime kselect was built with
  // Library versions as the libraries report them, major * 10000 + minor * 100 + patch
  // (cuBLASLt 130100 = 13.1.0, cuDNN 91000 = 9.10.0).
  int32_t cublaslt_version = 0;  // "cublaslt_version"
  int32_t cudnn_version = 0;     // "cudnn_version" (0 also where cuDNN is absent)
  int32_t nvrtc_version = 0;     // "nvrtc_version": major * 1000 + minor * 10, as CUDA's
  std::string tool_version;      // "tool_version": ToolVersion() of the kselect that made it
  // "model_fingerprint": FingerprintModelDir() of the model it was made with (16 hex digits).
  std::string model_fingerprint;

  bool operator==(const Provenance&) const = default;
};

// One bit per Provenance member, to say which fields a check compares or a file records.
enum class ProvenanceField : uint32_t {
  kDeviceName = 1u << 0,
  kDeviceKind = 1u << 1,
  kArch = 1u << 2,
  kSmCount = 1u << 3,
  kDriverVersion = 1u << 4,
  kRuntimeVersion = 1u << 5,
  kCublasLtVersion = 1u << 6,
  kCudnnVersion = 1u << 7,
  kNvrtcVersion = 1u << 8,
  kToolVersion = 1u << 9,
  kModelFingerprint = 1u << 10,
};

// A set of ProvenanceFields: ProvenanceField::kDeviceName | ProvenanceField::kSmCount.
class ProvenanceFields {
 public:
  constexpr ProvenanceFields() = default;
  constexpr ProvenanceFields(ProvenanceField field) : bits_(static_cast<uint32_t>(field)) {}
  static constexpr ProvenanceFields All() { return ProvenanceFields((1u << 11) - 1); }
  // The device and software fields: all but tool_version and model_fingerprint.
  static constexpr ProvenanceFields DeviceAndLibraries() {
    return ProvenanceFields(All().bits_ &
                            ~(static_cast<uint32_t>(ProvenanceField::kToolVersion) |
                              static_cast<uint32_t>(ProvenanceField::kModelFingerprint)));
  }

  constexpr bool Has(ProvenanceField field) const {
    return (bits_ & static_cast<uint32_t>(field)) != 0;
  }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr ProvenanceFields operator|(ProvenanceFields other) const {
    return ProvenanceFields(bits_ | other.bits_);
  }
  constexpr ProvenanceFields& operator|=(ProvenanceFields other) {
    bits_ |= other.bits_;
    return *this;
  }
  constexpr bool operator==(const ProvenanceFields&) const = default;

 private:
  constexpr explicit ProvenanceFields(uint32_t bits) : bits_(bits) {}
  uint32_t bits_ = 0;
};
constexpr ProvenanceFields operator|(ProvenanceField a, ProvenanceField b) {
  return ProvenanceFields(a) | b;
}

// The record of `profile` (device fields empty where it has none) made by this kselect:
// tool_version is ToolVersion(), model_fingerprint empty (the caller sets it where a model is
// used).
Provenance ProvenanceOf(const HardwareProfile& profile);

// The fields of `provenance` that are known (not "" or 0).
ProvenanceFields KnownFields(const Provenance& provenance);

// A JSON object holding the keys of `fields` (all by default), as every artifact writes them.
std::string ProvenanceToJson(const Provenance& provenance,
                             ProvenanceFields fields = ProvenanceFields::All());
// Reads an object ProvenanceToJson wrote. Absent keys read as unknown, so records written before a
// field existed still load; a key of the wrong type or an unknown key is a ParseError naming
// `source`.
StatusOr<Provenance> ProvenanceFromJson(std::string_view text, std::string_view source);

// A figure an artifact records beside its provenance that must match too (the decision cache's SM
// clock and memory bandwidth, with which its decisions were scored). 0 is unknown, never compared.
struct ProvenanceFigure {
  std::string_view key;  // its JSON key, named in the message
  double recorded = 0;
  double here = 0;
};

// What CheckProvenance compares and how its message reads.
struct ProvenanceCheck {
  ProvenanceFields fields;                         // the fields whose difference makes it not hold
  std::string_view artifact;                       // names what was recorded (a path), first
  std::string_view remedy;                         // what the reader should do, last
  std::string_view here = "this host";             // names what it is checked against
  std::span<const ProvenanceFigure> figures = {};  // compared after the fields
};

// OK when every field of `check.fields` (then every figure) is equal in `recorded` and `here`,
// or unknown on either side. Otherwise kSchemaMismatch for the first that differs, in one format:
//   "<artifact>: made with <key> <recorded value>, <here> has <here value>: <remedy>"
// e.g. "lib.json: made with cublaslt_version 130100, this host has 130200: tune again here".
Status CheckProvenance(const Provenance& recorded, const Provenance& here,
                       const ProvenanceCheck& check);

}  // namespace kselect
