package guard

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// invisible reports whether r is shown as nothing but read by a model:
// format characters (Unicode Cf: zero-width, bidi controls, the U+E0000
// tag block), except a zero-width joiner or non-joiner beside a letter or
// symbol outside ASCII (emoji sequences, Persian, Indic scripts).
func invisible(s string, i int, r rune) bool {
	if !unicode.Is(unicode.Cf, r) {
		return false
	}
	if r == 0x200C || r == 0x200D {
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
		return before < 0x80 && after < 0x80
	}
	return true
}

// Invisible is the invisible characters of s, each as U+XXXX, and s
// without them; none and s itself when it has none.
func Invisible(s string) (found []string, clean string) {
	if isASCII(s) {
		return nil, s
	}
	var b strings.Builder
	for i, r := range s {
		if invisible(s, i, r) {
			if len(found) < 8 {
				found = append(found, runeName(r))
			}
			continue
		}
		b.WriteRune(r)
	}
	if found == nil {
		return nil, s
	}
	return found, b.String()
}

func runeName(r rune) string {
	const digits = "0123456789ABCDEF"
	out := []byte("U+")
	n := 4
	if r > 0xFFFF {
		n = 5
	}
	for i := n - 1; i >= 0; i-- {
		out = append(out, digits[(r>>(4*i))&0xF])
	}
	return string(out)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// confusables maps letters that look like Latin ones to them: the
// Cyrillic and Greek homoglyphs an attacker spells "SYSTEM" or "ignore"
// with to pass a filter reading bytes.
var confusables = strings.NewReplacer(
	"а", "a", "в", "b", "е", "e", "к", "k", "м", "m", "н", "h", "о", "o", "р", "p", "с", "c", "т", "t", "у", "y", "х", "x",
	"ѕ", "s", "і", "i", "ј", "j", "ԁ", "d", "ɡ", "g", "ӏ", "l", "ԛ", "q", "ԝ", "w", "ү", "y", "һ", "h",
	"А", "a", "В", "b", "Е", "e", "К", "k", "М", "m", "Н", "h", "О", "o", "Р", "p", "С", "c", "Т", "t", "У", "y", "Х", "x",
	"Ѕ", "s", "І", "i", "Ј", "j",
	"α", "a", "ε", "e", "ι", "i", "κ", "k", "ν", "v", "ο", "o", "ρ", "p", "τ", "t", "υ", "u", "χ", "x", "ω", "w",
	"Α", "a", "Β", "b", "Ε", "e", "Ζ", "z", "Η", "h", "Ι", "i", "Κ", "k", "Μ", "m", "Ν", "n", "Ο", "o", "Ρ", "p", "Τ", "t", "Υ", "y", "Χ", "x",
	"ı", "i",
)

// Fold is s as a model reads it, for matching: NFKC (fullwidth and
// mathematical letters become plain), confusable letters folded to Latin,
// invisible characters removed, lower case, runs of white space one space.
func Fold(s string) string {
	if !isASCII(s) {
		_, s = Invisible(s)
		s = strings.ToLower(confusables.Replace(norm.NFKC.String(s)))
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		}
		space = false
		b.WriteByte(c)
	}
	return b.String()
}

// maxDecoded bounds what the decode pass reads of one text.
const maxDecoded = 64 << 10

// minEncodedRun is the shortest run of base64 or hex the decode pass
// reads: shorter ones are words and ids.
const minEncodedRun = 24

// Decoded is the text hidden in s as base64, hex or URL escapes: each run
// that decodes to readable text, decoded (one level). Empty when none.
// One pass over s: runs are found by their alphabets, not a regexp.
func Decoded(s string) []string {
	var out []string
	budget := maxDecoded
	add := func(b []byte) {
		if len(b) >= 8 && budget > 0 && readable(b) {
			budget -= len(b)
			out = append(out, string(b))
		}
	}
	for i := 0; i < len(s) && len(out) < 32; {
		if !isBase64Byte(s[i]) {
			i++
			continue
		}
		j, hexOnly := i, true
		for j < len(s) && isBase64Byte(s[j]) {
			hexOnly = hexOnly && isHexByte(s[j])
			j++
		}
		for j < len(s) && j-i < 2048 && s[j] == '=' {
			j++
		}
		if run := s[i:j]; len(run) >= minEncodedRun {
			if hexOnly && len(run)%2 == 0 {
				if b, err := hex.DecodeString(run); err == nil {
					add(b)
				}
			} else {
				for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
					if b, err := enc.DecodeString(run); err == nil {
						add(b)
						break
					}
				}
			}
		}
		i = j
	}
	if strings.Contains(s, "%") {
		for _, run := range escapedRuns(s) {
			if u, err := url.QueryUnescape(run); err == nil {
				add([]byte(u))
			}
		}
	}
	return out
}

func isBase64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-'
}

func isHexByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// escapedRuns are the runs of s with at least six %XX escapes, each at
// most three other bytes from the next (URL-encoded text).
func escapedRuns(s string) []string {
	var out []string
	for i := 0; i < len(s) && len(out) < 32; i++ {
		if s[i] != '%' {
			continue
		}
		j, n := i, 0
		for j+2 < len(s) && s[j] == '%' && isHexByte(s[j+1]) && isHexByte(s[j+2]) {
			n++
			j += 3
			gap := 0
			for j < len(s) && s[j] != '%' && gap < 3 && s[j] != ' ' && s[j] != '\n' {
				j++
				gap++
			}
		}
		if n >= 6 {
			out = append(out, s[i:j])
		}
		i = max(i, j-1)
	}
	return out
}

// readable reports whether b is UTF-8 text, mostly letters and spaces:
// what a model would read as words, not a hash or an image.
func readable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	letters, other := 0, 0
	for _, r := range string(b) {
		switch {
		case unicode.IsLetter(r) || r == ' ':
			letters++
		case unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r':
			return false
		default:
			other++
		}
	}
	return letters*10 >= (letters+other)*7 && strings.Contains(string(b), " ")
}

// clip is s cut to n bytes at a rune boundary, for a finding's trigger.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
