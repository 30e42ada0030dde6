#include "model/cron.h"

#include <date/date.h>

#include <bit>
#include <cctype>
#include <string>
#include <vector>

namespace jobctl {
namespace {

enum class FieldKind { kSecond, kMinute, kHour, kDom, kMonth, kDow, kYear };

struct FieldInfo {
  std::string_view name;
  int min;
  int max;
};

FieldInfo InfoFor(FieldKind kind, Dialect dialect) {
  switch (kind) {
    case FieldKind::kSecond: return {"second", 0, 59};
    case FieldKind::kMinute: return {"minute", 0, 59};
    case FieldKind::kHour: return {"hour", 0, 23};
    case FieldKind::kDom: return {"day-of-month", 1, 31};
    case FieldKind::kMonth: return {"month", 1, 12};
    case FieldKind::kDow:
      return dialect == Dialect::kQuartz ? FieldInfo{"day-of-week", 1, 7}
                                         : FieldInfo{"day-of-week", 0, 7};
    case FieldKind::kYear: return {"year", 1970, 2199};
  }
  return {"?", 0, 0};
}

constexpr std::string_view kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                            "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::string_view kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

// A set of raw field values (as written, before day-of-week folding), wide enough for years.
// Years are stored from 1970 (offset) so that 230 of them fit in 256 bits.
struct Bits {
  std::array<uint64_t, 4> w{};
  int offset = 0;
  void Set(int i) { w[(i - offset) / 64] |= uint64_t{1} << ((i - offset) % 64); }
  bool Test(int i) const { return (w[(i - offset) / 64] >> ((i - offset) % 64)) & 1; }
};

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

uint64_t Fnv1a(std::string_view key, int salt) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (char c : key) mix(static_cast<unsigned char>(c));
  mix(0x1f);
  mix(static_cast<unsigned char>(salt));
  // Final avalanche so that neighbouring names spread over the whole range.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

int DaysInMonth(int year, unsigned month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month == 2) {
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return leap ? 29 : 28;
  }
  return kDays[month - 1];
}

// Lowest set bit at position >= from, or -1.
int NextBit(uint64_t bits, int from) {
  if (from >= 64) return -1;
  uint64_t masked = bits & (~uint64_t{0} << from);
  return masked == 0 ? -1 : std::countr_zero(masked);
}

}  // namespace

std::string_view DialectName(Dialect d) { return d == Dialect::kQuartz ? "quartz" : "cron"; }

std::optional<Dialect> ParseDialect(std::string_view name) {
  if (name == "cron") return Dialect::kCron;
  if (name == "quartz") return Dialect::kQuartz;
  return std::nullopt;
}

// Turns the text of the fields into CronExpr's bit sets. One instance per Parse call.
class CronParser {
 public:
  CronParser(const CronOptions& options, CronExpr& out) : options_(options), out_(out) {}

  Status ParseAll(std::string_view expr);

 private:
  Status ParseField(FieldKind kind, int position, std::string_view text);
  Status ParseItem(FieldKind kind, std::string_view item, Bits& bits);
  Status ParseDomSpecial(std::string_view item, bool* handled);
  Status ParseDowSpecial(std::string_view item, bool* handled);
  Status ParseHash(FieldKind kind, std::string_view item, Bits& bits);
  Status ParseValue(FieldKind kind, std::string_view text, int* value);
  Status Error(std::string message) const {
    return Status::InvalidArgument("field " + std::to_string(position_) + " (" +
                                   std::string(info_.name) + "): " + std::move(message));
  }
  std::string RangeText() const {
    return std::to_string(info_.min) + "-" + std::to_string(info_.max);
  }
  int DowOf(int raw) const;  // raw value as written -> 0 (Sunday) .. 6

  const CronOptions& options_;
  CronExpr& out_;
  FieldInfo info_{};
  int position_ = 0;
};

int CronParser::DowOf(int raw) const {
  if (options_.dialect == Dialect::kQuartz) return raw - 1;
  return raw % 7;
}

Status CronParser::ParseValue(FieldKind kind, std::string_view text, int* value) {
  if (AllDigits(text)) {
    if (text.size() > 6) return Error(std::string(text) + " is out of range " + RangeText());
    *value = std::stoi(std::string(text));
    if (*value < info_.min || *value > info_.max) {
      return Error(std::string(text) + " is out of range " + RangeText());
    }
    return Status::Ok();
  }
  std::string up = Upper(text);
  if (kind == FieldKind::kMonth) {
    for (int i = 0; i < 12; ++i) {
      if (up == kMonthNames[i]) {
        *value = i + 1;
        return Status::Ok();
      }
    }
    return Error("unknown name \"" + std::string(text) + "\" (expected 1-12 or JAN-DEC)");
  }
  if (kind == FieldKind::kDow) {
    for (int i = 0; i < 7; ++i) {
      if (up == kDayNames[i]) {
        *value = options_.dialect == Dialect::kQuartz ? i + 1 : i;
        return Status::Ok();
      }
    }
    return Error("unknown name \"" + std::string(text) + "\" (expected " + RangeText() +
                 " or SUN-SAT)");
  }
  if (text.empty()) return Error("empty value");
  return Error("\"" + std::string(text) + "\" is not a number in " + RangeText());
}

Status CronParser::ParseHash(FieldKind kind, std::string_view item, Bits& bits) {
  // H, H/n, H(a-b), H(a-b)/n. Days of month hash into 1-28 so every month has the day.
  int lo = info_.min;
  int hi = kind == FieldKind::kDom ? 28 : (kind == FieldKind::kDow ? info_.min + 6 : info_.max);
  std::string_view rest = item.substr(1);
  if (!rest.empty() && rest[0] == '(') {
    size_t close = rest.find(')');
    size_t dash = rest.find('-');
    if (close == std::string_view::npos || dash == std::string_view::npos || dash > close) {
      return Error("\"" + std::string(item) + "\": expected H(a-b)");
    }
    if (Status s = ParseValue(kind, rest.substr(1, dash - 1), &lo); !s.ok()) return s;
    if (Status s = ParseValue(kind, rest.substr(dash + 1, close - dash - 1), &hi); !s.ok())
      return s;
    if (lo > hi)
      return Error("range " + std::to_string(lo) + "-" + std::to_string(hi) + " is reversed");
    rest = rest.substr(close + 1);
  }
  int step = 0;
  if (!rest.empty()) {
    if (rest[0] != '/' || !AllDigits(rest.substr(1)) || rest.size() > 7) {
      return Error("\"" + std::string(item) + "\": expected H, H/n, H(a-b) or H(a-b)/n");
    }
    step = std::stoi(std::string(rest.substr(1)));
    if (step == 0) return Error("step must be at least 1");
    if (step > hi - lo) {
      return Error("step " + std::to_string(step) + " is larger than the field (" +
                   std::to_string(lo) + "-" + std::to_string(hi) + ")");
    }
  }
  uint64_t h = Fnv1a(options_.hash_key, position_);
  int width = hi - lo + 1;
  if (step == 0) {
    bits.Set(lo + static_cast<int>(h % static_cast<uint64_t>(width)));
  } else {
    for (int v = lo + static_cast<int>(h % static_cast<uint64_t>(step)); v <= hi; v += step) {
      bits.Set(v);
    }
  }
  return Status::Ok();
}

Status CronParser::ParseDomSpecial(std::string_view item, bool* handled) {
  *handled = true;
  std::string up = Upper(item);
  CronExpr::DaySpec& d = out_.days_;
  if (up == "L") {
    d.dom_before_last |= 1u;
    return Status::Ok();
  }
  if (up == "LW") {
    d.last_weekday = true;
    return Status::Ok();
  }
  if (up.size() > 2 && up[0] == 'L' && up[1] == '-') {
    std::string_view n = std::string_view(up).substr(2);
    if (!AllDigits(n) || n.size() > 2 || std::stoi(std::string(n)) > 30) {
      return Error("\"" + std::string(item) + "\": expected L-n with n from 0 to 30");
    }
    d.dom_before_last |= 1u << std::stoi(std::string(n));
    return Status::Ok();
  }
  if (up.size() > 1 && up.back() == 'W') {
    int day = 0;
    if (Status s = ParseValue(FieldKind::kDom, std::string_view(up).substr(0, up.size() - 1), &day);
        !s.ok()) {
      return s;
    }
    d.dom_weekday |= 1u << day;
    return Status::Ok();
  }
  *handled = false;
  return Status::Ok();
}

Status CronParser::ParseDowSpecial(std::string_view item, bool* handled) {
  *handled = true;
  std::string up = Upper(item);
  CronExpr::DaySpec& d = out_.days_;
  if (up == "L") {  // Quartz: "L" alone in day-of-week is its last day, Saturday.
    d.dow |= 1u << 6;
    return Status::Ok();
  }
  if (size_t hash = up.find('#'); hash != std::string::npos) {
    int raw = 0;
    if (Status s = ParseValue(FieldKind::kDow, std::string_view(up).substr(0, hash), &raw);
        !s.ok()) {
      return s;
    }
    std::string_view k = std::string_view(up).substr(hash + 1);
    if (k.size() != 1 || k[0] < '1' || k[0] > '5') {
      return Error("\"" + std::string(item) + "\": expected n#k with k from 1 to 5");
    }
    d.dow_nth |= uint64_t{1} << (DowOf(raw) * 5 + (k[0] - '1'));
    return Status::Ok();
  }
  if (up.size() > 1 && up.back() == 'L') {
    int raw = 0;
    if (Status s = ParseValue(FieldKind::kDow, std::string_view(up).substr(0, up.size() - 1), &raw);
        !s.ok()) {
      return s;
    }
    d.dow_last |= static_cast<uint8_t>(1u << DowOf(raw));
    return Status::Ok();
  }
  *handled = false;
  return Status::Ok();
}

Status CronParser::ParseItem(FieldKind kind, std::string_view item, Bits& bits) {
  if (item.empty()) return Error("empty list item");
  if (item[0] == 'H' || item[0] == 'h') {
    if (item.size() == 1 || item[1] == '(' || item[1] == '/') return ParseHash(kind, item, bits);
  }
  if (kind == FieldKind::kDom || kind == FieldKind::kDow) {
    bool handled = false;
    Status s =
        kind == FieldKind::kDom ? ParseDomSpecial(item, &handled) : ParseDowSpecial(item, &handled);
    if (!s.ok() || handled) return s;
  }
  std::string_view range = item;
  int step = 1;
  bool stepped = false;
  if (size_t slash = item.find('/'); slash != std::string_view::npos) {
    std::string_view st = item.substr(slash + 1);
    if (!AllDigits(st)) return Error("step \"" + std::string(st) + "\" is not a number");
    if (st.size() > 6)
      return Error("step " + std::string(st) + " is larger than the field (" + RangeText() + ")");
    step = std::stoi(std::string(st));
    if (step == 0) return Error("step must be at least 1");
    if (step > info_.max - info_.min) {
      return Error("step " + std::to_string(step) + " is larger than the field (" + RangeText() +
                   ")");
    }
    range = item.substr(0, slash);
    stepped = true;
  }
  int lo = info_.min, hi = info_.max;
  if (range == "*") {
    // full range
  } else if (size_t dash = range.find('-'); dash != std::string_view::npos && dash > 0) {
    if (Status s = ParseValue(kind, range.substr(0, dash), &lo); !s.ok()) return s;
    if (Status s = ParseValue(kind, range.substr(dash + 1), &hi); !s.ok()) return s;
    // cronie reads a day-of-week range that ends on Sunday as ending on 7, so "sat-sun",
    // "fri-sun" and "6-0" wrap round to the end of the week. No other range may be reversed.
    const bool cron_dow = kind == FieldKind::kDow && options_.dialect == Dialect::kCron;
    if (lo > hi && cron_dow && hi == 0) hi = 7;
    if (lo > hi) {
      return Error(
          "range " + std::string(range) + " is reversed (write the smaller value first" +
          (cron_dow ? "; only a range that ends on Sunday wraps round, as in sat-sun)" : ")"));
    }
  } else {
    if (Status s = ParseValue(kind, range, &lo); !s.ok()) return s;
    // "5/10" means from 5 to the end of the field in steps of 10; "5" alone is just 5.
    hi = stepped ? info_.max : lo;
  }
  for (int v = lo; v <= hi; v += step) bits.Set(v);
  return Status::Ok();
}

Status CronParser::ParseField(FieldKind kind, int position, std::string_view text) {
  info_ = InfoFor(kind, options_.dialect);
  position_ = position;
  bool is_question = text == "?";
  if (is_question && kind != FieldKind::kDom && kind != FieldKind::kDow) {
    return Error("\"?\" is only allowed in day-of-month and day-of-week");
  }
  Bits bits;
  if (kind == FieldKind::kYear) bits.offset = info_.min;
  if (is_question) {
    for (int v = info_.min; v <= info_.max; ++v) bits.Set(v);
  } else {
    size_t start = 0;
    while (true) {
      size_t comma = text.find(',', start);
      std::string_view item = text.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (Status s = ParseItem(kind, item, bits); !s.ok()) return s;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  // cronie: a day field is "restricted" unless it starts with '*'; '?' means no value.
  bool restricted = !is_question && text[0] != '*';
  switch (kind) {
    case FieldKind::kSecond: out_.seconds_ = bits.w[0]; break;
    case FieldKind::kMinute: out_.minutes_ = bits.w[0]; break;
    case FieldKind::kHour: out_.hours_ = static_cast<uint32_t>(bits.w[0]); break;
    case FieldKind::kMonth: out_.months_ = static_cast<uint16_t>(bits.w[0]); break;
    case FieldKind::kDom:
      out_.days_.dom = static_cast<uint32_t>(bits.w[0]);
      out_.days_.dom_restricted = restricted;
      break;
    case FieldKind::kDow:
      for (int v = info_.min; v <= info_.max; ++v) {
        if (bits.Test(v)) out_.days_.dow |= static_cast<uint8_t>(1u << DowOf(v));
      }
      out_.days_.dow_restricted = restricted;
      break;
    case FieldKind::kYear:
      out_.years_ = bits.w;
      out_.has_years_ = true;
      break;
  }
  return Status::Ok();
}

Status CronParser::ParseAll(std::string_view expr) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < expr.size()) {
    while (i < expr.size() && (expr[i] == ' ' || expr[i] == '\t')) ++i;
    if (i >= expr.size()) break;
    size_t j = i;
    while (j < expr.size() && expr[j] != ' ' && expr[j] != '\t') ++j;
    fields.push_back(expr.substr(i, j - i));
    i = j;
  }
  bool quartz = options_.dialect == Dialect::kQuartz;
  size_t n = fields.size();
  if (quartz ? (n != 6 && n != 7) : (n != 5 && n != 6)) {
    return Status::InvalidArgument(
        std::string("expected ") +
        (quartz ? "6 fields (sec min hour dom month dow) or 7 (plus year)"
                : "5 fields (min hour dom month dow) or 6 (seconds first)") +
        ", got " + std::to_string(n));
  }
  std::vector<FieldKind> kinds;
  if (n == 5) {
    kinds = {FieldKind::kMinute, FieldKind::kHour, FieldKind::kDom, FieldKind::kMonth,
             FieldKind::kDow};
    out_.seconds_ = 1;  // second 0
  } else {
    kinds = {FieldKind::kSecond, FieldKind::kMinute, FieldKind::kHour,
             FieldKind::kDom,    FieldKind::kMonth,  FieldKind::kDow};
    if (n == 7) kinds.push_back(FieldKind::kYear);
  }
  for (size_t k = 0; k < n; ++k) {
    if (Status s = ParseField(kinds[k], static_cast<int>(k + 1), fields[k]); !s.ok()) return s;
  }
  size_t minute_at = n == 5 ? 0 : 1;
  out_.wildcard_ = fields[minute_at][0] == '*' || fields[minute_at + 1][0] == '*';
  if (quartz) {
    bool dom_q = fields[minute_at + 2] == "?";
    bool dow_q = fields[minute_at + 4] == "?";
    if (dom_q == dow_q) {
      return Status::InvalidArgument("quartz dialect: exactly one of day-of-month (field " +
                                     std::to_string(minute_at + 3) + ") and day-of-week (field " +
                                     std::to_string(minute_at + 5) + ") must be \"?\"");
    }
  }
  return Status::Ok();
}

Result<CronExpr> CronExpr::Parse(std::string_view expr, const CronOptions& options) {
  CronExpr out;
  CronParser parser(options, out);
  if (Status s = parser.ParseAll(expr); !s.ok()) return s;
  return out;
}

uint32_t CronExpr::DayMask(int year, unsigned month) const {
  const int dim = DaysInMonth(year, month);
  const uint32_t all = (dim == 32 ? ~0u : (1u << dim) - 1);
  const date::sys_days first = date::year{year} / date::month{month} / date::day{1};
  const int wd1 = static_cast<int>(date::weekday(first).c_encoding());
  auto weekday_of = [wd1](int day) { return (wd1 + day - 1) % 7; };
  // First day (1-7) of the month that falls on weekday w.
  auto first_on = [wd1](int w) { return (w - wd1 + 7) % 7 + 1; };

  uint32_t dom = (days_.dom >> 1) & all;
  for (uint32_t b = days_.dom_before_last; b != 0; b &= b - 1) {
    int day = dim - std::countr_zero(b);
    if (day >= 1) dom |= 1u << (day - 1);
  }
  if (days_.last_weekday) {
    int day = dim;
    while (weekday_of(day) == 0 || weekday_of(day) == 6) --day;
    dom |= 1u << (day - 1);
  }
  for (uint32_t b = days_.dom_weekday; b != 0; b &= b - 1) {
    int day = std::countr_zero(b);
    if (day > dim) continue;
    int w = weekday_of(day);
    // Nearest weekday without leaving the month (Quartz's W).
    if (w == 6)
      day = day == 1 ? day + 2 : day - 1;
    else if (w == 0)
      day = day == dim ? day - 2 : day + 1;
    dom |= 1u << (day - 1);
  }

  uint32_t dow = 0;
  for (int w = 0; w < 7; ++w) {
    int first_day = first_on(w);
    if ((days_.dow >> w) & 1) {
      for (int day = first_day; day <= dim; day += 7) dow |= 1u << (day - 1);
    }
    if ((days_.dow_last >> w) & 1) {
      dow |= 1u << (first_day + 7 * ((dim - first_day) / 7) - 1);
    }
    for (int k = 0; k < 5; ++k) {
      if ((days_.dow_nth >> (w * 5 + k)) & 1) {
        int day = first_day + 7 * k;
        if (day <= dim) dow |= 1u << (day - 1);
      }
    }
  }
  if (days_.dom_restricted && days_.dow_restricted) return dom | dow;
  return dom & dow;
}

bool CronExpr::YearAllowed(int year) const {
  if (!has_years_) return true;
  if (year < 1970 || year > 2199) return false;
  int i = year - 1970;
  return (years_[i / 64] >> (i % 64)) & 1;
}

std::optional<int64_t> CronExpr::NextAtOrAfter(int64_t civil_s) const {
  constexpr int64_t kDay = 86400;
  int64_t days = civil_s >= 0 ? civil_s / kDay : (civil_s - kDay + 1) / kDay;
  int64_t sod = civil_s - days * kDay;
  date::year_month_day ymd{date::sys_days{date::days{days}}};
  int year = static_cast<int>(ymd.year());
  unsigned month = static_cast<unsigned>(ymd.month());
  int day = static_cast<int>(static_cast<unsigned>(ymd.day()));
  int hour = static_cast<int>(sod / 3600), minute = static_cast<int>(sod / 60 % 60),
      second = static_cast<int>(sod % 60);
  // Without a year field every schedule repeats within 400 years (the Gregorian cycle), so
  // searching further can only confirm that it never matches.
  const int horizon = has_years_ ? 2199 : year + 400;

  while (year <= horizon) {
    if (!YearAllowed(year)) {
      ++year, month = 1, day = 1, hour = minute = second = 0;
      continue;
    }
    int m = NextBit(months_, static_cast<int>(month));
    if (m < 0) {
      ++year, month = 1, day = 1, hour = minute = second = 0;
      continue;
    }
    if (static_cast<unsigned>(m) != month) month = m, day = 1, hour = minute = second = 0;
    int d = NextBit(DayMask(year, month), day - 1);
    if (d < 0) {
      if (++month > 12) ++year, month = 1;
      day = 1, hour = minute = second = 0;
      continue;
    }
    if (d + 1 != day) day = d + 1, hour = minute = second = 0;
    int h = NextBit(hours_, hour);
    if (h < 0) {
      ++day, hour = minute = second = 0;
      continue;
    }
    if (h != hour) hour = h, minute = second = 0;
    int mi = NextBit(minutes_, minute);
    if (mi < 0) {
      ++hour, minute = second = 0;
      continue;
    }
    if (mi != minute) minute = mi, second = 0;
    int s = NextBit(seconds_, second);
    if (s < 0) {
      ++minute, second = 0;
      continue;
    }
    const date::sys_days at = date::year{year} / date::month{month} / date::day{unsigned(day)};
    return at.time_since_epoch().count() * kDay + hour * 3600 + mi * 60 + s;
  }
  return std::nullopt;
}

}  // namespace jobctl
