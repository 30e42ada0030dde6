#include "model/step_output.h"

#include "model/env_rules.h"

namespace jobctl {
namespace {

std::string Shown(std::string_view s) {
  return s.size() > 64 ? std::string(s.substr(0, 64)) + "..." : std::string(s);
}

}  // namespace

std::string OutputKeyProblem(std::string_view key) {
  if (std::string p = ParamNameProblem(key); !p.empty()) return p;
  if (key.substr(0, 4) == "JOB_") return "reserved: the agent sets JOB_* variables";
  return "";
}

Result<StepOutputs> ParseStepOutput(std::string_view text) {
  if (text.size() > kMaxStepOutputBytes) {
    return Status::ResourceExhausted("it is " + std::to_string(text.size()) +
                                     " bytes, over the limit of " +
                                     std::to_string(kMaxStepOutputBytes));
  }
  StepOutputs out;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string where = "line " + std::to_string(line_no) + ": ";
    if (line.empty() || line[0] == '#') continue;
    if (line.find('\0') != std::string_view::npos) {
      return Status::InvalidArgument(where + "holds a NUL byte");
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument(where + "expected KEY=value, got \"" + Shown(line) + "\"");
    }
    std::string_view key = line.substr(0, eq);
    if (std::string p = OutputKeyProblem(key); !p.empty()) {
      return Status::InvalidArgument(where + "key \"" + Shown(key) + "\": " + p);
    }
    out[std::string(key)] = std::string(line.substr(eq + 1));
  }
  return out;
}

size_t OutputBytes(const StepOutputs& outputs) {
  size_t n = 0;
  for (const auto& [k, v] : outputs) n += k.size() + v.size();
  return n;
}

StepOutputs MergeOutputs(std::span<const StepOutputs> layers) {
  StepOutputs out;
  for (const StepOutputs& layer : layers) {
    for (const auto& [k, v] : layer) out[k] = v;
  }
  return out;
}

Result<StepOutputs> NeededOutputs(std::span<const StepOutputs> needs) {
  StepOutputs out = MergeOutputs(needs);
  if (size_t n = OutputBytes(out); n > kMaxNeededOutputBytes) {
    return Status::ResourceExhausted("the outputs of the steps it needs are " + std::to_string(n) +
                                     " bytes, over the limit of " +
                                     std::to_string(kMaxNeededOutputBytes));
  }
  return out;
}

std::string FormatStepOutput(const StepOutputs& outputs) {
  // No newline after the last line: the text is never longer than one that reads as it.
  std::string text;
  for (const auto& [k, v] : outputs) text += (text.empty() ? "" : "\n") + k + "=" + v;
  return text;
}

}  // namespace jobctl
