package bootsim

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// This file ports the parts of systemd's string handling that decide what a unit's settings mean:
// word splitting with quotes and C escapes (src/basic/extract-word.c, escape.c), specifiers
// (src/shared/specifier.c), and environment variable expansion in command lines
// (src/basic/env-util.c). The behaviour, including its corner cases, follows systemd; the comments
// name the function each piece mirrors.

// extractFlags mirror the ExtractFlags of extract_first_word() that units use.
type extractFlags uint

const (
	extractUnquote        extractFlags = 1 << iota // EXTRACT_UNQUOTE: '…' and "…" group and are removed
	extractCUnescape                               // EXTRACT_CUNESCAPE: \n, \x41, \s, … are decoded
	extractCUnescapeRelax                          // EXTRACT_CUNESCAPE_RELAX: unknown escapes are kept verbatim
	extractRelax                                   // EXTRACT_RELAX: unbalanced quotes and a trailing \ end the word
	extractRetainEscape                            // EXTRACT_RETAIN_ESCAPE: backslashes are ordinary characters
)

// whitespace is systemd's WHITESPACE, the default word separators.
const whitespace = " \t\n\r"

var (
	errUnbalancedQuotes = errors.New("unbalanced quoting")
	errBadEscape        = errors.New("invalid escape sequence")
)

func isWhitespace(c byte) bool { return strings.IndexByte(whitespace, c) >= 0 }

// extractFirstWord returns the first word of s and what follows it, like extract_first_word()
// with whitespace separators; found is false when s holds no word.
func extractFirstWord(s string, flags extractFlags) (word, rest string, found bool, err error) {
	i := 0
	for i < len(s) && isWhitespace(s[i]) {
		i++
	}
	if i == len(s) {
		return "", "", false, nil
	}
	var b strings.Builder
	var quote byte
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\' && flags&extractRetainEscape == 0:
			i++
			if i == len(s) {
				// A trailing backslash: kept when relaxed (and unquoted), an error otherwise.
				if flags&extractCUnescapeRelax != 0 && (quote == 0 || flags&extractRelax != 0) {
					b.WriteByte('\\')
					return b.String(), "", true, nil
				}
				if flags&extractRelax != 0 {
					return b.String(), "", true, nil
				}
				return "", "", false, errBadEscape
			}
			if flags&extractCUnescape == 0 {
				b.WriteByte(s[i])
				i++
				continue
			}
			r, n, eightBit, ok := cunescapeOne(s[i:])
			switch {
			case !ok && flags&extractCUnescapeRelax != 0:
				b.WriteByte('\\')
				b.WriteByte(s[i])
				i++
			case !ok:
				return "", "", false, errBadEscape
			case eightBit:
				b.WriteByte(byte(r))
				i += n
			default:
				b.WriteRune(r)
				i += n
			}
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				b.WriteByte(c)
			}
			i++
		case (c == '\'' || c == '"') && flags&extractUnquote != 0:
			quote = c
			i++
		case isWhitespace(c):
			for i < len(s) && isWhitespace(s[i]) {
				i++
			}
			return b.String(), s[i:], true, nil
		default:
			b.WriteByte(c)
			i++
		}
	}
	if quote != 0 && flags&extractRelax == 0 {
		return "", "", false, errUnbalancedQuotes
	}
	return b.String(), "", true, nil
}

// extractFirstWordAndWarn is extract_first_word_and_warn(): a word with unknown escape sequences
// is read again with them kept verbatim, and systemd logs a warning.
func extractFirstWordAndWarn(s string, flags extractFlags) (word, rest string, found bool, warning string, err error) {
	word, rest, found, err = extractFirstWord(s, flags)
	if err == nil || flags&extractCUnescapeRelax != 0 {
		return word, rest, found, "", err
	}
	word, rest, found, err = extractFirstWord(s, flags|extractCUnescapeRelax)
	if err != nil {
		return "", "", false, "", err
	}
	return word, rest, found, fmt.Sprintf("ignoring unknown escape sequences: %q", word), nil
}

// cunescapeOne decodes the escape sequence after a backslash at the start of s, like
// cunescape_one(): the code point, how many bytes of s it used, whether it is a raw byte (\x, octal)
// rather than a code point to encode as UTF-8, and whether it is a valid escape at all.
func cunescapeOne(s string) (r rune, n int, eightBit, ok bool) {
	simple := map[byte]rune{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v',
		'\\': '\\', '"': '"', '\'': '\'', 's': ' '}
	if v, found := simple[s[0]]; found {
		return v, 1, false, true
	}
	switch c := s[0]; {
	case c == 'x':
		v, good := parseDigits(s[1:], 2, 16)
		if !good || v == 0 { // NUL bytes are refused
			return 0, 0, false, false
		}
		return v, 3, true, true
	case c == 'u' || c == 'U':
		width := 4
		if c == 'U' {
			width = 8
		}
		v, good := parseDigits(s[1:], width, 16)
		if !good || v == 0 || !unicharIsValid(v) {
			return 0, 0, false, false
		}
		return v, width + 1, false, true
	case c >= '0' && c <= '7':
		v, good := parseDigits(s, 3, 8)
		if !good || v == 0 || v > 0o377 {
			return 0, 0, false, false
		}
		return v, 3, true, true
	}
	return 0, 0, false, false
}

// parseDigits reads exactly width digits of base at the start of s.
func parseDigits(s string, width int, base rune) (rune, bool) {
	if len(s) < width {
		return 0, false
	}
	var v rune
	for i := 0; i < width; i++ {
		var d rune
		switch c := rune(s[i]); {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
	}
	return v, true
}

// expandSpecifiers resolves %-specifiers. Only "%%" is simulated: the others stand for facts about
// the machine and the unit (%H, %n, %m, …) that a simulation would have to invent.
func expandSpecifiers(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		spec := s[i:]
		if len(spec) > 2 {
			spec = spec[:2]
		}
		return "", notSimulated("the specifier %q in %q (only %%%% is)", spec, s)
	}
	return b.String(), nil
}

// envNameValid is env_name_is_valid(): letters, digits and underscores, not starting with a digit.
func envNameValid(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// envAssignmentValid is env_assignment_is_valid(): NAME=VALUE with a valid name and UTF-8 value.
func envAssignmentValid(kv string) bool {
	name, value, ok := strings.Cut(kv, "=")
	return ok && envNameValid(name) && utf8Valid(value)
}

// utf8Valid is utf8_is_valid(): valid UTF-8 made of valid code points (unichar_is_valid()), which
// excludes the noncharacters U+FDD0…U+FDEF and U+xFFFE/U+xFFFF that Go accepts.
func utf8Valid(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicharIsValid(r) {
			return false
		}
	}
	return true
}

func unicharIsValid(r rune) bool {
	return utf8.ValidRune(r) && !(r >= 0xfdd0 && r <= 0xfdef) && r&0xfffe != 0xfffe
}

// envLookup returns the value of name in env (KEY=VALUE entries, the last one wins).
func envLookup(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, _ := strings.Cut(env[i], "="); k == name {
			return v, true
		}
	}
	return "", false
}

// replaceEnvArgv is replace_env_argv(): a word that is exactly $NAME is replaced by the value of
// NAME split at whitespace (quotes in the value group words; an unset variable, or an invalid
// name, removes the word); elsewhere ${NAME} is replaced by the value as is and $$ by $.
func replaceEnvArgv(argv, env []string) []string {
	out := make([]string, 0, len(argv))
	for _, w := range argv {
		if strings.HasPrefix(w, "$") && !strings.HasPrefix(w, "${") && !strings.HasPrefix(w, "$$") {
			name := w[1:]
			if !envNameValid(name) {
				continue
			}
			if v, ok := envLookup(env, name); ok {
				out = append(out, splitRelaxUnquote(v)...)
			}
			continue
		}
		out = append(out, replaceEnv(w, env))
	}
	return out
}

// splitRelaxUnquote is strv_split_full(…, WHITESPACE, EXTRACT_RELAX|EXTRACT_UNQUOTE).
func splitRelaxUnquote(s string) []string {
	var words []string
	for {
		w, rest, found, err := extractFirstWord(s, extractRelax|extractUnquote)
		if err != nil || !found {
			return words
		}
		words = append(words, w)
		s = rest
	}
}

// replaceEnv is replace_env_full() without its optional extensions: ${NAME} expands (to "" when
// unset or invalid), $$ is $, and anything else, including $NAME and ${NAME:-default}, stays as
// written.
func replaceEnv(format string, env []string) string {
	const (
		word = iota
		curly
		variable
	)
	state, start := word, 0
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch state {
		case word:
			if c == '$' {
				state = curly
			}
		case curly:
			switch c {
			case '{':
				b.WriteString(format[start : i-1])
				start, state = i-1, variable
			case '$':
				b.WriteString(format[start:i])
				start, state = i+1, word
			default:
				state = word
			}
		case variable:
			switch c {
			case '}':
				if name := format[start+2 : i]; envNameValid(name) {
					v, _ := envLookup(env, name)
					b.WriteString(v)
				}
				start, state = i+1, word
			case ':':
				state = word // ${NAME:-…} is not expanded without REPLACE_ENV_ALLOW_EXTENDED
			}
		}
	}
	b.WriteString(format[start:])
	return b.String()
}

// parseBoolean is parse_boolean().
func parseBoolean(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "1", "yes", "y", "true", "t", "on":
		return true, true
	case "0", "no", "n", "false", "f", "off":
		return false, true
	}
	return false, false
}

// Path checks of src/basic/path-util.c and string-util.c.

const (
	pathMax = 4096
	nameMax = 255
)

// stringIsSafe is string_is_safe(): no control characters, quotes, backslashes or DEL.
func stringIsSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == '"' || c == '\'' || c == '\\' || c == 0x7f {
			return false
		}
	}
	return true
}

// filenameIsValid is filename_is_valid().
func filenameIsValid(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.Contains(s, "/") && len(s) <= nameMax
}

// pathIsValid is path_is_valid(): not empty, shorter than PATH_MAX, no component longer than NAME_MAX.
func pathIsValid(s string) bool {
	if s == "" || len(s) >= pathMax {
		return false
	}
	for _, c := range strings.Split(s, "/") {
		if len(c) > nameMax {
			return false
		}
	}
	return true
}

// pathSimplify is path_simplify(): it drops duplicate slashes and "." components but, unlike
// path.Clean, keeps "..".
func pathSimplify(p string) string {
	var parts []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			parts = append(parts, c)
		}
	}
	if strings.HasPrefix(p, "/") {
		return "/" + strings.Join(parts, "/")
	}
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}
