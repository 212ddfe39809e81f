package guard

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"regexp"
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

var spaces = regexp.MustCompile(`\s+`)

// Fold is s as a model reads it, for matching: NFKC (fullwidth and
// mathematical letters become plain), confusable letters folded to Latin,
// invisible characters removed, lower case, runs of white space one space.
func Fold(s string) string {
	if !isASCII(s) {
		_, s = Invisible(s)
		s = confusables.Replace(norm.NFKC.String(s))
	}
	return spaces.ReplaceAllString(strings.ToLower(s), " ")
}

var (
	base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{24,}={0,2}`)
	hexRun    = regexp.MustCompile(`(?:[0-9a-fA-F]{2}){12,}`)
	escRun    = regexp.MustCompile(`(?:%[0-9A-Fa-f]{2}[^\s%]{0,3}){6,}`)
)

// maxDecoded bounds what the decode pass reads of one text.
const maxDecoded = 64 << 10

// Decoded is the text hidden in s as base64, hex or URL escapes: each run
// that decodes to readable text, decoded (one level). Empty when none.
func Decoded(s string) []string {
	var out []string
	budget := maxDecoded
	add := func(b []byte) {
		if len(b) >= 8 && readable(b) && budget > 0 {
			budget -= len(b)
			out = append(out, string(b))
		}
	}
	if strings.ContainsAny(s, "0123456789") || strings.ContainsAny(s, "+/=") || len(s) >= 24 {
		for _, m := range base64Run.FindAllString(s, 32) {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
				if b, err := enc.DecodeString(m); err == nil {
					add(b)
					break
				}
			}
		}
	}
	for _, m := range hexRun.FindAllString(s, 32) {
		if b, err := hex.DecodeString(m); err == nil {
			add(b)
		}
	}
	if strings.Contains(s, "%") {
		for _, m := range escRun.FindAllString(s, 32) {
			if u, err := url.QueryUnescape(m); err == nil {
				add([]byte(u))
			}
		}
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
