#include "core/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace caliber::core {

std::size_t terminal_columns(const char* columns_env, std::size_t tty_columns) {
  std::size_t w = 100;
  char* end = nullptr;
  const long env = columns_env != nullptr ? std::strtol(columns_env, &end, 10) : 0;
  if (columns_env != nullptr && end != columns_env && *end == '\0' && env > 0)
    w = static_cast<std::size_t>(env);
  else if (tty_columns > 0)
    w = tty_columns;
  return std::clamp<std::size_t>(w, 60, 200);
}

std::size_t terminal_columns() {
  struct winsize ws {};
  std::size_t tty = 0;
  if (::isatty(STDOUT_FILENO) == 1 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) tty = ws.ws_col;
  return terminal_columns(std::getenv("COLUMNS"), tty);
}

std::string wrap_text(std::string_view text, std::size_t width) {
  // Split into logical lines: a '\n' is hard when the next line is indented or empty.
  std::vector<std::string> lines;
  std::string cur;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '\n') {
      cur += c;
      continue;
    }
    const bool hard =
        i + 1 >= text.size() || text[i + 1] == ' ' || text[i + 1] == '\n' || cur.empty();
    if (hard) {
      lines.push_back(cur);
      cur.clear();
    } else if (!cur.empty() && cur.back() != ' ') {
      cur += ' ';
    }
  }
  lines.push_back(cur);
  if (!text.empty() && text.back() == '\n') lines.pop_back();

  std::string out;
  for (std::size_t li = 0; li < lines.size(); ++li) {
    const std::string& line = lines[li];
    const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
    const std::string pad(indent, ' ');
    std::string row = pad;
    bool row_has_word = false;
    // Words are split at spaces; a word too long for a line (a comma list without spaces) may
    // also break after its commas.
    std::vector<std::pair<std::string, bool>> tokens;  // (text, glued to the previous token)
    std::size_t p = indent;
    while (p < line.size()) {
      const std::size_t e = std::min(line.find(' ', p), line.size());
      const std::string word = line.substr(p, e - p);
      p = e + 1;
      if (word.empty()) continue;
      if (indent + word.size() <= width) {
        tokens.emplace_back(word, false);
        continue;
      }
      std::size_t q = 0;
      bool first = true;
      while (q < word.size()) {
        const std::size_t c = word.find(',', q);
        const std::size_t end = c == std::string::npos ? word.size() : c + 1;
        tokens.emplace_back(word.substr(q, end - q), !first);
        first = false;
        q = end;
      }
    }
    for (const auto& [word, glued] : tokens) {
      const std::size_t need = (row_has_word && !glued ? 1 : 0) + word.size();
      if (row_has_word && row.size() + need > width) {
        out += row + "\n";
        row = pad;
        row_has_word = false;
      } else if (row_has_word && !glued) {
        row += ' ';
      }
      row += word;
      row_has_word = true;
    }
    out += row;
    if (li + 1 < lines.size()) out += "\n";
  }
  if (!text.empty() && text.back() == '\n') out += "\n";
  return out;
}

std::string terminal_safe(std::string text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      text[i] = '?';
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      text.replace(i, 2, "?");  // a C1 control in UTF-8 (0xc2 0x9b is a CSI)
    }
  }
  return text;
}

}  // namespace caliber::core
