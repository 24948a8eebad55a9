#include "json_line.h"

#include <fmt/format.h>

#include "trace_try.h"

namespace coll::trace {

const char* jsonKindName(JsonKind k) {
  switch (k) {
    case JsonKind::String: return "a string";
    case JsonKind::Int: return "an integer";
    case JsonKind::Number: return "a number that is not a 64-bit integer";
    case JsonKind::Bool: return "true or false";
    case JsonKind::Null: return "null";
    case JsonKind::Object: return "an object";
    case JsonKind::Array: return "an array";
  }
  return "?";
}

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void appendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), 0 if it is not one.
size_t utf8Length(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned c = at(0);
  unsigned lo = 0x80, hi = 0xBF;  // the second byte's range
  size_t len = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (at(1) < lo || at(1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if (at(k) < 0x80 || at(k) > 0xBF) return 0;
  return len;
}

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  Result<std::vector<JsonMember>> object() {
    std::vector<JsonMember> members;
    ws();
    if (i_ >= s_.size()) return fail("empty line: expected an object");
    if (s_[i_] != '{') return fail(fmt::format("expected '{{' to start an object, found {}", here()));
    ++i_;
    ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
    } else {
      while (true) {
        ws();
        if (i_ >= s_.size() || s_[i_] != '"')
          return fail(fmt::format("expected a member name in quotes, found {}", here()));
        JsonMember m;
        TRACE_TRY(string(&m.key));
        ws();
        if (i_ >= s_.size() || s_[i_] != ':')
          return fail(fmt::format("expected ':' after member \"{}\", found {}", m.key, here()));
        ++i_;
        ws();
        TRACE_TRY(value(&m));
        members.push_back(std::move(m));
        ws();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == '}') {
          ++i_;
          break;
        }
        return fail(fmt::format("expected ',' or '}}' after a member, found {}", here()));
      }
    }
    ws();
    if (i_ != s_.size()) return fail(fmt::format("{} after the object", here()));
    return members;
  }

 private:
  Status fail(const std::string& what) const { return failAt(i_, what); }
  static Status failAt(size_t pos, const std::string& what) {
    return makeError(collInvalidArgument, "column {}: {}", pos + 1, what);
  }

  // What is at the cursor, for a message.
  std::string here() const {
    if (i_ >= s_.size()) return "the end of the line";
    const auto c = static_cast<unsigned char>(s_[i_]);
    if (c >= 0x20 && c < 0x7F) return fmt::format("'{}'", static_cast<char>(c));
    return fmt::format("byte 0x{:02x}", c);
  }

  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) ++i_;
  }

  // A member's value; nested objects and arrays are checked and skipped.
  Status value(JsonMember* m) {
    if (i_ >= s_.size()) return fail("expected a value, found the end of the line");
    const char c = s_[i_];
    if (c == '"') {
      m->kind = JsonKind::String;
      return string(&m->text);
    }
    if (c == '-' || isDigit(c)) return number(m);
    if (c == '{' || c == '[') {
      m->kind = c == '{' ? JsonKind::Object : JsonKind::Array;
      return nested();
    }
    return literal(&m->kind);
  }

  Status literal(JsonKind* kind) {
    for (const auto& [word, k] : {std::pair{std::string_view("true"), JsonKind::Bool},
                                  std::pair{std::string_view("false"), JsonKind::Bool},
                                  std::pair{std::string_view("null"), JsonKind::Null}}) {
      if (s_.substr(i_, word.size()) == word) {
        i_ += word.size();
        *kind = k;
        return Status::ok();
      }
    }
    return fail(fmt::format("expected a value, found {}", here()));
  }

  // JSON's number grammar; an integer that fits int64_t is kept as Int.
  Status number(JsonMember* m) {
    const bool negative = s_[i_] == '-';
    if (negative) ++i_;
    if (i_ >= s_.size() || !isDigit(s_[i_])) return fail(fmt::format("expected a digit, found {}", here()));
    const size_t digits = i_;
    if (s_[i_] == '0') {
      ++i_;
      if (i_ < s_.size() && isDigit(s_[i_])) return fail("a number may not start with 0");
    } else {
      while (i_ < s_.size() && isDigit(s_[i_])) ++i_;
    }
    const size_t digitsEnd = i_;
    bool integer = true;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (i_ >= s_.size() || !isDigit(s_[i_])) return fail(fmt::format("expected a digit after '.', found {}", here()));
      while (i_ < s_.size() && isDigit(s_[i_])) ++i_;
      integer = false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ >= s_.size() || !isDigit(s_[i_])) return fail(fmt::format("expected an exponent, found {}", here()));
      while (i_ < s_.size() && isDigit(s_[i_])) ++i_;
      integer = false;
    }
    m->kind = JsonKind::Number;
    if (!integer) return Status::ok();
    // |value| <= 2^63 - 1, or 2^63 when negative.
    const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
    uint64_t v = 0;
    for (size_t k = digits; k < digitsEnd; ++k) {
      const auto d = static_cast<uint64_t>(s_[k] - '0');
      if (v > (limit - d) / 10) return Status::ok();  // too large: a Number
      v = v * 10 + d;
    }
    m->kind = JsonKind::Int;
    m->integer = !negative ? static_cast<int64_t>(v) : v == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(v);
    return Status::ok();
  }

  // Four hex digits at s_[at..at+4), or -1.
  int32_t hex4(size_t at) const {
    if (at + 4 > s_.size()) return -1;
    int32_t v = 0;
    for (size_t k = at; k < at + 4; ++k) {
      const int h = hexValue(s_[k]);
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    return v;
  }

  // The string at the cursor (at its '"'), decoded.
  Status string(std::string* out) {
    const size_t start = i_;
    ++i_;
    out->clear();
    while (true) {
      if (i_ >= s_.size()) return failAt(start, "string not closed before the end of the line");
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return Status::ok();
      }
      if (c == '\\') {
        TRACE_TRY(escape(out));
      } else if (c < 0x20) {
        return fail(fmt::format("control character 0x{:02x} in a string (JSON writes it as \\u{:04x})", c, c));
      } else if (c < 0x80) {
        out->push_back(static_cast<char>(c));
        ++i_;
      } else {
        const size_t len = utf8Length(s_, i_);
        if (len == 0) return fail(fmt::format("invalid UTF-8 (byte 0x{:02x}) in a string", c));
        out->append(s_.substr(i_, len));
        i_ += len;
      }
    }
  }

  Status escape(std::string* out) {
    if (i_ + 1 >= s_.size()) return fail("'\\' at the end of the line");
    const char e = s_[i_ + 1];
    const char* simple = nullptr;
    switch (e) {
      case '"': simple = "\""; break;
      case '\\': simple = "\\"; break;
      case '/': simple = "/"; break;
      case 'b': simple = "\b"; break;
      case 'f': simple = "\f"; break;
      case 'n': simple = "\n"; break;
      case 'r': simple = "\r"; break;
      case 't': simple = "\t"; break;
      case 'u': break;
      default:
        ++i_;
        return fail(fmt::format("unknown escape: '\\' followed by {}", here()));
    }
    if (simple) {
      out->push_back(*simple);
      i_ += 2;
      return Status::ok();
    }
    const int32_t u = hex4(i_ + 2);
    if (u < 0) return fail("'\\u' needs four hex digits");
    if (u >= 0xDC00 && u <= 0xDFFF) return fail(fmt::format("lone low surrogate \\u{:04x}", u));
    if (u >= 0xD800 && u <= 0xDBFF) {
      // A high surrogate must be followed by an escaped low one.
      const int32_t lo = s_.substr(i_ + 6, 2) == "\\u" ? hex4(i_ + 8) : -1;
      if (lo < 0xDC00 || lo > 0xDFFF) return fail(fmt::format("high surrogate \\u{:04x} without a low one after it", u));
      appendUtf8(out, 0x10000 + ((static_cast<uint32_t>(u) - 0xD800) << 10) + (static_cast<uint32_t>(lo) - 0xDC00));
      i_ += 12;
      return Status::ok();
    }
    appendUtf8(out, static_cast<uint32_t>(u));
    i_ += 6;
    return Status::ok();
  }

  // A nested object or array (the cursor on its '{' or '['), checked and
  // skipped with an explicit stack.
  Status nested() {
    enum class Want { FirstOrClose, Key, Value, CommaOrClose };
    std::vector<char> closers;  // what closes each open container
    std::string scratch;
    Want want = Want::Value;
    while (true) {
      ws();
      if (want == Want::CommaOrClose && closers.empty()) return Status::ok();
      if (i_ >= s_.size()) return fail("the line ends inside a nested object or array");
      const char c = s_[i_];
      switch (want) {
        case Want::FirstOrClose:
          if (c == closers.back()) {
            ++i_;
            closers.pop_back();
            want = Want::CommaOrClose;
          } else {
            want = closers.back() == '}' ? Want::Key : Want::Value;
          }
          break;
        case Want::Key:
          if (c != '"') return fail(fmt::format("expected a member name in quotes, found {}", here()));
          TRACE_TRY(string(&scratch));
          ws();
          if (i_ >= s_.size() || s_[i_] != ':') return fail(fmt::format("expected ':', found {}", here()));
          ++i_;
          want = Want::Value;
          break;
        case Want::Value:
          if (c == '{' || c == '[') {
            // The line's own object is one level.
            if (closers.size() + 2 > kMaxJsonDepth)
              return fail(fmt::format("objects and arrays nested deeper than {} levels", kMaxJsonDepth));
            closers.push_back(c == '{' ? '}' : ']');
            ++i_;
            want = Want::FirstOrClose;
          } else if (c == '"') {
            TRACE_TRY(string(&scratch));
            want = Want::CommaOrClose;
          } else {
            JsonMember ignored;
            if (c == '-' || isDigit(c)) {
              TRACE_TRY(number(&ignored));
            } else {
              TRACE_TRY(literal(&ignored.kind));
            }
            want = Want::CommaOrClose;
          }
          break;
        case Want::CommaOrClose:
          if (c == ',') {
            ++i_;
            want = closers.back() == '}' ? Want::Key : Want::Value;
          } else if (c == closers.back()) {
            ++i_;
            closers.pop_back();
          } else {
            return fail(fmt::format("expected ',' or '{}', found {}", closers.back(), here()));
          }
          break;
      }
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

Result<std::vector<JsonMember>> parseJsonLine(std::string_view line) { return Reader(line).object(); }

std::string jsonQuote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace coll::trace
