package events

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// MaxAttrLen is the longest attribute value kept whole. A longer value keeps
// its first TruncatedPrefix bytes and says its size and SHA-256.
const (
	MaxAttrLen      = 4 << 10
	TruncatedPrefix = 512
)

// MinSecretLen is the shortest value Register accepts: replacing every "ab"
// in every event would destroy the evidence and hide nothing.
const MinSecretLen = 4

// Redactor removes secrets from events before they leave the emitter. A
// removed value becomes [REDACTED:<why>:<hmac8>], where hmac8 is the first 8
// hex digits of HMAC-SHA256(key, value): equal secrets correlate across
// events without being readable. The key lives in a 0600 file outside the
// store, so the store alone cannot be used to test guesses.
type Redactor struct {
	key []byte

	mu       sync.RWMutex
	secrets  map[string]bool
	replacer *strings.Replacer
	folds    []fold       // the secrets' case-folded spellings, longest first
	shared   *SecretCache // nil: this process's secrets only

	// pulledFor are the requests whose events were redacted after a look
	// at the shared cache: one look per request, not per event.
	pulledMu  sync.Mutex
	pulledFor [pulledRing]ID
	pulledAt  int
}

// pulledRing is how many recent requests pulledFor remembers (the calls in
// flight at once, with room).
const pulledRing = 64

// fold is a secret's spelling matched whatever its case: the whole value,
// and each long run of letters and digits in it (what a tokenizer such as
// bm25's makes of it), ASCII-lowercased.
type fold struct {
	lower string
	mark  string
}

// minFoldRun is the shortest run of letters and digits of a secret that is
// redacted on its own: shorter ones would redact common words.
const minFoldRun = 8

// Share makes r register, before it redacts, every secret another process
// of the data dir put in c, and put every secret it registers there.
func (r *Redactor) Share(c *SecretCache) error {
	r.mu.Lock()
	r.shared = c
	mine := make([]string, 0, len(r.secrets))
	for s := range r.secrets {
		mine = append(mine, s)
	}
	r.mu.Unlock()
	if err := r.pull(); err != nil {
		return err
	}
	for _, s := range mine {
		if err := c.Add(s); err != nil {
			return err
		}
	}
	return nil
}

// pull registers what the shared cache gained since the last look.
func (r *Redactor) pull() error {
	r.mu.RLock()
	c := r.shared
	r.mu.RUnlock()
	if c == nil {
		return nil
	}
	vals, err := c.New()
	for _, v := range vals {
		r.register(v, false)
	}
	return err
}

// pullFor is pull, once per request: what another process shared before
// this request's first event reached r is registered (the process that
// resolves a secret shares it before the call that uses it goes on, and
// registers it in its own redactor at once). Events of no request always
// look.
func (r *Redactor) pullFor(req ID) {
	if !req.IsZero() {
		r.pulledMu.Lock()
		seen := slices.Contains(r.pulledFor[:], req)
		if !seen {
			r.pulledFor[r.pulledAt] = req
			r.pulledAt = (r.pulledAt + 1) % pulledRing
		}
		r.pulledMu.Unlock()
		if seen {
			return
		}
	}
	r.pull()
}

// Secrets reports how many values r redacts.
func (r *Redactor) Secrets() int {
	r.pull()
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.secrets)
}

// NewRedactor returns a redactor with the given HMAC key.
func NewRedactor(key []byte) *Redactor {
	return &Redactor{key: key, secrets: map[string]bool{}}
}

// LoadRedactor reads the key at path, creating a random one (0600) if the
// file does not exist.
func LoadRedactor(path string) (*Redactor, error) {
	key, err := LoadKeyFile(path, 32)
	if err != nil {
		return nil, fmt.Errorf("redaction: %w", err)
	}
	return NewRedactor(key), nil
}

// LoadSharedRedactor is LoadRedactor sharing secrets with the other
// processes of the data dir through the sealed cache at cachePath.
func LoadSharedRedactor(keyPath, cachePath string) (*Redactor, error) {
	key, err := LoadKeyFile(keyPath, 32)
	if err != nil {
		return nil, fmt.Errorf("redaction: %w", err)
	}
	c, err := openSecretCache(cachePath, key)
	if err != nil {
		return nil, err
	}
	r := NewRedactor(key)
	if err := r.Share(c); err != nil {
		return nil, fmt.Errorf("redaction: %w", err)
	}
	return r, nil
}

// Fingerprint returns the 8-hex-digit keyed HMAC of v.
func (r *Redactor) Fingerprint(v string) string {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(v))
	return hex.EncodeToString(m.Sum(nil))[:8]
}

func (r *Redactor) mark(why, v string) string {
	return "[REDACTED:" + why + ":" + r.Fingerprint(v) + "]"
}

// Register adds a value the secret broker resolved. From then on the value,
// and its base64 (any alignment, standard and URL alphabets), hex, URL and
// JSON-escaped forms, are redacted wherever they appear.
func (r *Redactor) Register(secret string) error {
	return r.register(secret, true)
}

func (r *Redactor) register(secret string, share bool) error {
	if len(secret) < MinSecretLen {
		return fmt.Errorf("redact: a secret must be at least %d bytes to be redacted safely", MinSecretLen)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secrets[secret] {
		return nil
	}
	r.secrets[secret] = true
	if share && r.shared != nil {
		// Before anything can carry it to another process: the bridge
		// registers a secret before it runs the tool that gets it.
		if err := r.shared.Add(secret); err != nil {
			return fmt.Errorf("redact: share with the data dir's other processes: %w", err)
		}
	}
	// Longest needles first: strings.Replacer prefers earlier pairs at the
	// same position, so a longer encoding wins over a shorter one inside it.
	type pair struct{ old, new string }
	var pairs []pair
	for s := range r.secrets {
		mark := r.mark("secret", s)
		for _, form := range encodedForms(s) {
			pairs = append(pairs, pair{form, mark})
		}
	}
	seen := map[string]bool{}
	var args []string
	slices.SortFunc(pairs, func(a, b pair) int {
		if c := cmp.Compare(len(b.old), len(a.old)); c != 0 {
			return c
		}
		return strings.Compare(a.old, b.old)
	})
	for _, p := range pairs {
		if p.old == "" || seen[p.old] {
			continue
		}
		seen[p.old] = true
		args = append(args, p.old, p.new)
	}
	r.replacer = strings.NewReplacer(args...)
	var folds []fold // a new slice: readers may hold the old one
	seenFold := map[string]bool{}
	for sec := range r.secrets {
		mark := r.mark("secret", sec)
		for _, f := range foldedForms(sec) {
			if !seenFold[f] {
				seenFold[f] = true
				folds = append(folds, fold{f, mark})
			}
		}
	}
	r.folds = folds
	slices.SortFunc(r.folds, func(a, b fold) int {
		if c := cmp.Compare(len(b.lower), len(a.lower)); c != 0 {
			return c
		}
		return strings.Compare(a.lower, b.lower)
	})
	return nil
}

// foldedForms are the spellings of s matched case-insensitively: s, and
// its runs of letters and digits of minFoldRun or more, mixing both, when
// s has other characters.
func foldedForms(s string) []string {
	out := []string{asciiLower(s)}
	runs := strings.FieldsFunc(s, func(c rune) bool { return !isAlnum(c) })
	if len(runs) > 1 || (len(runs) == 1 && runs[0] != s) {
		for _, r := range runs {
			// A run that is a word ("recording", "tracebridge") is not a
			// secret of its own; one mixing letters and digits is.
			if len(r) >= minFoldRun && strings.ContainsAny(r, "0123456789") && strings.ContainsFunc(r, func(c rune) bool { return c > '9' }) {
				out = append(out, asciiLower(r))
			}
		}
	}
	return out
}

func isAlnum(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c > 127
}

// asciiLower lowercases ASCII letters only: byte offsets stay those of s.
// A string without capitals is returned as it is (no copy).
func asciiLower(s string) string {
	i := strings.IndexFunc(s, func(c rune) bool { return c >= 'A' && c <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// scrubFolded replaces every case variant of a registered secret (and of
// its long alphanumeric runs) in v, longest first.
func scrubFolded(v string, folds []fold) string {
	lv := asciiLower(v)
	type span struct {
		start, end int
		mark       string
	}
	var spans []span
	taken := func(a, b int) bool {
		for _, s := range spans {
			if a < s.end && s.start < b {
				return true
			}
		}
		return false
	}
	for _, f := range folds {
		for from := 0; ; {
			i := strings.Index(lv[from:], f.lower)
			if i < 0 {
				break
			}
			a, b := from+i, from+i+len(f.lower)
			if !taken(a, b) {
				spans = append(spans, span{a, b, f.mark})
			}
			from = b
		}
	}
	if len(spans) == 0 {
		return v
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	var sb strings.Builder
	at := 0
	for _, s := range spans {
		sb.WriteString(v[at:s.start])
		sb.WriteString(s.mark)
		at = s.end
	}
	sb.WriteString(v[at:])
	return sb.String()
}

// Covers reports whether term is, whatever its case, a registered secret
// or a part of one (of MinSecretLen bytes or more): a tool that echoes
// terms of its input (bm25's matchedTerms) leaves such a term out.
func (r *Redactor) Covers(term string) bool {
	if len(term) < MinSecretLen {
		return false
	}
	r.pull()
	lt := asciiLower(term)
	r.mu.RLock()
	defer r.mu.RUnlock()
	for s := range r.secrets {
		if strings.Contains(asciiLower(s), lt) {
			return true
		}
	}
	return false
}

// encodedForms lists the spellings of s that Register redacts.
func encodedForms(s string) []string {
	forms := []string{s,
		hex.EncodeToString([]byte(s)), strings.ToUpper(hex.EncodeToString([]byte(s))),
		url.QueryEscape(s), url.PathEscape(s),
	}
	// JSON-escaped, both with Go's HTML escaping (& → \u0026) and without
	// it, as most other encoders write, once and twice (a JSON string
	// inside a JSON string, as tool arguments in a log line are).
	for _, once := range []string{jsonEscape(s, true), jsonEscape(s, false)} {
		forms = append(forms, once, jsonEscape(once, true), jsonEscape(once, false))
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		forms = append(forms, base64Cores(enc, []byte(s))...)
	}
	return forms
}

// jsonEscape is s as it appears inside a JSON string.
func jsonEscape(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if enc.Encode(s) != nil {
		return s
	}
	j := bytes.TrimSpace(b.Bytes())
	return string(j[1 : len(j)-1])
}

// base64Cores returns, for each of the three alignments s can have inside a
// longer base64 text, the characters that depend on s alone. Whatever
// surrounds s, one of them appears in the encoding.
func base64Cores(enc *base64.Encoding, s []byte) []string {
	var out []string
	for pad := 0; pad < 3; pad++ {
		buf := append(make([]byte, pad), s...)
		e := enc.WithPadding(base64.NoPadding).EncodeToString(buf)
		start := (pad*8 + 5) / 6  // chars touched by the padding bytes
		end := (len(buf) * 8) / 6 // chars fully determined by buf
		if end-start >= 4 {
			out = append(out, e[start:end])
		}
	}
	// The whole value encoded on its own, padding included.
	out = append(out, enc.EncodeToString(s))
	return out
}

// secretKey matches attribute keys whose values are secrets whatever they
// look like.
var secretKey = regexp.MustCompile(`(?i)(pass(word|wd)?|secret|token|api[-_]?key|authori[sz]ation|cookie|credential|private[-_]?key|session[-_]?key|access[-_]?key)`)

// secretKeys caches secretKey's verdict per attribute key: keys come from
// code, so there are few of them.
// The cache stops growing at maxCachedKeys, should keys ever come from
// outside.
var (
	secretKeys    sync.Map // string → bool
	cachedKeys    atomic.Int64
	maxCachedKeys int64 = 4096
)

func isSecretKey(k string) bool {
	if v, ok := secretKeys.Load(k); ok {
		return v.(bool)
	}
	m := secretKey.MatchString(k)
	if cachedKeys.Load() < maxCachedKeys {
		cachedKeys.Add(1)
		secretKeys.Store(k, m)
	}
	return m
}

// Redact rewrites e.Attrs in place: secret-like keys, known secret formats
// and registered secrets are replaced, then long values are truncated. The
// attributes are copied first, so the caller's are never changed.
func (r *Redactor) Redact(e *Event) { r.redact(e, truncate) }

// RedactWhole is Redact without the truncation, for an emitter that keeps
// long values whole in a payload store.
func (r *Redactor) RedactWhole(e *Event) { r.redact(e, func(v string) string { return v }) }

func (r *Redactor) redact(e *Event, cut func(string) string) {
	if len(e.Attrs) == 0 {
		return
	}
	r.pullFor(e.RequestID)
	out := make(Attrs, len(e.Attrs))
	for i, a := range e.Attrs {
		v := a.Value
		if v != "" && isSecretKey(a.Key) {
			v = r.mark("key", v)
		} else if v != "" {
			v = cut(r.scrub(v))
		}
		out[i] = Attr{a.Key, v}
	}
	e.Attrs = out
}

// Value returns v as it may be stored under key k.
func (r *Redactor) Value(k, v string) string {
	r.pull()
	return r.value(k, v)
}

// ValueFor is Value for what goes on request req's events: the shared
// cache is read once per request, as the emitter reads it for the
// request's events (pullFor), not once per value — a stat of the cache
// file each time cost 2% of a call through the bridge (issue 47).
func (r *Redactor) ValueFor(req ID, k, v string) string {
	r.pullFor(req)
	return r.value(k, v)
}

func (r *Redactor) value(k, v string) string {
	if v == "" {
		return v
	}
	if isSecretKey(k) {
		return r.mark("key", v)
	}
	return truncate(r.scrub(v))
}

// Scrub removes registered secrets and known secret shapes from a document
// kept whole (a review, a diff): Value without the truncation.
func (r *Redactor) Scrub(v string) string {
	r.pull()
	return r.scrub(v)
}

func (r *Redactor) scrub(v string) string {
	r.mu.RLock()
	rep, folds := r.replacer, r.folds
	r.mu.RUnlock()
	if rep != nil {
		v = rep.Replace(v)
	}
	if len(folds) > 0 {
		v = scrubFolded(v, folds)
	}
	hints := hintMask(v)
	for i, f := range secretFormats {
		if hints&(1<<i) != 0 && f.re.MatchString(v) {
			v = replaceFormat(v, f.re, func(m string) string { return r.mark(f.why, m) })
			hints = hintMask(v) // the marks are new text: the next formats look at it
		}
	}
	return v
}

// truncate shortens a value longer than MaxAttrLen, keeping its first
// TruncatedPrefix bytes (cut at a rune boundary) and its size and SHA-256.
func truncate(v string) string {
	if len(v) <= MaxAttrLen {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return fmt.Sprintf("%s…[TRUNCATED:size=%d:sha256=%x]", keptPrefix(v), len(v), sum)
}

// keptPrefix is what a cut value keeps: its first TruncatedPrefix bytes,
// cut at a rune boundary.
func keptPrefix(v string) string {
	cut := min(TruncatedPrefix, len(v))
	for cut > 0 && cut < len(v) && !isRuneStart(v[cut]) {
		cut--
	}
	return v[:cut]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func randomKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("events: crypto/rand failed: " + err.Error())
	}
	return k
}
