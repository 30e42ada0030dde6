// Reading the fields of a JSON object into C++ values, strictly and without exceptions: true is
// not 1, 0.5 is not an integer, a number outside the member's range is not that number, a
// list of strings holds only strings. One rule (ReadValue) under two ways of reading:
//   Need/Opt     a flat request body, first problem returned at once, with the messages the
//                API answers with: field "x" is required | has the wrong type | is out of range
//   FieldReader  a reply read field by field, nested lists included; the first problem names
//                the field by its path ("shards[2].index") and says the two sides' versions may
//                differ.
// Header only, pure, any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/status.h"
#include "wire/json_number.h"

namespace jobctl::wire {

// What a field of type T must be, in words ("an integer").
template <typename T>
const char* TypeName() {
  if constexpr (std::is_same_v<T, bool>) return "true or false";
  if constexpr (std::is_integral_v<T>) return "an integer";
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  if constexpr (std::is_same_v<T, std::vector<std::string>>) return "a list of strings";
  if constexpr (std::is_same_v<T, std::map<std::string, std::string>>)
    return "an object of strings";
  if constexpr (std::is_same_v<T, nlohmann::json>) return "an object";
  return "a value";
}

template <typename T>
bool ReadValue(const nlohmann::json& v, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return false;
    *out = v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer() || !JsonNumberFits<T>(v)) return false;
    *out = v.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return false;
    *out = v.get<std::string>();
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    if (!v.is_array()) return false;
    out->clear();
    for (const nlohmann::json& s : v) {
      if (!s.is_string()) return false;
      out->push_back(s.get<std::string>());
    }
  } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
    if (!v.is_object()) return false;
    out->clear();
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it.value().is_string()) return false;
      (*out)[it.key()] = it.value().template get<std::string>();
    }
  } else {
    static_assert(std::is_same_v<T, nlohmann::json>, "no ReadValue for this type");
    if (!v.is_object()) return false;
    *out = v;
  }
  return true;
}

// A required field: absent is an error; null is of the wrong type.
template <typename T>
Status Need(const nlohmann::json& obj, const char* key, T* out) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    return Status::InvalidArgument(std::string("field \"") + key + "\" is required");
  }
  if (it->is_number() && !JsonNumberFits<T>(*it)) {
    return Status::InvalidArgument(std::string("field \"") + key + "\" is out of range");
  }
  if (!ReadValue(*it, out)) {
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

// Appended to every decoding error of a reply: the likely cause when a field the code expects
// is not there.
inline constexpr std::string_view kVersionSkewHint =
    "(jobctl and the coordinator may be different versions)";

class FieldReader {
 public:
  // `j` must outlive the reader; `path` prefixes every field name ("shards[2].").
  explicit FieldReader(const nlohmann::json& j, std::string path = "")
      : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) Bad("", "an object");
  }

  // A field that must be present (and not null).
  template <typename T>
  FieldReader& Need(const char* key, T* out) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr || v->is_null()) return Bad(key, TypeName<T>());
    if (!ReadValue(*v, out)) return Bad(key, TypeName<T>());
    return *this;
  }

  // A field that may be absent or null (nullopt); present, it must have the type.
  template <typename T>
  FieldReader& Opt(const char* key, std::optional<T>* out) {
    out->reset();
    const nlohmann::json* v = Find(key);
    if (v == nullptr || v->is_null()) return *this;
    T value{};
    if (!ReadValue(*v, &value)) return Bad(key, TypeName<T>());
    *out = std::move(value);
    return *this;
  }

  // A required array of objects, each decoded by `read(FieldReader&, T*)`.
  template <typename T, typename ReadFn>
  FieldReader& List(const char* key, std::vector<T>* out, ReadFn read) {
    out->clear();
    const nlohmann::json* v = Find(key);
    if (v == nullptr || !v->is_array()) return Bad(key, "a list");
    ReadElements(*v, path_ + key, out, read);
    return *this;
  }

  // An array of objects that may be absent or null (nullopt), each decoded as List does.
  template <typename T, typename ReadFn>
  FieldReader& OptList(const char* key, std::optional<std::vector<T>>* out, ReadFn read) {
    out->reset();
    const nlohmann::json* v = Find(key);
    if (v == nullptr || v->is_null()) return *this;
    if (!v->is_array()) return Bad(key, "a list");
    std::vector<T> items;
    ReadElements(*v, path_ + key, &items, read);
    if (ok()) *out = std::move(items);
    return *this;
  }

  // The elements of `array` (itself the message, as in a list reply), each read by `read`.
  template <typename T, typename ReadFn>
  void ReadElements(const nlohmann::json& array, const std::string& path, std::vector<T>* out,
                    ReadFn read) {
    out->reserve(array.size());
    for (size_t i = 0; i < array.size() && ok(); ++i) {
      FieldReader item(array[i], path + "[" + std::to_string(i) + "].");
      T value{};
      read(item, &value);
      if (!item.ok()) {
        bad_field_ = item.bad_field_;
        expected_ = item.expected_;
        return;
      }
      out->push_back(std::move(value));
    }
  }

  bool ok() const { return expected_ == nullptr; }
  const nlohmann::json& json() const { return j_; }

  // Ok, or `message: field "path" is missing or not an integer (... versions)`.
  Status Finish(std::string_view message) const {
    if (ok()) return Status::Ok();
    std::string what = bad_field_.empty()
                           ? std::string("not ") + expected_
                           : "field \"" + bad_field_ + "\" is missing or not " + expected_;
    return Status::InvalidArgument(std::string(message) + ": " + what + " " +
                                   std::string(kVersionSkewHint));
  }

 private:
  const nlohmann::json* Find(const char* key) const {
    if (!ok() || !j_.is_object()) return nullptr;
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }

  FieldReader& Bad(std::string_view key, const char* expected) {
    if (!ok()) return *this;
    bad_field_ = path_ + std::string(key);
    if (!bad_field_.empty() && bad_field_.back() == '.') bad_field_.pop_back();
    expected_ = expected;
    return *this;
  }

  const nlohmann::json& j_;
  std::string path_;
  std::string bad_field_;
  const char* expected_ = nullptr;  // null while every field read so far was good
};

}  // namespace jobctl::wire
