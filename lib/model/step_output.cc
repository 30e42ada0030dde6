#include "model/step_output.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "model/env_rules.h"

namespace jobctl {
namespace {

std::string Shown(std::string_view s) {
  return s.size() > 64 ? std::string(s.substr(0, 64)) + "..." : std::string(s);
}

// Names that make a shell or an interpreter run code or read it from elsewhere when they
// start: an output must not turn a step's program into another one (the step may run as
// another user than the step that wrote it).
constexpr std::string_view kCodeRunning[] = {"BASH_ENV",
                                             "ENV",
                                             "SHELLOPTS",
                                             "BASHOPTS",
                                             "PS4",
                                             "IFS",
                                             "CDPATH",
                                             "GLOBIGNORE",
                                             "PROMPT_COMMAND",
                                             "PYTHONPATH",
                                             "PYTHONHOME",
                                             "PYTHONSTARTUP",
                                             "PYTHONINSPECT",
                                             "PERL5LIB",
                                             "PERL5OPT",
                                             "PERLLIB",
                                             "RUBYLIB",
                                             "RUBYOPT",
                                             "NODE_OPTIONS",
                                             "NODE_PATH",
                                             "JAVA_TOOL_OPTIONS",
                                             "_JAVA_OPTIONS",
                                             "JDK_JAVA_OPTIONS",
                                             "CLASSPATH",
                                             "GIT_SSH_COMMAND",
                                             "GIT_EXEC_PATH",
                                             "LESSOPEN",
                                             "LESSCLOSE",
                                             "TMPDIR",
                                             "TZDIR"};

// Well-formed UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF.
bool IsUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

}  // namespace

std::string OutputKeyProblem(std::string_view key) {
  if (std::string p = ParamNameProblem(key); !p.empty()) return p;
  if (key.substr(0, 4) == "JOB_") return "reserved: the agent sets JOB_* variables";
  if (std::find(std::begin(kCodeRunning), std::end(kCodeRunning), key) != std::end(kCodeRunning)) {
    return "refused: a shell or interpreter runs code it names";
  }
  return "";
}

std::string OutputValueProblem(std::string_view value) {
  if (value.find('\0') != std::string_view::npos) return "holds a NUL byte";
  if (value.find('\n') != std::string_view::npos) return "holds a newline";
  if (!value.empty() && value.back() == '\r') return "ends in a carriage return";
  if (value.size() > kMaxStepOutputBytes) return "is over the limit of one output";
  if (!IsUtf8(value)) return "is not UTF-8";
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
    if (!IsUtf8(line)) return Status::InvalidArgument(where + "is not UTF-8");
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
