// Text for a terminal: its width, and word wrapping for help and notes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace caliber::core {

// The width to wrap to: COLUMNS when it holds a number, else the width of the terminal on
// standard output, else 100; kept within 60..200 so a stray value cannot make help unreadable.
[[nodiscard]] std::size_t terminal_columns();
// `columns_env` (COLUMNS's value or nullptr) and `tty_columns` (0: not a terminal) decide.
[[nodiscard]] std::size_t terminal_columns(const char* columns_env, std::size_t tty_columns);

// Wraps `text` to lines of at most `width` characters (a word longer than that stays whole).
// A line break followed by a space, or a blank line, is kept (an indented fact line, a new
// paragraph); any other line break is a space (a help string broken by hand for 80 columns).
// Continuation lines keep the indent of the line they continue.
[[nodiscard]] std::string wrap_text(std::string_view text, std::size_t width);

// `text` with every control character but the line break and the tab (ESC, BEL, CR, DEL, the C1
// controls U+0080..U+009F) shown as '?': an op name or a note read from a run.log cannot move the
// cursor, retitle the terminal or hide a line when printed.
[[nodiscard]] std::string terminal_safe(std::string text);

}  // namespace caliber::core
