// Reading one field of a JSON object into a C++ value, for every typed message of lib/wire
// and the coordinator's request decoders. A field that is missing (when required), of the
// wrong JSON type or (a number) out of the C++ type's range is an error naming it:
//   field "shard" is required | field "shard" has the wrong type | field "shard" is out of range
// Callers add which message it was. Header only, pure, any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "base/status.h"
#include "wire/json_number.h"

namespace jobctl::wire {

// A required field: absent is an error; null is of the wrong type.
template <typename T>
Status Need(const nlohmann::json& obj, const char* key, T* out) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    return Status::InvalidArgument(std::string("field \"") + key + "\" is required");
  }
  if (!JsonNumberFits<T>(*it)) {
    return Status::InvalidArgument(std::string("field \"") + key + "\" is out of range");
  }
  // get<T>() would take true as 1 and 0.5 as 0 for an integer, and 1 as true: not ours.
  bool type_ok = true;
  if constexpr (std::is_same_v<T, bool>) {
    type_ok = it->is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    type_ok = it->is_number_integer();
  } else if constexpr (std::is_same_v<T, std::string>) {
    type_ok = it->is_string();
  }
  if (!type_ok) {
    return Status::InvalidArgument(std::string("field \"") + key + "\" has the wrong type");
  }
  try {
    *out = it->template get<T>();
  } catch (const nlohmann::json::exception&) {
    return Status::InvalidArgument(std::string("field \"") + key + "\" has the wrong type");
  }
  return Status::Ok();
}

// An optional field: absent or null leaves `out` as it is.
template <typename T>
Status Opt(const nlohmann::json& obj, const char* key, T* out) {
  auto it = obj.find(key);
  return it != obj.end() && !it->is_null() ? Need(obj, key, out) : Status::Ok();
}

// An optional field kept as std::optional: absent or null is nullopt.
template <typename T>
Status Opt(const nlohmann::json& obj, const char* key, std::optional<T>* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    out->reset();
    return Status::Ok();
  }
  T v{};
  if (Status s = Need(obj, key, &v); !s.ok()) return s;
  *out = std::move(v);
  return Status::Ok();
}

// The first failure of a list of reads, or Ok.
inline Status FirstError(std::initializer_list<Status> all) {
  for (const Status& s : all) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// A reply that does not decode: names the message and says why the two sides may disagree.
inline Status ReplyError(std::string_view message, const Status& s, std::string_view sides) {
  return Status::InvalidArgument(std::string(message) + ": " + s.message() + " (" +
                                 std::string(sides) + " may be different versions)");
}

}  // namespace jobctl::wire
