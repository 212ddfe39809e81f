package events

import (
	"regexp"
	"strings"
)

// secretFormats are well-known secret shapes, each with the reason that ends
// up in the marker.
// Each has hints: literal text one of which every match contains, tested
// before the regexp runs (most values contain none, and a Contains is ~50×
// cheaper than a regexp match).
// A format whose regexp has a group named v replaces only that group (the
// value, not the name before it).
var secretFormats = []struct {
	why   string
	hints []string
	re    *regexp.Regexp
}{
	{"aws-secret", []string{"ecret", "ECRET"}, regexp.MustCompile(`(?i)(?:aws_?secret_?access_?key|secret_?access_?key|aws_?secret(?:_?key)?)["']?\s*[:=]\s*["']?(?P<v>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`)},
	{"private-key", []string{"PRIVATE KEY-----"}, regexp.MustCompile(`-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END[A-Z ]*PRIVATE KEY-----|$)`)},
	{"jwt", []string{"eyJ"}, regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	{"aws-key", []string{"AKIA", "ASIA"}, regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"github-token", []string{"gh", "github_pat_"}, regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})\b`)},
	{"slack-token", []string{"xox"}, regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`)},
	{"api-key", []string{"sk-"}, regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`)},
	{"google-key", []string{"AIza"}, regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{"bearer", []string{"bearer", "Bearer", "BEARER"}, regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{12,}=*`)},
	// userinfo holds no quote, backslash or brace (RFC 3986 §3.2.1): the
	// match never runs from a URL across a JSON string's end to a later
	// "@" (`"iss":"http://h:1","email":"a@b"` is no password).
	{"url-credentials", []string{"://"}, regexp.MustCompile(`://[^/\s:@"'<>\\{}|^` + "`" + `]+:[^/\s@"<>\\{}|^` + "`" + `]+@`)},
}

func hinted(v string, hints []string) bool {
	for _, h := range hints {
		if strings.Contains(v, h) {
			return true
		}
	}
	return false
}

// hintsByFirst are the formats' hints by their first byte: hintMask's
// table.
var hintsByFirst = func() (t [256][]formatHint) {
	for i, f := range secretFormats {
		for _, h := range f.hints {
			t[h[0]] = append(t[h[0]], formatHint{h, i})
		}
	}
	return t
}()

type formatHint struct {
	hint   string
	format int
}

// onePassUpTo is the longest value hintMask reads in one pass; past it the
// vectorized Contains of each hint is faster than a loop over the bytes.
const onePassUpTo = 256

// hintMask says which secretFormats v holds a hint of (bit i: format i),
// as hinted would of each, in one pass over a short v: most values are
// short (ids, names, methods), and a Contains per hint — 17 of them —
// cost more than the pass.
func hintMask(v string) uint32 {
	var m uint32
	if len(v) > onePassUpTo {
		for i, f := range secretFormats {
			if hinted(v, f.hints) {
				m |= 1 << i
			}
		}
		return m
	}
	for i := 0; i < len(v); i++ {
		for _, h := range hintsByFirst[v[i]] {
			if m&(1<<h.format) == 0 && strings.HasPrefix(v[i:], h.hint) {
				m |= 1 << h.format
			}
		}
	}
	return m
}

// replaceFormat replaces what re matches in v with mark's answer: the
// group named v when re has one, else the whole match.
func replaceFormat(v string, re *regexp.Regexp, mark func(string) string) string {
	g := re.SubexpIndex("v")
	if g < 0 {
		return re.ReplaceAllStringFunc(v, mark)
	}
	var b strings.Builder
	at := 0
	for _, m := range re.FindAllStringSubmatchIndex(v, -1) {
		if m[2*g] < 0 {
			continue
		}
		b.WriteString(v[at:m[2*g]])
		b.WriteString(mark(v[m[2*g]:m[2*g+1]]))
		at = m[2*g+1]
	}
	b.WriteString(v[at:])
	return b.String()
}

// Found is the secrets Scrub would replace in v, as they are written
// there, each with why (its format, or "secret" for a registered one): what
// the guard remembers of a result to know the same value on its way to
// another server. It reads the secrets this process knows without looking
// at the shared cache again (the request's first event did).
func (r *Redactor) Found(v string) (whys, values []string) {
	r.mu.RLock() // what this process knows: a request's events pulled the shared cache at its first
	for s := range r.secrets {
		if strings.Contains(v, s) {
			whys, values = append(whys, "secret"), append(values, s)
		}
	}
	r.mu.RUnlock()
	hints := hintMask(v)
	for i, f := range secretFormats {
		if hints&(1<<i) == 0 {
			continue
		}
		g := max(f.re.SubexpIndex("v"), 0)
		for _, m := range f.re.FindAllStringSubmatch(v, 16) {
			if m[g] != "" {
				whys, values = append(whys, f.why), append(values, m[g])
			}
		}
	}
	return whys, values
}
